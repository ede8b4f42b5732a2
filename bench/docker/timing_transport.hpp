#pragma once
// A DockerTransport that forwards every operation to a real one and records its name and
// wall time (issue 24: where a cold acquire's time goes; issue 31: a streamed exec's first
// chunk at the transport). Used by bench_docker's MAF_BENCH_PROFILE_COLD mode and its
// streaming rows only; nothing in the library depends on it. Every virtual of the transport
// is forwarded: one left to the base class's default would measure that default instead.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "maf/sandbox/docker/transport.hpp"

namespace maf_bench {

namespace dk = maf::sandbox::docker;
using boost::asio::awaitable;

/// Names an optional answer's call by whether it found something.
inline auto present_or(const char* op) {
  return [op](const auto& r) { return std::string(op) + (r ? "" : " (absent)"); };
}

class TimingTransport final : public dk::DockerTransport {
public:
  struct Call {
    std::string op;
    double ms;
  };

  explicit TimingTransport(std::shared_ptr<dk::DockerTransport> inner) : inner_(std::move(inner)) {}

  /// The calls recorded since the last take, in the order they ended.
  std::vector<Call> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(calls_, {});
  }

  awaitable<std::string> endpoint() override { return inner_->endpoint(); }  // cached: not an engine call
  awaitable<std::string> server_os() override { return timed("server_os", inner_->server_os()); }
  awaitable<std::optional<dk::ContainerState>> container_state(std::string c) override {
    return timed(present_or("container_state"), inner_->container_state(std::move(c)));
  }
  awaitable<std::string> config_user(std::string c) override {
    return timed("config_user", inner_->config_user(std::move(c)));
  }
  awaitable<std::optional<std::string>> inspect_container(std::string c) override {
    return timed(present_or("inspect_container"), inner_->inspect_container(std::move(c)));
  }
  awaitable<bool> image_present(std::string image) override {
    return timed("image_present", inner_->image_present(std::move(image)));
  }
  awaitable<void> pull_image(std::string image) override {
    return timed_void("pull_image", inner_->pull_image(std::move(image)));
  }
  awaitable<dk::CreateResult> create_and_start(dk::CreateRequest q) override {
    return timed("create_and_start", inner_->create_and_start(std::move(q)));
  }
  bool creates_unstarted() const noexcept override { return inner_->creates_unstarted(); }
  awaitable<dk::CreateResult> create_unstarted(dk::CreateRequest q) override {
    return timed("create_unstarted", inner_->create_unstarted(std::move(q)));
  }
  awaitable<dk::StartOutcome> start_created(std::string c, std::string& detail) override {
    return timed("start_created", inner_->start_created(std::move(c), detail));
  }
  awaitable<bool> start(std::string c, std::string& detail) override {
    return timed("start", inner_->start(std::move(c), detail));
  }
  awaitable<dk::RemoveResult> remove_container(std::string c) override {
    return timed("remove_container", inner_->remove_container(std::move(c)));
  }
  awaitable<void> pause(std::string c) override { return timed_void("pause", inner_->pause(std::move(c))); }
  awaitable<void> unpause(std::string c) override { return timed_void("unpause", inner_->unpause(std::move(c))); }
  awaitable<dk::ExecOutcome> exec(dk::ExecCall call) override {
    std::string op = "exec " + (call.argv.empty() ? std::string() : call.argv[0]);
    return timed(std::move(op), inner_->exec(std::move(call)));
  }
  /// Recorded twice: "exec_stream <argv0>: first chunk" when the first chunk reaches the
  /// sink (the transport's time to first byte; absent when none came), and
  /// "exec_stream <argv0>" at the end, the whole call.
  awaitable<dk::ExecStreamEnd> exec_stream(dk::ExecStreamCall call, dk::ExecChunkSink sink) override {
    const std::string op = "exec_stream " + (call.argv.empty() ? std::string() : call.argv[0]);
    const auto t = std::chrono::steady_clock::now();  // a coroutine: at the first resume, as timed()
    dk::ExecChunkSink noting = [this, &op, t, first = true, sink = std::move(sink)](
                                   maf::sandbox::OutputStream stream, std::string_view bytes) mutable {
      if (std::exchange(first, false)) note(op + ": first chunk", t);
      return sink(stream, bytes);
    };
    auto inner = inner_->exec_stream(std::move(call), std::move(noting));  // a named local (GCC 12)
    const dk::ExecStreamEnd end = co_await std::move(inner);
    note(op, t);
    co_return end;
  }
  awaitable<dk::ArchiveGet> archive_get(std::string c, std::string path, std::size_t limit) override {
    return timed("archive_get", inner_->archive_get(std::move(c), std::move(path), limit));
  }
  awaitable<dk::PathStat> path_stat(std::string c, std::string path) override {
    auto name = [](const dk::PathStat& r) {
      return std::string(r.status == dk::PathStatStatus::NotFound ? "path_stat (404)" : "path_stat");
    };
    return timed(name, inner_->path_stat(std::move(c), std::move(path)));
  }
  awaitable<void> archive_put(std::string c, std::string dest, std::string tar) override {
    return timed_void("archive_put", inner_->archive_put(std::move(c), std::move(dest), std::move(tar)));
  }
  awaitable<void> archive_put_upload(std::string c, std::string dest, dk::TarUpload upload) override {
    return timed_void("archive_put_upload", inner_->archive_put_upload(std::move(c), std::move(dest), std::move(upload)));
  }
  awaitable<std::vector<dk::LabelledResource>> list_containers(std::vector<std::string> f,
                                                               std::optional<std::string> re) override {
    return timed("list_containers", inner_->list_containers(std::move(f), std::move(re)));
  }
  awaitable<std::vector<dk::LabelledResource>> list_networks(std::vector<std::string> f) override {
    return timed("list_networks", inner_->list_networks(std::move(f)));
  }
  awaitable<std::optional<std::string>> inspect_network(std::string n) override {
    return timed("inspect_network", inner_->inspect_network(std::move(n)));
  }
  awaitable<dk::RemoveResult> remove_network(std::string n) override {
    return timed("remove_network", inner_->remove_network(std::move(n)));
  }
  std::size_t idle_connections() const override { return inner_->idle_connections(); }

private:
  /// Awaits `call` (lazy: nothing runs before this co_await) and records it under `name`, a
  /// string or a function of the answer.
  template <class T, class Name>
  awaitable<T> timed(Name name, awaitable<T> call) {
    const auto t = std::chrono::steady_clock::now();
    T r = co_await std::move(call);
    if constexpr (std::is_invocable_v<Name, const T&>) note(name(r), t);
    else note(std::string(name), t);
    co_return r;
  }
  awaitable<void> timed_void(const char* name, awaitable<void> call) {
    const auto t = std::chrono::steady_clock::now();
    co_await std::move(call);
    note(name, t);
  }
  void note(std::string op, std::chrono::steady_clock::time_point t) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    std::lock_guard lock(mutex_);
    calls_.push_back({std::move(op), ms});
  }

  std::shared_ptr<dk::DockerTransport> inner_;
  std::mutex mutex_;
  std::vector<Call> calls_;
};

}  // namespace maf_bench
