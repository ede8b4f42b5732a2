#pragma once
// The load trial shared by every backend (issue 15 part 4): N conversations at once on one
// io_context, each acquire → exec → write → collect → dispose, with the host's descriptor,
// thread and child-process counts taken before and after.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <functional>
#include <stdexcept>
#include <string>

#include "maf/sandbox.hpp"
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
                                                 maf::sandbox::SandboxSpec spec, std::string tag, int& finished) {
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
/// makes once (loggers, the engine binding, pools). `key_for(tag)` names each one's key.
inline LoadCounts run_load(maf::sandbox::SandboxBackend& backend,
                           const std::function<maf::sandbox::SandboxKey(const std::string&)>& key_for,
                           const maf::sandbox::SandboxSpec& spec, int n) {
  auto round = [&](int count, const std::string& prefix) {
    boost::asio::io_context io;
    int finished = 0;
    std::exception_ptr failure;
    for (int i = 0; i < count; ++i) {
      const std::string tag = prefix + std::to_string(i);
      boost::asio::co_spawn(io, conversation(backend, key_for(tag), spec, tag, finished), [&](std::exception_ptr e) {
        if (e && !failure) failure = e;
      });
    }
    io.run();
    if (failure) std::rethrow_exception(failure);
    return finished;
  };
  if (round(1, "warm-") != 1) throw std::runtime_error("the warm-up conversation did not finish");
  LoadCounts c;
  c.fds_before = open_fds();
  c.threads_before = threads();
  c.children_before = child_processes();
  c.finished = round(n, "c-");
  c.fds_after = open_fds();
  c.threads_after = threads();
  c.children_after = child_processes();
  return c;
}

}  // namespace reliability
