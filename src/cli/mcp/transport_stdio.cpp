#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "maf/sandbox/errors.hpp"
#include <spdlog/spdlog.h>

#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/router.hpp"
#include "transports.hpp"

namespace maf::sandbox::mcp {

namespace {

/// What the stdin reader thread may still reach once the server is going: nothing, after
/// close(). The reader is left blocked in read(2) at a signal; it must not post into an
/// io_context that is gone.
struct Inbox {
  std::mutex mutex;
  boost::asio::io_context* io = nullptr;
  std::function<void(std::string)> on_bytes;
  std::function<void()> on_end;

  void post(std::string bytes) {
    std::lock_guard lock(mutex);
    if (!io) return;
    boost::asio::post(*io, [f = on_bytes, b = std::move(bytes)] { f(b); });
  }
  void end() {
    std::lock_guard lock(mutex);
    if (!io) return;
    boost::asio::post(*io, on_end);
  }
  void close() {
    std::lock_guard lock(mutex);
    io = nullptr;
  }
};

void write_all(int fd, const std::string& text) {
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw OSError("mcp: cannot write to the client: " + std::string(std::strerror(errno)));
    off += static_cast<std::size_t>(n);
  }
}

}  // namespace

int serve_stdio(const ServeOptions& options) {
  // The protocol's own copy of stdout; fd 1 becomes stderr so stray prints stay out of it.
  const int protocol_fd = ::dup(STDOUT_FILENO);
  if (protocol_fd < 0) throw OSError("mcp: cannot duplicate stdout");
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  std::signal(SIGPIPE, SIG_IGN);

  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  bool client_gone = false;
  auto send = [&](const nlohmann::json& message) {
    if (client_gone) return;
    try {
      write_all(protocol_fd, message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    } catch (const std::exception& e) {
      client_gone = true;
      logger()->warn("{}; the session ends", e.what());
    }
  };
  const auto context = make_server_context(options, io.get_executor());
  McpSession session(io.get_executor(), context, send);
  LineFramer framer(
      options.max_message_bytes, [&](std::string line) { session.handle(line); },
      [&](std::size_t bytes) { session.refuse_oversize(bytes); });

  auto inbox = std::make_shared<Inbox>();
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  bool shutting_down = false;
  auto shutdown = [&](const char* why) {
    if (shutting_down) return;
    shutting_down = true;
    inbox->close();
    logger()->info("mcp: {}; finishing {} call(s) and disposing the conversation", why, session.calls_in_flight());
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          co_await session.drain(/*close_session_handle=*/false);
          co_await context->tasks->drain();  // tasks outlive requests, not the server
          // Every sandbox of this server — the session's, each handle's — is under its thread.
          const ScopePurge purge =
              co_await options.router->dispose_scope(options.toolset.scope, options.toolset.thread);
          co_await context->handles->close_all();  // the table emptied (and its reaper stopped)
          // Said on stderr whatever the log level: it is the session's last word to its operator.
          std::fprintf(stderr, "maf-sandbox mcp: disposed %d sandbox(es) of scope '%s' thread '%s'%s\n", purge.disposed,
                       options.toolset.scope.c_str(), options.toolset.thread.c_str(),
                       purge.undisposed ? "; some could not be disposed (see the log)" : "");
          // Nothing may keep io.run() going now: the signal wait and the guard are the last work.
          signals.cancel();
          guard.reset();
        },
        boost::asio::detached);
  };
  inbox->io = &io;
  inbox->on_bytes = [&](const std::string& bytes) {
    if (!shutting_down) framer.feed(bytes);
  };
  inbox->on_end = [&] {
    if (shutting_down) return;
    framer.finish();
    shutdown("the client closed stdin");
  };

  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (!ec) shutdown(signo == SIGINT ? "SIGINT" : "SIGTERM");
  });

  std::thread reader([inbox] {
    std::string buffer(64 * 1024, '\0');
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      inbox->post(buffer.substr(0, static_cast<std::size_t>(n)));
    }
    inbox->end();
  });
  io.run();
  signals.cancel();
  inbox->close();
  // At EOF the reader has returned; at a signal it may still sit in read(2), and joining it
  // would wait for a client that is not coming. It touches only the closed inbox.
  if (reader.joinable()) reader.detach();
  ::close(protocol_fd);
  return 0;
}

}  // namespace maf::sandbox::mcp
