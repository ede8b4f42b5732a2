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

TeardownPlan TeardownPlan::by_name(const std::string& container) {
  return TeardownPlan{{container + "-proxy", "proxy " + container + "-proxy"},
                      {container, "container " + container},
                      {container + "-net", "network " + container + "-net"}};
}

awaitable<TeardownReport> run_teardown(DockerTransport& transport, const DockerConfig& config, TeardownPlan plan,
                                       std::optional<SandboxKey> caller) {
  TeardownReport report;
  // Order (D-27): the proxy drained and removed, then the workload, then the network. A part
  // the engine keeps stops the plan there: what follows it stays, for a later teardown.
  try {
    if (!plan.proxy.target.empty()) {
      auto proxy = co_await drain_and_remove_proxy(transport, config, std::move(plan.proxy.target), std::move(caller));
      if (proxy.outcome == RemoveOutcome::Refused) {
        report.failure = DisposalFailure{kDisposalRefused, plan.proxy.label + ": " + proxy.detail};
        co_return report;
      }
      report.proxy_removed = proxy.outcome == RemoveOutcome::Removed;
    }
    if (!plan.workload.target.empty()) {
      auto workload = co_await transport.remove_container(plan.workload.target);
      if (workload.outcome == RemoveOutcome::Refused) {
        report.failure = DisposalFailure{kDisposalRefused, plan.workload.label + ": " + workload.detail};
        co_return report;
      }
      report.workload_removed = workload.outcome == RemoveOutcome::Removed;
    }
    if (!plan.network.target.empty()) {
      auto network = co_await transport.remove_network(plan.network.target);
      if (network.outcome == RemoveOutcome::Refused) report.network_kept = network.detail;
      report.network_removed = network.outcome == RemoveOutcome::Removed;
    }
  } catch (const Error& e) {
    const std::string& part = !plan.workload.label.empty() ? plan.workload.label
                              : !plan.proxy.label.empty()  ? plan.proxy.label
                                                           : plan.network.label;
    report.failure = DisposalFailure{kDisposalUnreachable, part + ": " + e.what()};
  }
  co_return report;
}

awaitable<std::optional<DisposalFailure>> teardown_workload(DockerTransport& transport, const DockerConfig& config,
                                                           std::string container, std::optional<SandboxKey> caller,
                                                           bool* removed) {
  auto running = run_teardown(transport, config, TeardownPlan::by_name(container), std::move(caller));
  TeardownReport report = co_await std::move(running);
  if (removed) *removed = report.workload_removed;
  if (report.network_kept) logger()->warn("backend 'docker': network {}-net remains: {}", container, *report.network_kept);
  co_return report.failure;
}

}  // namespace maf::sandbox::docker::detail
