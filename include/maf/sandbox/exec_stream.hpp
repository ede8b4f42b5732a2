#pragma once
/// @file exec_stream.hpp
/// Streaming exec (docs/streaming.md, STR-1…STR-9): a program's stdout and stderr handed to
/// the caller chunk by chunk as the guest produces them, instead of once at exit.
///
/// Three bounds, kept apart because hosts confuse them (the failure reports of every hosted
/// sandbox service): `timeout` is the *command's* deadline from the call (TimeoutError, as
/// for exec); `read_timeout` is the longest *silence* tolerated — no byte on either stream —
/// before the program is ended (SandboxStreamIdle); the backend's output caps still end a
/// program that writes past them (SandboxTransferCapExceeded). A transport's own timeouts
/// (an HTTP read, a CLI client) never bound a stream that is still producing.
///
/// Light: no Asio. `Sandbox::exec_stream` (sandbox.hpp) takes these types.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <stop_token>
#include <memory>
#include <string>
#include <string_view>

#include "maf/sandbox/call_defaults.hpp"
#include "maf/sandbox/exec_input.hpp"
#include "maf/sandbox/resource_limits.hpp"

namespace maf::sandbox {

class StdinStream;  // stdin_stream.hpp

/// Which of the program's two output streams a chunk came from.
enum class OutputStream { Stdout, Stderr };

/// "stdout" or "stderr".
constexpr const char* to_string(OutputStream stream) noexcept {
  return stream == OutputStream::Stdout ? "stdout" : "stderr";
}

/// Receives each chunk as it arrives, on the caller's executor, in the order the backend read
/// them (per stream in order; the interleaving of the two streams is the backend's reading
/// order, not a guarantee of the guest's write order). The view is valid only during the
/// call; chunk boundaries carry no meaning (a line may arrive in pieces). Throwing ends the
/// program: the exception propagates out of exec_stream unchanged, after the program was
/// stopped (STR-6). Must not block — it runs inside the read loop.
using OutputHandler = std::function<void(OutputStream stream, std::string_view bytes)>;

/// Default longest silence of a stream (STR-4).
inline constexpr std::chrono::milliseconds kDefaultStreamReadTimeout{60'000};

/// How one streamed exec runs. Every field has the value exec would use.
struct ExecStreamOptions {
  /// Resolved like exec's `working_directory` (C-38, C-99).
  std::string working_directory = ".";
  /// The command's own deadline, wall-clock from the call (C-40): TimeoutError.
  std::chrono::milliseconds timeout = kDefaultExecTimeout;
  /// The longest time with no byte on either stream before the program is ended:
  /// SandboxStreamIdle. Must be positive; it may exceed `timeout` (then only the deadline
  /// can fire).
  std::chrono::milliseconds read_timeout = kDefaultStreamReadTimeout;
  /// The command's own environment and one-shot stdin, as for exec (docs/exec-input.md).
  ExecInput input{};
  /// Requesting stop ends the program — its whole process group in the guest, on every
  /// backend that declares EXEC_STREAM — and exec_stream then throws Cancelled (STR-10). A
  /// program that exited first is reported as usual.
  std::stop_token stop{};
  /// A stdin the caller writes while the program runs (stdin_stream.hpp, STDIN-6); absent:
  /// `input.stdin_bytes` or a closed stdin. Not with `input.stdin_bytes` (ValueError). Needs
  /// Capability::ExecStdinStream.
  std::shared_ptr<StdinStream> stdin_stream{};
};

/// How a streamed program ended by itself. The bytes went to the handler and are not kept.
struct StreamedExit {
  int exit_code = 0;                 ///< the program's own status, never normalised (C-39)
  ResourceBoundSet limits_hit{};     ///< as ExecResult::limits_hit (LIM-6)
  std::uint64_t stdout_bytes = 0;    ///< bytes handed to the handler from stdout
  std::uint64_t stderr_bytes = 0;    ///< bytes handed to the handler from stderr
  friend bool operator==(const StreamedExit&, const StreamedExit&) = default;
};

/// What a backend's do_exec_stream reports; the core turns every ending but `Exited` into
/// one error type, the same on every backend (STR-3…STR-6).
struct StreamOutcome {
  enum class End {
    Exited,           ///< the program exited by itself: `exit_code` is its status
    DeadlineExpired,  ///< the request's deadline passed; the program was stopped
    ReadTimedOut,     ///< `read_timeout` passed with no byte; the program was stopped
    OverCap,          ///< `cap_stream` passed the backend's cap; the program was stopped
    Stopped,          ///< ExecOutputSink::deliver returned false; the program was stopped
  };
  End end = End::Exited;
  int exit_code = 0;
  ResourceBoundSet limits_hit{};
  OutputStream cap_stream = OutputStream::Stdout;  ///< for OverCap
  std::string cap_name;                            ///< for OverCap, e.g. "max_stdout_bytes"
  std::uint64_t cap_bytes = 0;                     ///< for OverCap: the cap's value

  static StreamOutcome exited(int code, ResourceBoundSet hit = {}) {
    StreamOutcome o;
    o.exit_code = code;
    o.limits_hit = hit;
    return o;
  }
  static StreamOutcome ended(End why) {
    StreamOutcome o;
    o.end = why;
    return o;
  }
  static StreamOutcome over_cap(OutputStream stream, std::string name, std::uint64_t bytes) {
    StreamOutcome o;
    o.end = End::OverCap;
    o.cap_stream = stream;
    o.cap_name = std::move(name);
    o.cap_bytes = bytes;
    return o;
  }
};

/// Where a backend's do_exec_stream hands each chunk. Made by the core around the caller's
/// handler: it counts, forwards and keeps the handler's exception. A backend calls `deliver`
/// for every chunk, in reading order, never two at once, and ends the program as soon as it
/// returns false (then reports StreamOutcome::End::Stopped).
class ExecOutputSink {
public:
  explicit ExecOutputSink(OutputHandler handler) : handler_(std::move(handler)) {}
  ExecOutputSink(const ExecOutputSink&) = delete;
  ExecOutputSink& operator=(const ExecOutputSink&) = delete;

  /// Forward one chunk (empty chunks are dropped). False once the handler has thrown: the
  /// program must be ended and nothing more delivered.
  bool deliver(OutputStream stream, std::string_view bytes) noexcept;
  /// Bytes delivered so far from `stream`.
  std::uint64_t total(OutputStream stream) const noexcept {
    return stream == OutputStream::Stdout ? stdout_total_ : stderr_total_;
  }
  /// The handler's exception, if it threw.
  std::exception_ptr failure() const noexcept { return failure_; }

private:
  OutputHandler handler_;
  std::exception_ptr failure_;
  std::uint64_t stdout_total_ = 0;
  std::uint64_t stderr_total_ = 0;
};

}  // namespace maf::sandbox
