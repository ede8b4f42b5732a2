#include "render.hpp"

#include <fmt/core.h>

namespace maf::sandbox::cli {

nlohmann::json limits_json(const TransferLimits& limits) {
  return {{"max_bytes_per_file", limits.max_bytes_per_file()},
          {"max_total_bytes", limits.max_total_bytes()},
          {"max_files", limits.max_files()}};
}

nlohmann::json declarations_json(const BackendDeclarations& d) {
  nlohmann::json j = {{"capabilities", enum_set_json(d.capabilities)},
                      {"egress_modes", enum_set_json(d.egress_modes)},
                      {"os_families", enum_set_json(d.os_families)},
                      {"isolation_scopes", enum_set_json(d.effective_isolation_scopes())},
                      {"limits", {{"files_in", limits_json(d.limits.files_in)},
                                  {"files_out", limits_json(d.limits.files_out)}}}};
  j["egress_method_tokens"] = d.egress_method_tokens ? nlohmann::json(*d.egress_method_tokens) : nlohmann::json();
  j["resource_bounds"] = enum_set_json(d.resource_bounds);
  // Issue 49: the one rung its snapshots keep; null is silence (keeps none, SNAP-2).
  j["snapshot_fidelity"] =
      d.snapshot_fidelity ? nlohmann::json(std::string(to_string(*d.snapshot_fidelity))) : nlohmann::json();
  return j;
}

std::string declarations_text(const BackendDeclarations& d, const std::string& indent) {
  std::string out;
  out += fmt::format("{}capabilities:     {}\n", indent, d.capabilities.to_string("nothing"));
  // Silence on egress enforces nothing (C-5; docs/policy.md "Silence, per axis"): say so rather than print nothing.
  out += fmt::format("{}egress modes:     {}\n", indent, d.egress_modes.to_string("nothing (refuses every spec)"));
  out += fmt::format("{}os families:      {}\n", indent, d.os_families.to_string("no answer"));
  out += fmt::format("{}isolation scopes: {}\n", indent, d.effective_isolation_scopes().to_string());
  out += fmt::format("{}limits files_in:  {}\n", indent, to_string(d.limits.files_in));
  out += fmt::format("{}limits files_out: {}\n", indent, to_string(d.limits.files_out));
  // Silence enforces no bound (docs/limits.md LIM-3): say so.
  out += fmt::format("{}resource bounds:  {}\n", indent, d.resource_bounds.to_string("none (refuses a spec asking one)"));
  // Silence keeps no snapshot (docs/snapshots.md SNAP-2): say so.
  out += fmt::format("{}snapshots keep:   {}\n", indent,
                     d.snapshot_fidelity ? std::string(to_string(*d.snapshot_fidelity)) + " (" +
                                               snapshot_fidelity_ladder_text() + ")"
                                         : std::string("nothing (refuses a spec asking a fidelity)"));
  if (d.egress_method_tokens) {
    std::string tokens;
    for (const auto& t : *d.egress_method_tokens) tokens += (tokens.empty() ? "" : ", ") + t;
    out += fmt::format("{}method tokens:    {}\n", indent, tokens.empty() ? "none" : tokens);
  }
  return out;
}

nlohmann::json purge_json(const ScopePurge& purge) {
  nlohmann::json j = {{"disposed", purge.disposed}};
  j["undisposed"] = purge.undisposed
                        ? nlohmann::json{{"code", purge.undisposed->code}, {"detail", purge.undisposed->detail}}
                        : nlohmann::json();
  return j;
}

nlohmann::json key_json(const SandboxKey& key) {
  return {{"scope", key.scope}, {"thread_id", key.thread_id}, {"agent_id", key.agent_id}, {"call_id", key.call_id}};
}

}  // namespace maf::sandbox::cli
