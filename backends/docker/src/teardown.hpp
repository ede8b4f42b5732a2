#pragma once
// The one teardown plan of a Docker sandbox (D-27): the drained proxy, then the workload,
// then the network — attached endpoints block a network's removal. Every path that ends a
// sandbox runs it: dispose by key and by instance, the scope purge, reap (by age and by ttl),
// a ttl expiry at acquire and an exec's abandon (EXE-2). What differs between them is only
// how each part is named (a dispose by name, a dispose by instance and a reap by the IDs they
// re-validated) and what the caller does with the report.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/transport.hpp"
#include "maf/sandbox/key.hpp"

namespace maf::sandbox::docker::detail {

/// One part of a sandbox to remove: `target` is what the engine is asked to remove (a name
/// or an ID), `label` how messages name it. An empty target: the sandbox has no such part.
struct TeardownPart {
  std::string target;
  std::string label;
};

/// A sandbox's three parts, in the order D-27 removes them.
struct TeardownPlan {
  TeardownPart proxy, workload, network;
  /// The plan of the sandbox named `container`: every part by its name.
  static TeardownPlan by_name(const std::string& container);
};

/// What a teardown did. `failure` is set when the proxy or the workload was kept by the
/// engine (the parts after it stay, so a later teardown finds them) or the engine could not
/// be asked; the network's refusal never stops anything and is reported apart.
struct TeardownReport {
  bool proxy_removed = false, workload_removed = false, network_removed = false;
  std::optional<DisposalFailure> failure;
  std::optional<std::string> network_kept;  ///< the engine's words when it kept the network
};

/// Runs `plan`: the proxy drained (its decisions reach the observers, attributed to `caller`
/// where its label is missing) and removed, the workload, then the network. A proxy is tried
/// whatever the current config says: a sandbox another configuration created is still
/// reclaimed. Never throws for the engine's answers (cancellation propagates).
boost::asio::awaitable<TeardownReport> run_teardown(DockerTransport& transport, const DockerConfig& config,
                                                    TeardownPlan plan, std::optional<SandboxKey> caller);

/// `run_teardown` of the sandbox named `container`, its network's refusal logged: what
/// dispose by key, the purge, a ttl expiry and an abandon run. `removed`, when given, is set
/// when this removal is the one that removed the workload.
boost::asio::awaitable<std::optional<DisposalFailure>> teardown_workload(DockerTransport& transport,
                                                                        const DockerConfig& config,
                                                                        std::string container,
                                                                        std::optional<SandboxKey> caller,
                                                                        bool* removed = nullptr);

/// A full 64-hex engine ID (what dispose by instance and reap remove by).
bool is_hex64(const std::string& s);
/// The resource is a proxy (its role label), removed with its workload and never counted.
bool is_proxy(const LabelledResource& r);

}  // namespace maf::sandbox::docker::detail
