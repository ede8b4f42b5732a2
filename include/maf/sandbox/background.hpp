#pragma once
/// @file background.hpp
/// Background processes (docs/background.md, BG-1…BG-10): start a program in a sandbox and get
/// a handle — poll it, wait for it with a timeout, signal its whole process group, read its
/// output so far — and find it again by id from a later call, even from another handle or
/// host process. Capability `background`.
///
/// The state lives in the guest, under `<storage base>/.maf-background/<id>/`: a supervisor
/// shell started by one exec records the program's process group, its stdout and stderr,
/// and its exit status, and forwards the signals later calls ask for. A handle is only the
/// sandbox and the id; nothing is kept in host memory.
///
/// @code
///   auto p = co_await start_background(sandbox, Command("make -j2 > /dev/null; echo built"));
///   auto s = co_await p.wait(std::chrono::seconds(5));      // s.running: still building
///   auto again = co_await find_background(sandbox, p.id());  // a later call, same sandbox
///   co_await again.signal(SIGTERM);
///   auto out = co_await again.output(64 * 1024);             // out.stdout_truncated: over 64 KiB
/// @endcode
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/command.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_input.hpp"

namespace maf::sandbox {

/// No background process of this id in this sandbox (never started, or its sandbox was
/// reset or replaced). `id()` is the id looked up.
class BackgroundProcessNotFound : public LookupError {
public:
  BackgroundProcessNotFound(const std::string& message, std::string id)
      : LookupError(message), id_(std::move(id)) {}
  const std::string& id() const noexcept { return id_; }

private:
  std::string id_;
};

/// How a background process is started. Every field has the safe default.
struct BackgroundOptions {
  /// Where the program runs; relative values resolve under the storage base, as for exec.
  std::string working_directory = ".";
  /// The id to file it under (BG-6: 16 characters of [a-z0-9]); absent: a random one.
  std::optional<std::string> id{};
  /// The longest the program may run (BG-8): past it the guest-side supervisor kills the
  /// program's group (whole seconds, rounded up; never early, at most ~1.5 s late) and its
  /// status says `expired`. The sandbox stays: the lifetime ends the program, not the sandbox.
  std::chrono::milliseconds lifetime = std::chrono::hours(24);
  /// Bound on the start: until the supervisor has recorded the program's process group.
  std::chrono::milliseconds start_timeout = std::chrono::seconds(30);
  /// The program's own environment (docs/exec-input.md ENV-6): given to the supervisor's exec
  /// and inherited by the program. `stdin_bytes` is refused (ValueError): a background
  /// program's stdin stays closed.
  ExecInput input{};
};

/// Where a background process is. `exit_code` is set once it ended: the program's own
/// status, or 128 + N when a signal N ended it (the shell's convention, BG-2).
struct BackgroundStatus {
  bool running = true;
  std::optional<int> exit_code{};
  /// Ended by its lifetime (BackgroundOptions::lifetime, BG-8): the supervisor's SIGKILL, so
  /// `exit_code` is 137. Apart from a `stop()` or a program that exited by itself.
  bool expired = false;
};

/// What a background process wrote so far, each stream under the cap it was read with.
/// A stream over the cap is cut at the cap and says so (BG-3): never silently.
struct BackgroundOutput {
  std::string stdout_bytes;
  std::string stderr_bytes;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
};

/// A handle on one background process: its sandbox and its id, nothing else. Cheap to copy;
/// every call is an exec in the sandbox.
class BackgroundProcess {
public:
  BackgroundProcess(std::shared_ptr<Sandbox> sandbox, std::string id);

  const std::string& id() const noexcept { return id_; }
  /// The guest directory that holds its state (absolute).
  const std::string& directory() const noexcept { return directory_; }
  /// The sandbox it runs in.
  Sandbox& sandbox() const noexcept { return *sandbox_; }

  /// Running, or ended with its exit code. BackgroundProcessNotFound when its state is gone.
  boost::asio::awaitable<BackgroundStatus> poll() const;
  /// Until it ends or `timeout` (positive, else ValueError) passes; a wait that times out
  /// returns `running`, it does not throw.
  boost::asio::awaitable<BackgroundStatus> wait(std::chrono::milliseconds timeout) const;
  /// Send signal number `signal` (1…64, else ValueError) to the program's whole process group
  /// (BG-4) and return once the supervisor delivered it: true, or false when the program had
  /// already ended (nothing is sent then).
  boost::asio::awaitable<bool> signal(int signal) const;
  /// What it wrote so far; `max_bytes` per stream (not negative, else ValueError).
  boost::asio::awaitable<BackgroundOutput> output(std::int64_t max_bytes = 1 << 20) const;
  /// SIGKILL to the group, then wait up to `timeout` for it to end (the cleanup rungs' stop).
  boost::asio::awaitable<BackgroundStatus> stop(std::chrono::milliseconds timeout) const;

private:
  std::shared_ptr<Sandbox> sandbox_;
  std::string id_;
  std::string directory_;
};

/// BG-1: start `command` (argv or shell line, not empty) to run on after this returns.
/// NotImplementedError naming backend and kind when the sandbox does not declare BACKGROUND;
/// ValueError for an empty command, a malformed id or one already used in this sandbox.
boost::asio::awaitable<BackgroundProcess> start_background(std::shared_ptr<Sandbox> sandbox, Command command,
                                                           const BackgroundOptions& options);
/// start_background with the default options.
boost::asio::awaitable<BackgroundProcess> start_background(std::shared_ptr<Sandbox> sandbox, Command command);

namespace detail {
template <class>
inline constexpr bool kNamedOptionsRequired = false;
}  // namespace detail

/// Refused at compile time: GCC 12 destroys a braced BackgroundOptions temporary in a
/// co_await expression twice, and one outside it would be gone before the lazy awaitable
/// runs. Name the options first (docs/tools.md "GCC 12 and temporaries").
template <class Refused = BackgroundOptions>
boost::asio::awaitable<BackgroundProcess> start_background(std::shared_ptr<Sandbox>, Command, BackgroundOptions&&) {
  static_assert(detail::kNamedOptionsRequired<Refused>,
                "name the options first: `const BackgroundOptions options{...}; co_await start_background(sandbox, "
                "command, options);` — GCC 12 destroys a braced temporary in a co_await expression twice");
  return {};
}

/// BG-5: the handle of the background process `id` of this sandbox; BackgroundProcessNotFound
/// naming the id when there is none, ValueError when the id is malformed.
boost::asio::awaitable<BackgroundProcess> find_background(std::shared_ptr<Sandbox> sandbox, std::string id);

/// BG-6: refuse (ValueError naming it) an id that is not 16 characters of [a-z0-9].
void validate_background_id(std::string_view id);

}  // namespace maf::sandbox
