#pragma once
// The proxy drain (D-27; docs/backends/docker.md "Disposal, in order"): stop the proxy, read the tail of its log,
// remove it, and only once it is gone publish its decisions as an egress event
// (egress_events.hpp). Shared by every teardown: dispose, dispose_scope, reap and the
// proxy's replacement at re-acquire.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/egress_events.hpp"
#include "maf/sandbox/docker/transport.hpp"
#include "maf/sandbox/key.hpp"

namespace maf::sandbox::docker::detail {

/// [port decision] ("Disposal, in order"): `stop -t 1`, and at most this much of the log.
inline constexpr std::chrono::seconds kProxyStopGrace{1};
inline constexpr std::size_t kProxyLogBytes = std::size_t{1} << 20;

/// Id, name (without the leading '/') and `Config.Labels` of a `container inspect`
/// document (`created` is left empty). Throws nlohmann::json::exception when unreadable.
LabelledResource inspected_container(const std::string& doc);

/// Drain and remove the proxy `proxy` (a name or ID). Removed or Absent: gone, and the
/// event (attributed per key_attribution.hpp, `caller` standing in as D-8 allows) was
/// published if the log held decisions. Refused: the engine kept it; nothing published.
/// A failed stop or log read is logged and the removal still happens (the decisions are
/// lost, never the teardown). Throws what the inspect or removal throws.
boost::asio::awaitable<RemoveResult> drain_and_remove_proxy(DockerTransport& transport, const DockerConfig& config,
                                                            std::string proxy, std::optional<SandboxKey> caller);

}  // namespace maf::sandbox::docker::detail
