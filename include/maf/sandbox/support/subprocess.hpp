#pragma once
/// @file support/subprocess.hpp
/// An asynchronous child process with bounded capture and a wall-clock deadline: the one
/// runner CLI-driven backends (process/bubblewrap, Docker CLI, WSLC CLI) spawn through.
///
/// Discipline (reproc's, and docs/backends/docker.md "The CLI runner and its classification"):
/// - argv only, never a shell. `argv[0]` containing no `/` is searched in the *parent's*
///   PATH (posix_spawnp semantics), whatever `env` says.
/// - stdout and stderr are separate pipes drained concurrently, each bounded *at the source*:
///   at most `max_stdout` / `max_stderr` bytes are ever buffered.
/// - Every descriptor the library opens is O_CLOEXEC; the child sees exactly fds 0, 1, 2,
///   the caller's `keep_fds` (plus whatever the host itself leaked without O_CLOEXEC).
/// - The child leads its own process group, so a stop reaches the grandchildren a `sh -c`
///   starts (they would otherwise hold the pipes open). The group is signalled only while
///   the leader is unreaped, so the pgid cannot have been recycled.
/// - Exit is observed through a pidfd (Linux >= 5.3) polled by the io_context: no thread per
///   child and no SIGCHLD handler, so other code's children are never reaped here. (A host
///   that installs a `waitpid(-1)` SIGCHLD reaper will race with this; do not do that.)
/// - Every path out of `run_subprocess` — normal exit, cap, deadline, stop request, the
///   coroutine frame being destroyed with its io_context — kills (if needed) and reaps the
///   child before it returns, so no zombie and no descriptor outlives the call.
///
/// Cancellation: Boost 1.74 has no per-operation cancellation slots, so a caller that wants
/// to abandon a run passes a `std::stop_token`; requesting stop SIGKILLs the group, reaps it
/// and makes the awaitable throw `maf::sandbox::Cancelled` (outside the error tree, C-106).
/// Destroying the io_context while a run is pending kills and reaps synchronously (a short
/// blocking waitpid after SIGKILL).
///
/// Threading: the run's own I/O objects live on a strand of the caller's executor, so the
/// awaitable may be used from a multi-threaded io_context.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::support {

/// How the child's environment is built from `SubprocessOptions::env`.
enum class EnvMode {
  inherit,  ///< the parent's environment, with each `env` entry added or overriding
  replace,  ///< exactly `env`, nothing inherited
};

/// Receives stdout incrementally instead of buffering it. Return `false` to say "I have
/// what I need": reading stops, the child is killed and reaped, and the result reports
/// `stopped_early` (not an error). A chunk's view is valid only during the call.
using ChunkSink = std::function<bool(std::string_view chunk)>;

/// Produces stdin incrementally: called again each time the previous chunk was fully
/// written; an empty string means end of input (stdin is then closed).
using ChunkSource = std::function<std::string()>;

/// Everything one run needs. Only `argv` is required.
struct SubprocessOptions {
  std::vector<std::string> argv{};  ///< argv[0] is the program; must be non-empty

  /// Bytes written to stdin, then stdin is closed. With neither this nor `stdin_source`,
  /// stdin is /dev/null. If both are set, `stdin_bytes` is written first.
  std::optional<std::string> stdin_bytes{};
  ChunkSource stdin_source{};
  /// Leave stdin open (without further input) once the bytes above are written, until the
  /// child exits or is stopped: for programs that must not see EOF before they are done.
  bool keep_stdin_open = false;
  /// A descriptor the child gets as its stdin instead (a StdinStream's read end, STDIN-6):
  /// owned by the run from the call on and closed in the parent once the child holds its
  /// copy, so the writer sees the child's end as the only reader. Excludes the three above.
  int stdin_fd = -1;

  /// Byte caps. Past a cap the stream stops being read, the child is SIGKILLed and reaped,
  /// the first `max_*` bytes are kept and the result's `*_overflowed` flag is set. That is
  /// a *result flag*, not an exception, because a bounded read is often exactly what the
  /// caller asked for (`read_limit`, docs/backends/docker.md "The CLI runner…"); callers that treat it as a refusal
  /// raise their own cap error naming the value.
  std::size_t max_stdout = std::size_t{16} << 20;
  std::size_t max_stderr = std::size_t{1} << 20;

  /// When set, stdout is delivered here chunk by chunk (at most `max_stdout` bytes in
  /// total) and `SubprocessResult::stdout_bytes` stays empty.
  ChunkSink on_stdout{};
  /// The same for stderr (at most `max_stderr` bytes; `stderr_bytes` stays empty).
  ChunkSink on_stderr{};

  /// The longest time with no byte read on either output. On expiry the group is SIGKILLed
  /// and reaped and the result reports `idle_expired` (a result flag, like a cap: streaming
  /// callers raise their own error). `std::nullopt` means silence is never bounded.
  std::optional<std::chrono::milliseconds> idle_timeout{};

  /// Wall-clock deadline measured from the call. On expiry the group gets SIGTERM, then
  /// SIGKILL after `kill_grace`, is reaped, and `SubprocessTimeout` is thrown carrying what
  /// was captured. `std::nullopt` means no deadline.
  std::optional<std::chrono::milliseconds> timeout{};
  std::chrono::milliseconds kill_grace{2000};

  EnvMode env_mode = EnvMode::inherit;
  std::map<std::string, std::string> env{};

  /// The child's working directory; empty means the parent's.
  std::string cwd{};

  /// Descriptors the child inherits under the same numbers, for programs that take an fd
  /// argument (bubblewrap's `--seccomp FD`, `--bind-fd FD`). Only this child gets them: they
  /// may (and should) be O_CLOEXEC in the parent, so a concurrent spawn elsewhere never sees
  /// them. The caller owns them and keeps them open until the call returns; each must be
  /// above 2 (0–2 are the pipes above), else `ValueError`.
  std::vector<int> keep_fds{};

  /// Requesting stop kills and reaps the child; the call then throws `Cancelled`.
  std::stop_token stop{};

  /// `cgroup.procs` files the child joins — writes `0` into each, in order — between fork and
  /// exec, so the program and everything it starts run inside those cgroups from their first
  /// instruction, with no helper process on the path (issue 55). The files are opened by this
  /// process before the spawn and written by the child while it still has this process's
  /// identity; one that cannot be opened or refuses the write is a `SubprocessSpawnError`
  /// naming it, and nothing of the program ran. Empty: the child stays in the caller's cgroups.
  std::vector<std::string> join_cgroup_procs{};
};

/// What a finished run produced. A nonzero exit is a value, never an exception: callers
/// classify it (docs/backends/docker.md "The CLI runner and its classification").
struct SubprocessResult {
  std::string stdout_bytes{};  ///< empty when `on_stdout` was given
  std::string stderr_bytes{};
  /// The exit status; for a signal death, minus the signal number (Python's returncode).
  int exit_code = 0;
  std::optional<int> signal{};  ///< set iff the child died of a signal
  bool stdout_overflowed = false;  ///< stdout exceeded `max_stdout` (child was killed)
  bool stderr_overflowed = false;  ///< stderr exceeded `max_stderr` (child was killed)
  bool stopped_early = false;      ///< a sink returned false (child was killed)
  bool idle_expired = false;       ///< `idle_timeout` passed with no output (child was killed)
  std::size_t stdout_total = 0;    ///< stdout bytes kept or delivered to the sink
  std::size_t stderr_total = 0;    ///< stderr bytes kept or delivered to the sink

  /// True iff the child exited by itself with status 0 and nothing was cut short.
  bool ok() const noexcept {
    return exit_code == 0 && !signal && !stdout_overflowed && !stderr_overflowed && !stopped_early && !idle_expired;
  }
};

/// The program could not be started (missing binary, not executable, bad cwd, out of
/// descriptors). Names the program and carries errno, so a backend can say which setting
/// (e.g. `docker_path`) is wrong.
class SubprocessSpawnError : public OSError {
public:
  SubprocessSpawnError(const std::string& message, int error_number)
      : OSError(message), errno_(error_number) {}
  int error_number() const noexcept { return errno_; }

private:
  int errno_;
};

/// The caller's deadline expired (C-40): the child was stopped and reaped; `partial()` holds
/// what it had written by then (its exit fields describe the killed child).
class SubprocessTimeout : public TimeoutError {
public:
  SubprocessTimeout(const std::string& message, SubprocessResult partial)
      : TimeoutError(message), partial_(std::move(partial)) {}
  const SubprocessResult& partial() const noexcept { return partial_; }

private:
  SubprocessResult partial_;
};

/// Run one child to completion under `options`. Throws `ValueError` for an empty argv,
/// `SubprocessSpawnError`, `SubprocessTimeout`, or `Cancelled`; everything else (exit codes,
/// signals, caps, early stop) is reported in the result.
boost::asio::awaitable<SubprocessResult> run_subprocess(SubprocessOptions options);

}  // namespace maf::sandbox::support
