#pragma once
// The stream channel of an interpreter context (docs/contexts.md CTX-11): the driver runs as
// one held-open exec_stream whose streamed stdin carries each call's code and whose stdout
// carries each answer, so a call launches nothing in the guest.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "maf/sandbox/fwd.hpp"

namespace maf::sandbox::detail {

struct ChannelState;

class ContextChannel {
public:
  /// Start `python3 -u -c BOOT` with the driver as its first frame. The exec runs on, on the
  /// caller's executor, until close(), abort() or the interpreter's end.
  static boost::asio::awaitable<std::shared_ptr<ContextChannel>> open(std::shared_ptr<Sandbox> sandbox);
  ~ContextChannel();

  /// One call: the answer's bytes, or none when neither an answer nor the end came within
  /// `timeout` + `grace` (the driver interrupts the code itself at `timeout`). SandboxStdinClosed
  /// or an empty answer with ended() true: the interpreter is gone.
  boost::asio::awaitable<std::optional<std::string>> call(const std::string& code, std::chrono::milliseconds timeout,
                                                          std::chrono::milliseconds grace);
  /// The interpreter's exec ended (any way).
  bool ended() const noexcept;
  /// How it ended, for a message: its exit status, or the error the exec raised, and the
  /// first of what it wrote on stderr.
  std::string ending() const;
  /// End of stdin; wait up to `bound` for the end, then stop it (abort) and wait for that.
  boost::asio::awaitable<void> close(std::chrono::milliseconds bound);
  /// Stop the interpreter now (the exec raises Cancelled inside, which ends it quietly).
  void abort() noexcept;

private:
  explicit ContextChannel(std::shared_ptr<ChannelState> state) : state_(std::move(state)) {}
  std::shared_ptr<ChannelState> state_;
};

}  // namespace maf::sandbox::detail
