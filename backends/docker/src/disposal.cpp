// Disposal by label read back from the engine (D-26, D-27; docs/backends/docker.md
// "Disposal, in order"): by key, by instance, and the scope purge. Teardown never throws
// except on cancellation: failures are reported. Reap is reap.cpp.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/async_mutex.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "memory.hpp"
#include "proxy_drain.hpp"
#include "said.hpp"
#include "teardown.hpp"

namespace maf::sandbox::docker {

using boost::asio::awaitable;
using detail::is_hex64;
using detail::is_proxy;

namespace {

std::vector<std::string> filters(const std::vector<std::pair<std::string, std::string>>& selector) {
  std::vector<std::string> out;
  for (const auto& [label, value] : selector) out.push_back(support::label_argument(label, value));
  return out;
}

/// Runs every task at once and returns when all have ended, rethrowing the first exception
/// (teardown reports its failures as values, so that is cancellation). The tasks share one
/// strand: their engine calls overlap, their code never runs on two threads at once, so an
/// egress observer is never called concurrently by one purge.
awaitable<void> run_together(std::vector<std::function<awaitable<void>()>>& tasks) {
  if (tasks.empty()) co_return;
  auto strand = boost::asio::make_strand(co_await boost::asio::this_coro::executor);
  support::AsyncMutex all_ended;  // held until the last task ends: a latch
  co_await all_ended.lock();
  std::atomic<std::size_t> running{tasks.size()};
  std::mutex first_mutex;
  std::exception_ptr first;
  for (auto& task : tasks)
    boost::asio::co_spawn(strand, task(), [&](std::exception_ptr e) {
      if (e) {
        std::lock_guard lock(first_mutex);
        if (!first) first = e;
      }
      if (--running == 0) all_ended.unlock();
    });
  co_await all_ended.lock();
  all_ended.unlock();
  if (first) std::rethrow_exception(first);
}

}  // namespace

awaitable<std::optional<DisposalFailure>> DockerSandboxBackend::remove_workload(std::string container,
                                                                               std::optional<SandboxKey> caller,
                                                                               bool* removed) {
  // Made, then awaited: no by-value temporaries inside the co_await (GCC 12).
  const std::string name = container;
  auto teardown = detail::teardown_workload(*transport_, config_, std::move(container), std::move(caller), removed);
  std::optional<DisposalFailure> failure = co_await std::move(teardown);
  if (!failure) memory_->forget(name);  // gone (or absent): its facts go with it
  co_return failure;
}

awaitable<std::optional<DisposalFailure>> DockerSandboxBackend::dispose(SandboxKey key, std::optional<std::string> kind,
                                                                        std::optional<std::string> instance_id) {
  if (instance_id) {
    if (!is_hex64(*instance_id))
      co_return DisposalFailure{kDisposalRefused, said("instance_id must be a full 64-hex container ID, got '" +
                                                           *instance_id + "'; nothing removed")};
    std::optional<std::string> doc;
    try {
      doc = co_await transport_->inspect_container(*instance_id);
    } catch (const Error& e) {
      co_return DisposalFailure{kDisposalUnreachable, e.what()};
    }
    if (!doc) co_return std::nullopt;  // already gone
    std::map<std::string, std::string> labels;
    std::string name;
    try {
      LabelledResource inspected = detail::inspected_container(*doc);
      name = std::move(inspected.name);
      labels = std::move(inspected.labels);
    } catch (const nlohmann::json::exception& e) {
      co_return DisposalFailure{kDisposalUnknown, std::string("unreadable inspect answer: ") + e.what()};
    }
    // A foreign owner's container is not ours to remove: report nothing, remove nothing.
    for (const auto& [label, value] : support::key_selector(key, kind))
      if (labels[label] != value) co_return std::nullopt;
    // The one plan (D-27), the workload removed by the ID named — not by its name, which a
    // replacement may hold by now (C-72); a nameless answer has no proxy or network to find.
    detail::TeardownPlan plan = name.empty() ? detail::TeardownPlan{} : detail::TeardownPlan::by_name(name);
    plan.workload = {*instance_id, "container " + *instance_id};
    std::optional<SandboxKey> caller = key;
    auto running = detail::run_teardown(*transport_, config_, std::move(plan), std::move(caller));
    detail::TeardownReport report = co_await std::move(running);
    if (report.failure) co_return report.failure;
    if (report.network_kept) logger()->warn("backend 'docker': network {}-net remains: {}", name, *report.network_kept);
    if (!name.empty()) memory_->forget(name);
    co_return std::nullopt;
  }

  std::vector<DisposalFailure> failures;
  std::set<std::string> names;
  try {
    for (const auto& r : co_await transport_->list_containers(filters(support::key_selector(key, kind)), std::nullopt))
      if (!is_proxy(r)) names.insert(r.name);
  } catch (const Error& e) {
    failures.push_back({kDisposalUnlisted, std::string("listing by label failed: ") + e.what()});
  }
  // The names this process acquired (acquired_) are only a fallback for a failed listing;
  // the key's entry is dropped either way.
  const std::string exact = kind ? container_name(key, *kind) : std::string();
  for (auto& name : memory_->remembered(key, /*forget=*/!kind))
    if (!kind || name == exact) names.insert(name);
  for (const auto& name : names) {
    std::optional<SandboxKey> caller = key;
    if (auto failure = co_await remove_workload(name, std::move(caller))) failures.push_back(*failure);
  }
  co_return fold(failures);
}

awaitable<ScopePurge> DockerSandboxBackend::dispose_scope(std::string scope, std::string thread_id) {
  // By label, read back from the engine — never from process memory (D-26).
  ScopePurge purge;
  std::vector<LabelledResource> workloads;
  try {
    workloads = co_await transport_->list_containers(filters(support::scope_selector(scope, thread_id)), std::nullopt);
  } catch (const Error& e) {
    purge.undisposed = DisposalFailure{kDisposalUnlisted, std::string("listing by label failed: ") + e.what()};
    co_return purge;
  }
  // [port decision] (issue 24) The sandboxes are torn down at once: each keeps D-27's order
  // (proxy, workload, network), and nothing orders one sandbox's teardown against
  // another's. Removals cost the engine ~50 ms each, so three in a row were most of a purge.
  // A listed workload counts as disposed when this purge's removal is the one that removed
  // it: one that vanished since the listing (another disposer) is the engine's "absent".
  // (Until issue 24 an inspect before each removal asked the same; the removal's own
  // answer says it without that call.)
  struct Outcome {
    std::optional<DisposalFailure> failure;
    bool removed = false;
  };
  std::vector<Outcome> outcomes(workloads.size());
  std::vector<std::function<awaitable<void>()>> tasks;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (is_proxy(workloads[i])) continue;  // proxies are removed with their workload and not counted
    tasks.push_back([this, &outcomes, &workloads, i]() -> awaitable<void> {
      std::string workload = workloads[i].name;  // named: no temporaries inside co_await (GCC 12)
      std::optional<SandboxKey> no_caller;       // dispose_scope has no key to stand in (D-8)
      outcomes[i].failure = co_await remove_workload(std::move(workload), std::move(no_caller), &outcomes[i].removed);
    });
  }
  co_await run_together(tasks);
  std::vector<DisposalFailure> failures;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (is_proxy(workloads[i])) continue;
    if (outcomes[i].failure)
      failures.push_back(*outcomes[i].failure);
    else if (outcomes[i].removed)
      ++purge.disposed;
  }
  purge.undisposed = fold(failures);
  co_return purge;
}

}  // namespace maf::sandbox::docker
