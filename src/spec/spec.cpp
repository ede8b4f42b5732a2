#include "maf/sandbox/spec.hpp"

#include <algorithm>
#include <cctype>

namespace maf::sandbox {
namespace {

bool same_host(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

// CRED-1, CRED-2: each credential bound to hosts this spec allows, names and placeholder
// variables unique, and the capability that gates the whole feature required.
void SandboxSpec::check_attached_identity() {
  const auto& creds = f_.attached_identity;
  for (std::size_t i = 0; i < creds.size(); ++i) {
    const auto& c = creds[i];
    const std::string where = "SandboxSpec for kind '" + f_.kind + "': attached_identity credential '" + c.name() + "'";
    for (std::size_t j = 0; j < i; ++j) {
      if (creds[j].name() == c.name()) throw ValueError(where + " is named twice");
      if (creds[j].env() == c.env())
        throw ValueError(where + " puts its placeholder in env '" + c.env() + "', which credential '" +
                         creds[j].name() + "' uses already");
    }
    for (const auto& host : c.hosts()) {
      const bool allowed = std::any_of(f_.egress_allow.begin(), f_.egress_allow.end(),
                                       [&](const EgressEntry& e) { return same_host(egress_entry_host(e), host); });
      if (!allowed)
        throw ValueError(where + " is bound to host '" + host +
                         "', which is not an egress_allow host of the spec (egress '" +
                         std::string(to_string(f_.egress)) + "'); a credential goes only where egress may");
    }
  }
  if (!creds.empty()) f_.requires_capabilities.insert(Capability::AttachedIdentity);
}

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
  check_attached_identity();
  // SNAP-2: asking a snapshot fidelity asks the operations that keep one.
  if (f_.min_snapshot_fidelity) f_.requires_capabilities.insert(Capability::Snapshot);
  if (f_.work_dir && f_.work_dir->empty())
    throw ValueError("SandboxSpec for kind '" + f_.kind + "': work_dir is empty; omit it to let the backend choose");
}

}  // namespace maf::sandbox
