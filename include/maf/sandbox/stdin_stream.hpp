#pragma once
/// @file stdin_stream.hpp
/// A streamed stdin (docs/exec-input.md STDIN-6…STDIN-10): bytes a host writes into a running
/// `exec_stream` program while it runs, then closes — a filter fed piece by piece, a REPL
/// held open between questions. Capability `exec_stdin_stream`.
///
/// The stream is a fresh close-on-exec pipe the library makes: the backend hands its read end
/// to exactly one program (never the host's stdin, never a terminal), the host writes the other.
/// A write returns once the pipe took every byte, so a program that stops reading holds the
/// writer back (the pipe's buffer is the only queue). Bounded: a write past
/// kMaxExecStdinBytes, or a total past the stream's `max_total_bytes`, is
/// SandboxTransferCapExceeded before a byte of it is written.
///
/// @code
///   auto in = StdinStream::create();
///   ExecStreamOptions options;  options.stdin_stream = in;
///   auto running = boost::asio::co_spawn(ex, sandbox->exec_stream(Command("wc -c"), print, options), use_awaitable);
///   co_await in->write("hello\n");
///   in->close();                           // end of file: wc prints 6 and exits
///   StreamedExit exit = co_await std::move(running);
/// @endcode
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {

/// The default bound on all bytes one stream may carry (STDIN-7).
inline constexpr std::uint64_t kDefaultStdinStreamTotalBytes = std::uint64_t{1} << 30;

/// A write found the program's stdin gone: the program closed it or ended, or the stream was
/// closed or aborted first (STDIN-8). Nothing more can be written.
class SandboxStdinClosed : public OSError {
public:
  explicit SandboxStdinClosed(const std::string& message) : OSError(message) {}
};

/// One program's streamed stdin. Made by `create`, given to one exec_stream
/// (ExecStreamOptions::stdin_stream); a second exec with the same stream is ValueError.
/// Writes must not overlap; `close` and `abort` may be called from anywhere, any time.
class StdinStream {
public:
  /// A fresh stream bounded at `max_total_bytes` (positive, else ValueError).
  static std::shared_ptr<StdinStream> create(std::uint64_t max_total_bytes = kDefaultStdinStreamTotalBytes);
  ~StdinStream();
  StdinStream(const StdinStream&) = delete;
  StdinStream& operator=(const StdinStream&) = delete;

  /// Write every byte of `bytes`, waiting while the program does not read (STDIN-6).
  /// SandboxTransferCapExceeded past a cap (nothing written); SandboxStdinClosed when the
  /// program's stdin is gone or the stream was closed.
  boost::asio::awaitable<void> write(std::string bytes);
  /// End of file for the program once it has read what was written (STDIN-6). Idempotent.
  void close() noexcept;
  /// End the program itself (STDIN-9): the exec_stream throws Cancelled after the program was
  /// stopped. For a program that no longer reads and will not end on its own.
  void abort() noexcept;
  /// Bytes written so far.
  std::uint64_t written() const noexcept { return written_.load(); }

  /// Backend side: the read end, owned by the caller from now on (close it once the program
  /// holds its copy). ValueError when the stream already served a program.
  int take_read_end();
  /// Backend side: requested once `abort()` was called.
  std::stop_token abort_token() const noexcept { return abort_.get_token(); }
  /// Core side, once the exec ended however: the read end is closed if no backend took it,
  /// so a writer sees SandboxStdinClosed and never waits forever.
  void finish() noexcept;

private:
  explicit StdinStream(std::uint64_t max_total_bytes);
  std::uint64_t max_total_bytes_;
  std::atomic<std::uint64_t> written_{0};
  mutable std::mutex mutex_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  bool taken_ = false;
  std::stop_source abort_;
};

}  // namespace maf::sandbox
