#pragma once
// JSON and one-line renderings of the core's values for the command's output.

#include <string>

#include <nlohmann/json.hpp>

#include "maf/sandbox/declarations.hpp"
#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/key.hpp"

namespace maf::sandbox::cli {

/// {"max_bytes_per_file", "max_total_bytes", "max_files"}
nlohmann::json limits_json(const TransferLimits& limits);

/// {"capabilities", "egress_modes", "os_families", "isolation_scopes", "limits": {"files_in",
/// "files_out"}, "egress_method_tokens"}; sets as arrays sorted by value.
nlohmann::json declarations_json(const BackendDeclarations& declarations);

/// Indented lines, one per axis, for people; silence spelled out ("nothing", "no answer").
std::string declarations_text(const BackendDeclarations& declarations, const std::string& indent);

/// {"disposed": N, "undisposed": {"code", "detail"} | null}
nlohmann::json purge_json(const ScopePurge& purge);

/// {"scope", "thread_id", "agent_id", "call_id"}
nlohmann::json key_json(const SandboxKey& key);

/// A set's canonical values as a JSON array, sorted.
template <class E>
nlohmann::json enum_set_json(const EnumSet<E>& set) {
  nlohmann::json out = nlohmann::json::array();
  for (E member : set.sorted()) out.push_back(std::string(enum_value(member)));
  return out;
}

}  // namespace maf::sandbox::cli
