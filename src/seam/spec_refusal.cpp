// The declaration checks of spec_refusal.hpp: moved out of the router so the router and
// SandboxBackend::acquire (ACQ-1) refuse with one code path and one message per refusal.
#include "seam/spec_refusal.hpp"

#include <variant>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::detail {

std::optional<Unserved> first_unserved(const BackendDeclarations& d, const SandboxSpec& spec, IsolationScope min_scope) {
  // SNAP-2 (docs/snapshots.md), first: the fidelity floor sits beside the isolation floor (#3),
  // so a spec asking more than the backend keeps is told about the fidelity, not about the
  // SNAPSHOT capability the fidelity implies.
  if (const auto asked = spec.min_snapshot_fidelity();
      asked && !(d.snapshot_fidelity && meets_fidelity(*d.snapshot_fidelity, *asked)))
    return Unserved::SnapshotFidelity;
  // #4 capabilities, #5 OS family
  if (!spec.requires_capabilities().subset_of(d.capabilities)) return Unserved::Capability;
  if (const auto family = spec.requires_os_family(); family && !d.os_families.contains(*family))
    return Unserved::OsFamily;
  // #6 is unreachable in C++: `limits` is typed SandboxLimits, so it is always readable.
  // #7 transfer ceilings, in then out
  if (!spec.files_in().within(d.limits.files_in)) return Unserved::FilesInLimits;
  if (!spec.files_out().within(d.limits.files_out)) return Unserved::FilesOutLimits;
  // #8 egress, by membership only (C-67)
  if (!d.egress_modes.contains(spec.egress())) return Unserved::Egress;
  // C-68 (positions [gap], after #8): isolation scope, then method-rule fit.
  if (!d.effective_isolation_scopes().contains(stricter(min_scope, spec.isolation_scope())))
    return Unserved::IsolationScope;
  if (d.egress_method_tokens) {
    for (const auto& entry : spec.egress_allow()) {
      const auto* rule = std::get_if<EgressRule>(&entry);
      if (!rule || !rule->methods()) continue;
      for (const auto& m : *rule->methods())
        if (!d.egress_method_tokens->count(m)) return Unserved::EgressMethod;
    }
  }
  // LIM-3 (docs/limits.md), last: every resource bound the spec asks is one the backend enforces.
  if (!spec.resources().asked().subset_of(d.resource_bounds)) return Unserved::ResourceBound;
  // CRED-3, after LIM-3: a per-call credential needs a backend that swaps values live.
  if (!d.per_call_credentials)
    for (const auto& credential : spec.attached_identity())
      if (credential.lifetime() == CredentialLifetime::Call) return Unserved::CredentialLifetime;
  return std::nullopt;
}

void refuse_unserved(Unserved refusal, const std::string& backend_name, const BackendDeclarations& d,
                     const SandboxSpec& spec, IsolationScope min_scope) {
  const std::string& kind = spec.kind();
  switch (refusal) {
    case Unserved::Capability:
      throw SandboxCapabilityNotSupported("backend '" + backend_name + "' does not support " +
                                          spec.requires_capabilities().difference(d.capabilities).to_string() +
                                          ", required by workload kind '" + kind +
                                          "' (it declares: " + d.capabilities.to_string("nothing") + ")");
    case Unserved::OsFamily:
      throw SandboxOsFamilyNotSupported(
          "backend '" + backend_name + "' serves " +
          (d.os_families.empty() ? std::string("no guest whose shape it states")
                                 : "guests of family " + d.os_families.to_string()) +
          ", but workload kind '" + kind + "' requires os family '" +
          std::string(to_string(*spec.requires_os_family())) + "'");
    case Unserved::FilesInLimits:
      throw SandboxTransferLimitsNotPermitted("workload kind '" + kind + "' asks files_in limits (" +
                                              to_string(spec.files_in()) + ") above what backend '" + backend_name +
                                              "' permits (" + to_string(d.limits.files_in) + ")");
    case Unserved::FilesOutLimits:
      throw SandboxTransferLimitsNotPermitted("workload kind '" + kind + "' asks files_out limits (" +
                                              to_string(spec.files_out()) + ") above what backend '" + backend_name +
                                              "' permits (" + to_string(d.limits.files_out) + ")");
    case Unserved::Egress:
      throw SandboxEgressNotEnforced("backend '" + backend_name + "' cannot enforce egress '" +
                                     std::string(to_string(spec.egress())) + "' for workload kind '" + kind +
                                     "'; it enforces: " + d.egress_modes.to_string("nothing"));
    case Unserved::IsolationScope: {
      const IsolationScope scope = stricter(min_scope, spec.isolation_scope());
      throw SandboxCapabilityNotSupported("backend '" + backend_name + "' does not serve isolation scope '" +
                                          std::string(to_string(scope)) + "' required for workload kind '" + kind +
                                          "' (it serves: " + d.effective_isolation_scopes().to_string() + ")");
    }
    case Unserved::EgressMethod:
      for (const auto& entry : spec.egress_allow()) {
        const auto* rule = std::get_if<EgressRule>(&entry);
        if (!rule || !rule->methods()) continue;
        for (const auto& m : *rule->methods())
          if (!d.egress_method_tokens->count(m))
            throw SandboxCapabilityNotSupported("backend '" + backend_name + "' cannot hold egress method '" + m +
                                                "' (host '" + rule->host() + "') for workload kind '" + kind + "'");
      }
      break;
    case Unserved::ResourceBound:
      refuse_unenforced_bounds(backend_name, d, spec);
      break;
    case Unserved::CredentialLifetime:
      for (const auto& credential : spec.attached_identity())
        if (credential.lifetime() == CredentialLifetime::Call)
          throw SandboxCapabilityNotSupported("backend '" + backend_name + "' cannot serve credential '" +
                                              credential.name() + "' of lifetime 'call' for workload kind '" + kind +
                                              "': it holds a value for the sandbox's life only");
      break;
    case Unserved::SnapshotFidelity: {
      const std::string asked(to_string(*spec.min_snapshot_fidelity()));
      const std::string declared = d.snapshot_fidelity ? std::string(to_string(*d.snapshot_fidelity)) : "none";
      throw SandboxSnapshotFidelityNotSupported(
          "workload kind '" + kind + "' requires snapshots of at least '" + asked + "' fidelity, but backend '" +
              backend_name + "' " +
              (d.snapshot_fidelity ? "declares '" + declared + "'" : std::string("keeps no snapshot")) +
              " (ladder, least first: " + snapshot_fidelity_ladder_text() + ")",
          asked, declared);
    }
  }
  // Unreachable while first_unserved and this agree; a loud error beats a silent pass.
  throw RuntimeError("refusal " + std::to_string(static_cast<int>(refusal)) + " has no message for backend '" +
                     backend_name + "'");
}

}  // namespace maf::sandbox::detail
