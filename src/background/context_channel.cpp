// An interpreter context's stream channel (docs/contexts.md CTX-11): one held-open
// exec_stream per interpreter; requests on its streamed stdin, answers framed on its stdout.
#include "background/context_channel.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <deque>

#include "background/context_driver.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/stdin_stream.hpp"

namespace maf::sandbox::detail {

namespace asio = boost::asio;

namespace {
/// A context lives this long at most (its exec's deadline and its longest silence): a day,
/// as a background program's default lifetime (BG-8).
constexpr std::chrono::hours kChannelLifetime{24};
/// The longest answer frame; the driver's own caps keep answers well under it (CTX-4).
constexpr std::size_t kMaxFrameBytes = std::size_t{16} << 20;
/// How much of the interpreter's stderr is kept for a message (it is /dev/null once served).
constexpr std::size_t kStderrHead = 2048;
}  // namespace

struct ChannelState {
  explicit ChannelState(const asio::any_io_executor& ex) : wake(ex) {}
  std::shared_ptr<StdinStream> in = StdinStream::create();
  std::string pending;               // stdout bytes not yet a whole frame
  std::deque<std::string> answers;   // whole frames not yet taken
  std::string stderr_head;
  bool ended = false;
  std::optional<int> exit_code;
  std::string failure;
  asio::steady_timer wake;  // cancelled on every answer and at the end

  /// CTX-9: the frames are bytes from the guest — a header that is not "<digits>\n" within
  /// 20 bytes, or a frame past the cap, is a broken channel (the handler's throw ends it).
  void take(std::string_view bytes) {
    pending.append(bytes);
    for (;;) {
      const std::size_t eol = pending.find('\n');
      if (eol == std::string::npos) {
        if (pending.size() > 20) throw OSError("interpreter context: the driver's frame header is not a length");
        return;
      }
      if (eol == 0 || eol > 9 || pending.find_first_not_of("0123456789") < eol)
        throw OSError("interpreter context: the driver's frame header is not a length");
      const std::size_t size = std::stoul(pending.substr(0, eol));
      if (size > kMaxFrameBytes)
        throw SandboxTransferCapExceeded("interpreter context: an answer of " + std::to_string(size) +
                                         " bytes is past " + std::to_string(kMaxFrameBytes));
      if (pending.size() < eol + 1 + size) return;
      answers.push_back(pending.substr(eol + 1, size));
      pending.erase(0, eol + 1 + size);
      wake.cancel();
    }
  }
};

ContextChannel::~ContextChannel() {
  if (state_) state_->in->close();  // end of file: the driver exits, and its exec with it
}

asio::awaitable<std::shared_ptr<ContextChannel>> ContextChannel::open(std::shared_ptr<Sandbox> sandbox) {
  const auto executor = co_await asio::this_coro::executor;
  auto state = std::make_shared<ChannelState>(executor);
  asio::co_spawn(
      executor,
      [sandbox, state]() -> asio::awaitable<void> {
        try {
          ExecStreamOptions options;
          options.timeout = kChannelLifetime;
          options.read_timeout = kChannelLifetime;
          options.stdin_stream = state->in;
          OutputHandler handler = [state](OutputStream stream, std::string_view bytes) {
            if (stream == OutputStream::Stdout) return state->take(bytes);
            const std::size_t room = kStderrHead - std::min(kStderrHead, state->stderr_head.size());
            state->stderr_head.append(bytes.substr(0, room));
          };
          const Command command({"python3", "-u", "-c", kContextBoot});
          const StreamedExit exit = co_await sandbox->exec_stream(command, handler, options);
          state->exit_code = exit.exit_code;
        } catch (const Cancelled&) {
          state->failure = "it was stopped";
        } catch (const std::exception& e) {
          state->failure = e.what();
        }
        state->ended = true;
        state->in->close();
        state->wake.cancel();
      },
      asio::detached);
  std::shared_ptr<ContextChannel> channel(new ContextChannel(state));
  const std::string driver(kPythonContextDriver);
  auto sending = state->in->write(std::to_string(driver.size()) + "\n" + driver);
  co_await std::move(sending);
  co_return channel;
}

asio::awaitable<std::optional<std::string>> ContextChannel::call(const std::string& code,
                                                                 std::chrono::milliseconds timeout,
                                                                 std::chrono::milliseconds grace) {
  ChannelState& s = *state_;
  s.answers.clear();  // a late answer of an abandoned call is never this one's
  auto sending = s.in->write(std::to_string(timeout.count()) + " " + std::to_string(code.size()) + "\n" + code);
  co_await std::move(sending);
  const auto deadline = std::chrono::steady_clock::now() + timeout + grace;
  while (s.answers.empty() && !s.ended && std::chrono::steady_clock::now() < deadline) {
    s.wake.expires_at(deadline);
    boost::system::error_code ignored;
    co_await s.wake.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  if (s.answers.empty()) co_return std::nullopt;
  std::string answer = std::move(s.answers.front());
  s.answers.pop_front();
  co_return answer;
}

bool ContextChannel::ended() const noexcept { return state_->ended; }

std::string ContextChannel::ending() const {
  const ChannelState& s = *state_;
  std::string said = s.exit_code ? "its interpreter exited with " + std::to_string(*s.exit_code)
                                 : (s.failure.empty() ? std::string("its interpreter ended") : s.failure);
  if (!s.stderr_head.empty()) said += ": " + s.stderr_head;
  return said;
}

asio::awaitable<void> ContextChannel::close(std::chrono::milliseconds bound) {
  ChannelState& s = *state_;
  s.in->close();
  for (int round = 0; round < 2 && !s.ended; ++round) {
    if (round == 1) s.in->abort();
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!s.ended && std::chrono::steady_clock::now() < deadline) {
      s.wake.expires_at(deadline);
      boost::system::error_code ignored;
      co_await s.wake.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }
}

void ContextChannel::abort() noexcept { state_->in->abort(); }

}  // namespace maf::sandbox::detail
