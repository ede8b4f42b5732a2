#pragma once
// The one teardown plan of a Docker sandbox (D-27): the drained proxy, then the workload,
// then the network — attached endpoints block a network's removal. Used by dispose, the
// scope purge, a ttl expiry and an exec's abandon (EXE-2), so the order is written once;
// dispose by instance and reap keep their own removal by ID (disposal.cpp, reap.cpp) in the
// same order.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/transport.hpp"
#include "maf/sandbox/key.hpp"

namespace maf::sandbox::docker::detail {

/// Removes `container`'s proxy (drained: its decisions reach the observers, attributed to
/// `caller` where its label is missing), the container, then its network. A proxy is tried
/// whatever the current config says: a sandbox another configuration created is still
/// reclaimed. A proxy the engine keeps leaves the workload and the network in place.
/// `removed`, when given, is set when this removal is the one that removed the workload.
/// Never throws for the engine's answers: a failure comes back as a DisposalFailure.
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
