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

/// W-31: the spec's hosts. Method or path rules need a TLS-intercepting proxy, which this
/// one is not (W-34): SandboxEgressNotEnforced naming the kind.
std::vector<std::string> allow_hosts(const SandboxSpec& spec);

/// W-32 (5): HTTP_PROXY / HTTPS_PROXY (both cases) pointing at `N-proxy:3128`, resolved by
/// the engine's DNS on N-net.
LabelList proxy_env(const std::string& container);

}  // namespace maf::sandbox::wslc::detail
