#pragma once
/// @file effective_state.hpp
/// effective_state() (docs/observability.md "Effective state"): the
/// configuration a router serves a workload with, as one JSON object a host can persist
/// beside its session — what a later reader needs to know which boundary, egress, limits
/// and cleanup a conversation ran under. Configuration only: never a payload, an argument,
/// a file's content or a program's output.

#include <string>
#include <string_view>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

/// The record, compact JSON:
/// `{"version": 1, "backend", "isolation", "floor", "selection", "kind", "egress",
///   "egress_allow": [host | {"host", "methods"}] (as spec_to_json spells it), "isolation_scope", "min_isolation_scope",
///   "requires": [...], "limits": {"files_in": {max_bytes_per_file, max_total_bytes,
///   max_files}, "files_out": {…}}, "backend_limits": {…}, "resources": {the spec's bounds,
///   as spec_to_json spells them; {} when none}, "backend_resource_bounds": [what the backend
///   enforces], "cleanup_rung"}`.
/// Runs the router's checks (select): a spec the router would refuse throws that refusal,
/// since nothing would be served. `cleanup_rung` is the rung the call ends in: "reclaim",
/// "reset" or "dispose" (ValueError naming anything else).
std::string effective_state(const SandboxRouter& router, const SandboxSpec& spec,
                            std::string_view cleanup_rung = "dispose");

}  // namespace maf::sandbox
