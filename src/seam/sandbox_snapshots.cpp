// The snapshot and pause surface of the Sandbox NVI (docs/snapshots.md SNAP-3…SNAP-9): the
// capability gate, the paused gate and argument checks, written once for every backend;
// the backend's hooks do the engine work.
#include "maf/sandbox/sandbox.hpp"

#include <chrono>
#include <exception>
#include <functional>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {
namespace {

void refuse_empty_id(const std::string& id, const char* method) {
  if (id.empty()) throw ValueError(std::string(method) + ": snapshot id must not be empty");
}

/// OBS-13: the event of one operation, built after the hook whatever ended it.
SnapshotEvent snapshot_event(SnapshotOperation operation, std::string id, std::int64_t size,
                             std::chrono::steady_clock::time_point started, const std::exception_ptr& failure) {
  SnapshotEvent e;
  e.operation = operation;
  e.snapshot_id = std::move(id);
  e.size_bytes = failure ? 0 : size;
  e.error_type = failure ? error_type_name(failure) : std::string();
  e.duration = std::chrono::steady_clock::now() - started;
  return e;
}

}  // namespace

void Sandbox::refuse_if_paused(const char* method) const {
  if (!paused_.load()) return;
  throw SandboxPaused("sandbox " + descriptor_.instance_id + " of backend '" + descriptor_.backend_name +
                      "' (workload kind '" + descriptor_.kind + "') is paused; " + method +
                      " would start a guest process, so it waits for resume()");
}

boost::asio::awaitable<void> Sandbox::observed_snapshot_op(SnapshotOperation operation, std::string id,
                                                          std::function<boost::asio::awaitable<void>()> hook,
                                                          const SnapshotInfo* taken) {
  const auto observed = observation();
  if (!observed) co_return co_await hook();
  const auto started = std::chrono::steady_clock::now();
  std::exception_ptr failure;
  try {
    co_await hook();
  } catch (...) {
    failure = std::current_exception();
  }
  if (taken) id = taken->id;
  deliver(*observed, snapshot_event(operation, std::move(id), taken ? taken->size_bytes : 0, started, failure));
  if (failure) std::rethrow_exception(failure);
}

boost::asio::awaitable<SnapshotInfo> Sandbox::snapshot() {
  require_capability(Capability::Snapshot, "snapshot");
  SnapshotInfo info;
  std::function<boost::asio::awaitable<void>()> hook = [&]() -> boost::asio::awaitable<void> {
    info = co_await do_snapshot();
  };
  // Built, then awaited by name: GCC 12 destroys by-value arguments inside a co_await twice.
  auto op = observed_snapshot_op(SnapshotOperation::Snapshot, std::string(), std::move(hook), &info);
  co_await std::move(op);
  co_return info;
}

boost::asio::awaitable<void> Sandbox::restore(std::string snapshot_id, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  require_capability(Capability::Snapshot, "restore");
  refuse_if_paused("restore");
  refuse_empty_id(snapshot_id, "restore");
  if (timeout.count() <= 0)
    throw ValueError("restore timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  std::function<boost::asio::awaitable<void>()> hook = [&]() -> boost::asio::awaitable<void> { co_await do_restore(snapshot_id, timeout, deadline); };
  auto op = observed_snapshot_op(SnapshotOperation::Restore, snapshot_id, std::move(hook));
  co_await std::move(op);
}

boost::asio::awaitable<void> Sandbox::release_snapshot(std::string snapshot_id) {
  require_capability(Capability::Snapshot, "release_snapshot");
  refuse_empty_id(snapshot_id, "release_snapshot");
  std::function<boost::asio::awaitable<void>()> hook = [&]() -> boost::asio::awaitable<void> { co_await do_release_snapshot(snapshot_id); };
  auto op = observed_snapshot_op(SnapshotOperation::Release, snapshot_id, std::move(hook));
  co_await std::move(op);
}

boost::asio::awaitable<std::vector<SnapshotInfo>> Sandbox::snapshots() {
  require_capability(Capability::Snapshot, "snapshots");
  co_return co_await do_snapshots();
}

boost::asio::awaitable<void> Sandbox::pause() {
  require_capability(Capability::Pause, "pause");
  if (paused_.load()) co_return;
  std::function<boost::asio::awaitable<void>()> hook = [&]() -> boost::asio::awaitable<void> { co_await do_pause(); };
  auto op = observed_snapshot_op(SnapshotOperation::Pause, std::string(), std::move(hook));
  co_await std::move(op);
  paused_.store(true);
}

boost::asio::awaitable<void> Sandbox::resume() {
  require_capability(Capability::Pause, "resume");
  if (!paused_.load()) co_return;
  std::function<boost::asio::awaitable<void>()> hook = [&]() -> boost::asio::awaitable<void> { co_await do_resume(); };
  auto op = observed_snapshot_op(SnapshotOperation::Resume, std::string(), std::move(hook));
  co_await std::move(op);
  paused_.store(false);
}

boost::asio::awaitable<SnapshotInfo> Sandbox::do_snapshot() {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement snapshot");
  co_return SnapshotInfo{};
}

boost::asio::awaitable<void> Sandbox::do_restore(const std::string&, std::chrono::milliseconds,
                                                 std::chrono::steady_clock::time_point) {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement restore");
  co_return;
}

boost::asio::awaitable<void> Sandbox::do_release_snapshot(const std::string&) {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement release_snapshot");
  co_return;
}

boost::asio::awaitable<std::vector<SnapshotInfo>> Sandbox::do_snapshots() {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement snapshots");
  co_return std::vector<SnapshotInfo>{};
}

boost::asio::awaitable<void> Sandbox::do_pause() {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement pause");
  co_return;
}

boost::asio::awaitable<void> Sandbox::do_resume() {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement resume");
  co_return;
}

}  // namespace maf::sandbox
