#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

SandboxSpec::SandboxSpec(Fields fields) : f_(std::move(fields)) {
  if (f_.kind.empty()) throw ValueError("SandboxSpec.kind must be a non-empty workload name");
  for (const auto& e : f_.egress_allow)
    if (auto problem = egress_host_problem(egress_entry_host(e)))
      throw ValueError("SandboxSpec for kind '" + f_.kind + "': egress_allow entry '" + egress_entry_host(e) +
                       "' is not a host name, wildcard name or IP literal: " + *problem);
  if (!f_.egress_allow.empty() && f_.egress != Egress::Allowlist) {
    std::string hosts;
    for (const auto& e : f_.egress_allow) {
      if (!hosts.empty()) hosts += ", ";
      hosts += egress_entry_host(e);
    }
    throw ValueError("SandboxSpec for kind '" + f_.kind + "' lists egress_allow hosts [" + hosts +
                     "] but its egress mode is '" + std::string(to_string(f_.egress)) +
                     "'; hosts are only meaningful with egress 'allowlist'");
  }
  f_.egress_allow = canonicalize_egress_allow(std::move(f_.egress_allow));
  // C-9/C-10: a method rule requires egress_methods, a path rule egress_paths.
  for (const auto& e : f_.egress_allow)
    if (const auto* rule = std::get_if<EgressRule>(&e)) {
      if (rule->methods()) f_.requires_capabilities.insert(Capability::EgressMethods);
      if (rule->paths()) f_.requires_capabilities.insert(Capability::EgressPaths);
    }
  // HT-R5: the aggregate of a host-tool registry means the workload calls host tools, so it
  // requires HOST_TOOLS — added like EGRESS_METHODS (C-9): a requirement only strengthens.
  if (f_.host_tools) f_.requires_capabilities.insert(Capability::HostTools);
  // SNAP-2: asking a snapshot fidelity asks the operations that keep one.
  if (f_.min_snapshot_fidelity) f_.requires_capabilities.insert(Capability::Snapshot);
  if (f_.work_dir && f_.work_dir->empty())
    throw ValueError("SandboxSpec for kind '" + f_.kind + "': work_dir is empty; omit it to let the backend choose");
}

}  // namespace maf::sandbox
