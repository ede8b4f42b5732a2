#pragma once
// Live egress on Docker (docs/backends/docker.md "Live egress"; docs/policy.md EGU-7…EGU-10):
// the proxy is started with a control channel (an abstract unix socket of its own network
// namespace, which the workload's namespace cannot name), and an update is one
// `docker exec` of the proxy binary's `--control-send` inside the proxy's container.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <string>
#include <vector>

#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/transport.hpp"

namespace maf::sandbox::docker::detail {

/// The proxy image feature (its `--features`, carried by the image label) that says the
/// proxy has the control channel; without it a sandbox declares no live egress update.
inline constexpr const char* kLivePolicyFeature = "live-policy";
/// The proxy's control address inside its container: abstract, so no file exists anywhere.
inline constexpr const char* kControlAddress = "@maf-sandbox-control";
/// The proxy binary's path in the image (scripts/egress-proxy-image).
inline constexpr const char* kProxyBinary = "/maf-sandbox-egress-proxy";

/// Whether the configured proxy image lists kLivePolicyFeature; read once per image per
/// process (the image's label is fixed for a tag's build, as the other features are).
boost::asio::awaitable<bool> proxy_image_live(DockerTransport& transport, const DockerConfig& config);

/// The proxy's extra arguments for the channel.
std::vector<std::string> control_args();

}  // namespace maf::sandbox::docker::detail
