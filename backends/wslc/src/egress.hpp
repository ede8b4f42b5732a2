#pragma once
// What acquire and the egress topology share (wslc.md W-11, W-31, W-32): the labels every
// workload, proxy and network carries, the allowlist hosts and the workload's proxy
// environment.

#include <string>
#include <vector>

#include "maf/sandbox/key.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/wslc/commands.hpp"

namespace maf::sandbox::wslc::detail {

/// W-11: scope, thread, agent, kind, call (when non-empty), then `maf-sandbox.label.<k>`.
LabelList resource_labels(const SandboxKey& key, const SandboxSpec& spec);

/// W-31, W-44: the allowlist as the sandbox's name folds it (C-55): each host, and each
/// method/path rule with its methods and paths (egress_proxy::entry_identity), so a changed
/// rule is another container.
std::vector<std::string> allow_identities(const SandboxSpec& spec);

/// W-32 (5), W-44: the workload's environment behind `N-proxy:3128` (resolved by the engine's
/// DNS on N-net): the four proxy variables and, with `terminating`, the CA variables
/// (egress_proxy::guest_proxy_env).
LabelList proxy_env(const std::string& container, bool terminating);

}  // namespace maf::sandbox::wslc::detail
