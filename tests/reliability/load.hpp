#pragma once
// The load trial shared by every backend (issue 15 part 4): N conversations at once on one
// io_context run by four threads (a host may run one context on several), each acquire →
// exec → write → collect → dispose, with the host's descriptor, thread and child-process
// counts taken before and after.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "maf/sandbox/async.hpp"
#include "trials.hpp"

namespace reliability {

struct LoadCounts {
  int finished = 0;
  int fds_before = 0, fds_after = 0;
  int threads_before = 0, threads_after = 0;
  int children_before = 0, children_after = 0;
};

class DiscardingSink final : public maf::sandbox::OutputSink {
public:
  boost::asio::awaitable<maf::sandbox::LandedArtifact> deliver(maf::sandbox::Artifact artifact) override {
    co_return maf::sandbox::LandedArtifact{artifact.name, artifact.name, std::nullopt};
  }
};

/// One conversation; `spec` declares out.txt. Throws on any wrong answer (another
/// conversation's output, nothing collected, a failed dispose).
inline boost::asio::awaitable<void> conversation(maf::sandbox::SandboxBackend& backend, maf::sandbox::SandboxKey key,
                                                 maf::sandbox::SandboxSpec spec, std::string tag,
                                                 std::atomic<int>& finished) {
  using namespace maf::sandbox;
  SandboxSpec own = spec;
  auto sb = co_await backend.acquire(key, std::move(own));
  // Named locals only: GCC 12 mishandles temporaries built inside a co_await expression.
  std::vector<std::string> argv{"sh", "-c", "echo $0", tag};
  Command command(std::move(argv));
  std::string dot = ".";
  ExecResult r = co_await sb->exec(std::move(command), std::move(dot));
  if (r.stdout_text() != tag + "\n") throw std::runtime_error(tag + " saw another conversation's output");
  std::string path = "out.txt", content(4096, 'x'), here = ".";
  co_await sb->write_file(std::move(path), std::move(content), std::move(here));
  std::shared_ptr<OutputSink> sink = std::make_shared<DiscardingSink>();
  auto landed = co_await collect_outputs(*sb, spec, sink);
  if (landed.size() != 1) throw std::runtime_error(tag + " collected nothing");
  sb.reset();
  std::optional<std::string> no_kind, no_instance;
  auto failure = co_await backend.dispose(key, no_kind, no_instance);
  if (failure) throw std::runtime_error(tag + ": dispose failed: " + failure->to_string());
  ++finished;
}

/// `n` conversations at once, after one warm-up conversation that settles what a process
/// makes once (loggers, the engine binding). `key_for(tag)` names each one's key.
/// `pooled_fds`, when given, counts the descriptors the backend keeps open on purpose (the
/// Engine-API transport's bounded idle keep-alive pool, whose size depends on how the
/// conversations interleaved); they are left out of both counts.
inline LoadCounts run_load(maf::sandbox::SandboxBackend& backend,
                           const std::function<maf::sandbox::SandboxKey(const std::string&)>& key_for,
                           const maf::sandbox::SandboxSpec& spec, int n,
                           const std::function<int()>& pooled_fds = {}) {
  constexpr int kIoThreads = 4;
  auto round = [&](int count, const std::string& prefix) {
    boost::asio::io_context io;
    std::atomic<int> finished{0};
    std::mutex failure_guard;
    std::exception_ptr failure;
    for (int i = 0; i < count; ++i) {
      const std::string tag = prefix + std::to_string(i);
      boost::asio::co_spawn(io, conversation(backend, key_for(tag), spec, tag, finished), [&](std::exception_ptr e) {
        std::lock_guard guard(failure_guard);
        if (e && !failure) failure = e;
      });
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < kIoThreads; ++t) threads.emplace_back([&io] { io.run(); });
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
    return finished.load();
  };
  if (round(1, "warm-") != 1) throw std::runtime_error("the warm-up conversation did not finish");
  LoadCounts c;
  const auto unpooled_fds = [&] { return open_fds() - (pooled_fds ? pooled_fds() : 0); };
  c.fds_before = unpooled_fds();
  c.threads_before = threads();
  c.children_before = child_processes();
  c.finished = round(n, "c-");
  c.fds_after = unpooled_fds();
  c.threads_after = threads();
  c.children_after = child_processes();
  return c;
}

}  // namespace reliability
