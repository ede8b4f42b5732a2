// Fork (issue 49; docs/snapshots.md SNAP-8, docs/backends/docker.md "Snapshots and pause"):
// a new sandbox made exactly as an acquire makes one — its own container, key, labels, egress
// proxy and policy, found by dispose, purge and reap like any other — whose work tree then
// becomes the one the source's snapshot kept. The source is only read.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include <spdlog/spdlog.h>

#include "docker_sandbox.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "said.hpp"
#include "teardown.hpp"

namespace maf::sandbox::docker {

using boost::asio::awaitable;

awaitable<std::shared_ptr<Sandbox>> DockerSandboxBackend::do_fork(std::shared_ptr<Sandbox> source,
                                                                  std::string snapshot_id, SandboxKey key,
                                                                  SandboxSpec spec, AcquirePlan plan) {
  auto* from = dynamic_cast<detail::DockerSandbox*>(source.get());
  if (!from) throw ValueError(said("fork: the source sandbox is not one of this backend's"));
  const detail::KeptTree tree = from->kept_tree(snapshot_id);  // SandboxSnapshotNotFound first
  std::vector<std::string> label_filters;
  for (const auto& [label, value] : support::key_selector(key, spec.kind()))
    label_filters.push_back(support::label_argument(label, value));
  for (const auto& r : co_await transport_->list_containers(label_filters, std::nullopt))
    if (!detail::is_proxy(r))
      throw ValueError(said("fork: ") + to_string(key) + " already has a sandbox of kind '" + spec.kind() +
                       "' (container " + r.name + "); a fork makes a new sandbox and never replaces one (dispose it first)");
  const std::string kind = spec.kind();
  auto acquiring = do_acquire(key, std::move(spec), std::move(plan));
  std::shared_ptr<Sandbox> child = co_await std::move(acquiring);
  auto* made = dynamic_cast<detail::DockerSandbox*>(child.get());
  std::exception_ptr failed;
  try {
    const auto deadline = std::chrono::steady_clock::now() + config_.command_timeout();
    co_await made->put_work_tree(tree, deadline);
  } catch (...) {
    failed = std::current_exception();
  }
  if (failed) {
    // A fork that could not take its start is not left behind.
    auto removing = remove_workload(made->container_name(), key);
    if (auto failure = co_await std::move(removing))
      logger()->warn("backend 'docker': removing fork {} of kind '{}' after its start failed: {}",
                     made->container_name(), kind, failure->to_string());
    std::rethrow_exception(failed);
  }
  co_return child;
}

}  // namespace maf::sandbox::docker
