#pragma once
// What a backend's declarations cannot serve of a spec (SNAP-2, C-65 #4…#8, C-68, LIM-3), written
// once: the router runs it when it selects a backend, and SandboxBackend::acquire runs it
// again (ACQ-1) so a direct caller — a host that skips the router, a test — is refused
// exactly as the router would refuse, never served something the backend does not declare.
// The check allocates nothing (tests/unit/test_router_allocations.cpp); a message is built
// only by refuse_unserved, on the throw path.

#include <optional>
#include <string>

#include "maf/sandbox/declarations.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox::detail {

/// Which declaration refused, in the router's order.
enum class Unserved { Capability, OsFamily, FilesInLimits, FilesOutLimits, Egress, IsolationScope, EgressMethod, ResourceBound, CredentialLifetime,
                      SnapshotFidelity };

/// The first declaration of `d` that `spec` asks beyond, or none. `min_scope` is the host's
/// isolation-scope floor (the router's option; IsolationScope's weakest for a direct acquire).
std::optional<Unserved> first_unserved(const BackendDeclarations& d, const SandboxSpec& spec, IsolationScope min_scope);

/// Throws the refusal's one error type, its message naming the backend, the workload kind and
/// the offending value.
[[noreturn]] void refuse_unserved(Unserved refusal, const std::string& backend_name, const BackendDeclarations& d,
                                  const SandboxSpec& spec, IsolationScope min_scope);

}  // namespace maf::sandbox::detail
