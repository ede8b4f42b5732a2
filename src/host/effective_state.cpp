// effective_state (effective_state.hpp): the served configuration as JSON.
#include "maf/sandbox/effective_state.hpp"

#include <nlohmann/json.hpp>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/spec_json.hpp"

namespace maf::sandbox {
namespace {

using nlohmann::json;

json limits_json(const TransferLimits& l) {
  return {{"max_bytes_per_file", l.max_bytes_per_file()},
          {"max_total_bytes", l.max_total_bytes()},
          {"max_files", l.max_files()}};
}

json capabilities_json(const CapabilitySet& set) {
  json names = json::array();
  for (auto c : set.sorted()) names.push_back(to_string(c));  // sorted by value (docs/policy.md, Conventions)
  return names;
}

}  // namespace

std::string effective_state(const SandboxRouter& router, const SandboxSpec& spec, std::string_view cleanup_rung) {
  if (cleanup_rung != "reclaim" && cleanup_rung != "reset" && cleanup_rung != "dispose")
    throw ValueError("effective_state: cleanup rung '" + std::string(cleanup_rung) +
                     "' is not one of reclaim, reset, dispose");
  const auto backend = router.select(spec);  // the checks: a refused spec is served nothing
  const RouterOptions& o = router.options();
  // The spec file's own spelling of the allowlist (spec_json.hpp), so the two never differ.
  json as_file = spec_to_json(spec);
  json allow = as_file["egress_allow"];
  json resources = as_file.contains("resources") ? as_file["resources"] : json::object();
  json bounds = json::array();
  for (auto b : backend->declarations().resource_bounds.sorted()) bounds.push_back(to_string(b));
  const auto& declared = backend->declarations().limits;
  const json record = {
      {"version", 1},
      {"backend", backend->name()},
      {"isolation", backend->isolation()},
      {"floor", to_string(o.min_isolation)},
      {"selection", o.selection == Selection::Fixed ? "fixed" : "per_spec"},
      {"kind", spec.kind()},
      {"egress", to_string(spec.egress())},
      {"egress_allow", std::move(allow)},
      {"isolation_scope", to_string(spec.isolation_scope())},
      {"min_isolation_scope", to_string(o.min_isolation_scope)},
      {"requires", capabilities_json(spec.requires_capabilities())},
      {"limits", {{"files_in", limits_json(spec.files_in())}, {"files_out", limits_json(spec.files_out())}}},
      {"backend_limits", {{"files_in", limits_json(declared.files_in)}, {"files_out", limits_json(declared.files_out)}}},
      {"resources", std::move(resources)},
      {"backend_resource_bounds", std::move(bounds)},
      {"cleanup_rung", cleanup_rung},
  };
  return record.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace maf::sandbox
