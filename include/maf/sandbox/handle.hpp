#pragma once
/// @file handle.hpp
/// The five calls, awaitable form: open a sandbox, write, run, read or collect, and have it
/// disposed when the handle goes — for hosts that want the flow of a hosted SDK without
/// giving up the policy. A thin layer over the public core that adds no policy of its own:
/// opening goes through SandboxRouter::acquire, which runs the router's checks (C-69) and
/// throws the typed refusal (catch SandboxPolicyRefusal for all of them) before anything is
/// created. The blocking form, BlockingSandbox, is in blocking_sandbox.hpp (included here).
///
/// @code
///   // Named locals, never braced temporaries, inside a co_await (GCC 12 miscompiles those).
///   const maf::sandbox::SandboxKey key{"tenant", "conversation-1", "agent", ""};
///   const maf::sandbox::Command main_py{"python3", "main.py"};
///   auto sb = co_await maf::sandbox::SandboxHandle::open(router, key, spec);
///   co_await sb.write("in/data.csv", "a,b\n1,2\n");
///   auto result = co_await sb.run(main_py);
///   co_await sb.collect_into("results");  // the spec's declared outputs, under the file-system sink
///   co_await sb.close();                  // disposes; says whether the backend confirmed it
/// @endcode
///
/// Lifetime: the router (and so its backends) must outlive the handle — and, for a
/// SandboxHandle destroyed unclosed, the background disposal it starts on its executor.
/// Disposal targets this handle's key and kind (SandboxRouter::dispose_kind), so other kinds
/// of the same key stay.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/blocking_sandbox.hpp"
#include "maf/sandbox/command.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/sync.hpp"

namespace maf::sandbox {

/// The awaitable form. Call `co_await close()` when done: it disposes and says whether the
/// disposal was confirmed. A handle destroyed unclosed disposes best-effort on the executor
/// it was opened on (detached; a warning is logged, failures too) — a safety net, since a
/// destructor cannot await.
class SandboxHandle {
public:
  /// Checks the policy and acquires (SandboxRouter::acquire). Throws what it throws.
  static boost::asio::awaitable<SandboxHandle> open(SandboxRouter& router, SandboxKey key, SandboxSpec spec);

  SandboxHandle(SandboxHandle&&) noexcept;
  SandboxHandle& operator=(SandboxHandle&&) noexcept;
  SandboxHandle(const SandboxHandle&) = delete;
  SandboxHandle& operator=(const SandboxHandle&) = delete;
  ~SandboxHandle();

  /// Sandbox::write_file relative to the working directory.
  boost::asio::awaitable<void> write(std::string path, std::string content);
  /// Sandbox::exec: `run({"python3", "main.py"})` for an argv, a string for a shell line.
  boost::asio::awaitable<ExecResult> run(Command command, std::chrono::milliseconds timeout = kDefaultExecTimeout);
  /// Sandbox::read_file, refused over `max_bytes` (never truncated).
  boost::asio::awaitable<std::string> read(std::string path, std::int64_t max_bytes = kDefaultReadCapBytes);
  /// collect_outputs of the spec's declared outputs into make_file_system_sink(directory).
  boost::asio::awaitable<std::vector<LandedArtifact>> collect_into(std::filesystem::path directory);
  /// Disposes now; true when the backend confirmed it. Later calls return true at once.
  boost::asio::awaitable<bool> close();

  /// The sandbox itself, for everything the five calls do not cover. Throws ValueError
  /// once closed.
  Sandbox& sandbox() const;
  const SandboxSpec& spec() const noexcept;
  const SandboxKey& key() const noexcept;
  bool closed() const noexcept;

private:
  struct State;
  explicit SandboxHandle(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace maf::sandbox
