// The one teardown plan of a Docker sandbox (teardown.hpp, D-27), and the two readings of
// the engine's inventory every teardown path shares.
#include "teardown.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "proxy_drain.hpp"

namespace maf::sandbox::docker::detail {

using boost::asio::awaitable;

bool is_hex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool is_proxy(const LabelledResource& r) {
  auto it = r.labels.find(std::string(support::kLabelRole));
  return it != r.labels.end() && it->second == "proxy";
}

awaitable<std::optional<DisposalFailure>> teardown_workload(DockerTransport& transport, const DockerConfig& config,
                                                           std::string container, std::optional<SandboxKey> caller,
                                                           bool* removed) {
  // Order (D-27): the proxy drained and removed, then the workload, then the network.
  try {
    std::string proxy_name = container + "-proxy";
    auto proxy = co_await drain_and_remove_proxy(transport, config, std::move(proxy_name), std::move(caller));
    if (proxy.outcome == RemoveOutcome::Refused)
      co_return DisposalFailure{kDisposalRefused, "proxy " + container + "-proxy: " + proxy.detail};
    auto workload = co_await transport.remove_container(container);
    if (workload.outcome == RemoveOutcome::Refused)
      co_return DisposalFailure{kDisposalRefused, "container " + container + ": " + workload.detail};
    if (removed) *removed = workload.outcome == RemoveOutcome::Removed;
    std::string network_name = container + "-net";
    auto network = co_await transport.remove_network(std::move(network_name));
    if (network.outcome == RemoveOutcome::Refused)
      logger()->warn("backend 'docker': network {}-net remains: {}", container, network.detail);
  } catch (const Error& e) {
    co_return DisposalFailure{kDisposalUnreachable, "container " + container + ": " + e.what()};
  }
  co_return std::nullopt;
}

}  // namespace maf::sandbox::docker::detail
