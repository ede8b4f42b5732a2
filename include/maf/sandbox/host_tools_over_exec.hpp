#pragma once
/// @file host_tools_over_exec.hpp
/// The host-tool transport every EXEC + FILES_IN + FILES_OUT backend can serve
/// (docs/host-tools.md "The exec transport"): request and response files in a fresh per-run
/// directory, answered by a host-side supervisor while the program runs.
///
/// `run_with_host_tools` writes a launcher and two guest clients into
/// `<working_directory>/.maf-host-tools-<12 hex>/`, runs the launcher with one exec — the
/// program's own deadline is that exec's timeout — and, while it runs, serves the requests
/// the program publishes, in order, through HostToolRun::dispatch. The run directory is
/// reclaimed (removed as the guest) on every exit path.
///
/// In the guest, the program finds on PATH `maf-host-tool NAME [JSON-ARGUMENTS]` (POSIX sh,
/// busybox-compatible: the value's JSON on stdout and exit 0, or the refusal on stderr and
/// exit 1) and, for Python guests, `import maf_host_tools; maf_host_tools.call("name", k=v)`
/// on PYTHONPATH. Neither is a control: a program that writes request files itself is served
/// identically, because every gate is host-side.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/command.hpp"

namespace maf::sandbox {

struct HostToolProgram {
  /// What the launcher runs, in `working_directory`: an argv (run verbatim) or a shell line.
  Command command;
  /// Where the program runs and the run directory is made; relative to the sandbox's base.
  std::string working_directory = ".";
  /// The program's own deadline. Past it the exec that holds the program ends (the backend
  /// stops everything it started) and SandboxProgramTimeout is raised.
  std::chrono::milliseconds deadline = std::chrono::seconds(60);
  /// How often the supervisor looks for the next request while the program runs.
  std::chrono::milliseconds poll_interval = std::chrono::milliseconds(20);
  /// The program's merged stdout and stderr are read back up to this many bytes; more is
  /// SandboxTransferCapExceeded naming the cap (never silently truncated).
  std::int64_t max_output_bytes = 1 << 20;
  /// Bound on removing the run directory afterwards.
  std::chrono::milliseconds reclaim_timeout = std::chrono::seconds(30);
};

struct HostToolProgramResult {
  int exit_code = 0;
  /// The program's stdout and stderr, merged, in order.
  std::string output{};
  /// Requests served (answered with a value or a refusal).
  int requests = 0;
  /// Looks for the next request that found none, each one stat and one poll_interval's wait
  /// (cost accounting: bench/host_tools).
  int empty_polls = 0;
  /// Set when the run directory could not be removed afterwards (the run's result stands;
  /// the host decides what a guest that keeps files means).
  std::optional<std::string> reclaim_failure{};
};

/// Runs `program` with `run`'s registry reachable from inside it. ValueError for a bad
/// program (an empty or malformed command, non-positive deadline or poll interval) before
/// anything runs; SandboxProgramTimeout past the deadline, carrying the output so far; the
/// sandbox's own errors otherwise. `program` is the caller's, named: it must live until the
/// returned awaitable completes (a tool body rarely needs this call at all —
/// SandboxedToolOptions::host_tools and SandboxToolSession::exec make the run per call).
boost::asio::awaitable<HostToolProgramResult> run_with_host_tools(Sandbox& sandbox, HostToolRun& run,
                                                                  const HostToolProgram& program);

namespace detail {
template <class>
inline constexpr bool kNamedProgramRequired = false;
}  // namespace detail

/// Refused at compile time: GCC 12 destroys a braced HostToolProgram temporary in a co_await
/// expression twice (free(): invalid pointer), and a temporary outside one would be gone
/// before the lazy awaitable runs. Name the program first (docs/tools.md "GCC 12 and
/// temporaries").
template <class Refused = HostToolProgram>
boost::asio::awaitable<HostToolProgramResult> run_with_host_tools(Sandbox&, HostToolRun&, HostToolProgram&&) {
  static_assert(detail::kNamedProgramRequired<Refused>,
                "name the program first: `const HostToolProgram program{...}; co_await run_with_host_tools(sandbox, "
                "run, program);` — GCC 12 destroys a braced temporary in a co_await expression twice");
  return {};
}

}  // namespace maf::sandbox
