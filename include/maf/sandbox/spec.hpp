#pragma once
/// @file spec.hpp
/// SandboxSpec (C-18…C-20): everything a workload asks of a sandbox.
///
/// Built once from `SandboxSpec::Fields` (C++20 designated initialisers), validated and
/// canonicalised in the constructor (C-18), immutable afterwards (C-20):
///
/// @code
///   SandboxSpec spec({.kind = "python", .requires_capabilities = {Capability::Exec}});
/// @endcode
///
/// `work_dir` follows the later seeds ([later], C-53): absent means "the backend chooses its
/// storage base" (`/maf-sandbox/work` on the shipped backends). Where the 0.21 spec and the
/// later seeds disagree, the later seed's behaviour is implemented.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/attached_identity.hpp"
#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/declared_output.hpp"
#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/host_tool_aggregate.hpp"
#include "maf/sandbox/isolation.hpp"
#include "maf/sandbox/limits.hpp"
#include "maf/sandbox/os_family.hpp"
#include "maf/sandbox/resource_limits.hpp"
#include "maf/sandbox/snapshot.hpp"

namespace maf::sandbox {

/// The base shipped backends use when a spec leaves `work_dir` absent.
inline constexpr const char* kDefaultWorkDir = "/maf-sandbox/work";

class SandboxSpec {
public:
  /// The raw request; every field named as in docs/cli.md "The spec file" (`requires` is a C++ keyword,
  /// hence `requires_capabilities`).
  struct Fields {
    std::string kind{};
    std::optional<std::string> image{};
    std::optional<std::string> image_id{};
    std::vector<EgressEntry> egress_allow{};
    std::optional<std::string> work_dir{};
    std::map<std::string, std::string> labels{};
    CapabilitySet requires_capabilities = kDefaultCapabilities;
    std::optional<Isolation> min_isolation{};
    std::vector<DeclaredOutput> declared_outputs{};
    TransferLimits files_in = kDefaultTransferLimits;
    TransferLimits files_out = kDefaultTransferLimits;
    bool outputs_named_at_call_time = false;
    Egress egress = Egress::Closed;
    std::optional<OsFamily> requires_os_family{};
    IsolationScope isolation_scope = IsolationScope::Conversation;
    /// The sealed aggregate of the registry the workload's guest code may call
    /// (HostToolRegistry::aggregate, docs/host-tools.md HT-R5). Requires HOST_TOOLS.
    std::optional<HostToolAggregate> host_tools{};
    /// Memory, CPUs, processes, TTL and idle timeout (docs/limits.md); unset bounds ask
    /// nothing. Validated by ResourceLimits itself (LIM-1).
    ResourceLimits resources{};
    /// Credentials the egress proxy brokers toward bound hosts (attached_identity.hpp,
    /// docs/policy.md CRED-1…CRED-5); never their values. Requires ATTACHED_IDENTITY.
    std::vector<AttachedCredential> attached_identity{};
    /// The least a snapshot of this sandbox must keep (docs/snapshots.md SNAP-2); absent asks
    /// nothing. Asking one adds SNAPSHOT to the requirements; a backend declaring a lower
    /// rung, or none, is refused (SandboxSnapshotFidelityNotSupported), never substituted.
    std::optional<SnapshotFidelity> min_snapshot_fidelity{};
  };

  /// Validates in the order of C-18 and throws ValueError naming the offending value:
  /// an empty kind; an egress_allow entry that is not a host (egress_host_problem, naming
  /// the entry); egress_allow without ALLOWLIST (naming the hosts and the mode);
  /// conflicting or malformed egress rules (C-8); host_tools without HOST_TOOLS (HT-R5); an
  /// attached credential bound to a host that is not an egress_allow host, or two credentials
  /// of one name or one placeholder variable (CRED-2). Adds EGRESS_METHODS to the requirements
  /// when any rule is method-scoped (C-9), ATTACHED_IDENTITY when a credential is named (CRED-1).
  explicit SandboxSpec(Fields fields);

  const std::string& kind() const noexcept { return f_.kind; }
  const std::optional<std::string>& image() const noexcept { return f_.image; }
  const std::optional<std::string>& image_id() const noexcept { return f_.image_id; }
  /// Canonical form (C-8).
  const std::vector<EgressEntry>& egress_allow() const noexcept { return f_.egress_allow; }
  const std::optional<std::string>& work_dir() const noexcept { return f_.work_dir; }
  /// The working directory output collection uses: `work_dir`, or "." (the backend's base).
  std::string effective_work_dir() const { return f_.work_dir.value_or("."); }
  const std::map<std::string, std::string>& labels() const noexcept { return f_.labels; }
  CapabilitySet requires_capabilities() const noexcept { return f_.requires_capabilities; }
  std::optional<Isolation> min_isolation() const noexcept { return f_.min_isolation; }
  const std::vector<DeclaredOutput>& declared_outputs() const noexcept { return f_.declared_outputs; }
  const TransferLimits& files_in() const noexcept { return f_.files_in; }
  const TransferLimits& files_out() const noexcept { return f_.files_out; }
  bool outputs_named_at_call_time() const noexcept { return f_.outputs_named_at_call_time; }
  Egress egress() const noexcept { return f_.egress; }
  std::optional<OsFamily> requires_os_family() const noexcept { return f_.requires_os_family; }
  IsolationScope isolation_scope() const noexcept { return f_.isolation_scope; }
  const std::optional<HostToolAggregate>& host_tools() const noexcept { return f_.host_tools; }
  /// The resource bounds asked (docs/limits.md); the router refuses a backend that does not
  /// enforce each one set (LIM-3).
  const ResourceLimits& resources() const noexcept { return f_.resources; }
  /// Whose authority the workload's host tools exercise (HT-R5): what the router's
  /// `denied_identities` checks (C-65 #2). Empty without host tools.
  IdentitySet identities() const noexcept { return f_.host_tools ? f_.host_tools->identities : IdentitySet{}; }

  /// The credentials the workload may use through the proxy (CRED-1); each bound only to
  /// hosts of egress_allow (CRED-2).
  const std::vector<AttachedCredential>& attached_identity() const noexcept { return f_.attached_identity; }
  /// The snapshot fidelity asked (docs/snapshots.md SNAP-2); absent = none.
  std::optional<SnapshotFidelity> min_snapshot_fidelity() const noexcept { return f_.min_snapshot_fidelity; }

  /// The validated fields, e.g. to derive a modified spec (which is validated again).
  const Fields& fields() const noexcept { return f_; }

private:
  void check_attached_identity();
  Fields f_;
};

}  // namespace maf::sandbox
