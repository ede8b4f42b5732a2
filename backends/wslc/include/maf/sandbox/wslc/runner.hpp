#pragma once
/// @file wslc/runner.hpp
/// The one subprocess seam (wslc.md W-40): argv, optional stdin bytes (given whole, or
/// streamed from a source), deadline, caps, optional cwd -> exit status and raw bytes. A
/// deadline kills and reaps the child before `support::SubprocessTimeout` leaves; a spawn
/// failure is WslcBackendUnavailable naming `wslc_path`. Tests substitute a runner (T-14:
/// one that always throws).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::wslc {

struct WslcCall {
  std::vector<std::string> args;  ///< without the program (commands.hpp)
  std::optional<std::string> stdin_bytes;
  /// More stdin after `stdin_bytes`, one chunk per call until an empty one (support's
  /// ChunkSource): a large upload streamed from the caller's bytes, never copied whole.
  std::function<std::string()> stdin_source;
  std::optional<std::chrono::milliseconds> timeout;
  std::size_t max_stdout = std::size_t{1} << 20;
  std::size_t max_stderr = std::size_t{1} << 20;
  std::string cwd;  ///< empty = the host's
  /// Streaming (exec_stream): each chunk of stdout / stderr goes here as it is read instead
  /// of into the outcome (false: stop reading, kill wslc); `idle_timeout` bounds the silence
  /// of both together (support::SubprocessOptions).
  std::function<bool(std::string_view)> on_stdout;
  std::function<bool(std::string_view)> on_stderr;
  std::optional<std::chrono::milliseconds> idle_timeout;
  /// Requesting stop kills wslc; the run then reports `stopped_early` (STR-10).
  std::stop_token stop{};
};

struct WslcOutcome {
  int exit_code = 0;
  std::string stdout_bytes;
  std::string stderr_bytes;
  bool stdout_overflowed = false;
  bool stderr_overflowed = false;
  bool stopped_early = false;  ///< a streaming sink returned false (wslc was killed)
  bool idle_expired = false;   ///< `idle_timeout` passed with no output (wslc was killed)
  bool ok() const noexcept { return exit_code == 0 && !stdout_overflowed && !stderr_overflowed; }
};

class WslcRunner {
public:
  virtual ~WslcRunner();
  virtual boost::asio::awaitable<WslcOutcome> run(WslcCall call) = 0;
};

/// A lifecycle call (every verb but a workload's exec): `call.timeout` is the backend's
/// own ceiling (command_timeout_seconds), so its expiry is an OSError naming `verb`, never
/// the TimeoutError that means "the caller's timeout expired" (C-40).
boost::asio::awaitable<WslcOutcome> run_lifecycle(WslcRunner& runner, WslcCall call, const std::string& verb);

/// Spawns `wslc_path` through support/subprocess.hpp (a relative path with a `/` is made
/// absolute here, against the current working directory).
std::shared_ptr<WslcRunner> make_process_runner(std::string wslc_path);

}  // namespace maf::sandbox::wslc
