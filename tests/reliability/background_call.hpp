#pragma once
// One sandbox call on its own thread and runner, so a test can act on the engine (kill the
// container, restart the daemon) while the call is in flight.

#include <atomic>
#include <exception>
#include <functional>
#include <string>
#include <thread>

#include "guest_race.hpp"
#include "maf/sandbox/sync.hpp"

namespace reliability {

class BackgroundCall {
public:
  /// `call` returns a short description of its success ("exit 0", "written").
  explicit BackgroundCall(std::function<boost::asio::awaitable<std::string>()> call)
      : thread_([this, call = std::move(call)] {
          maf::sandbox::BlockingRunner run;
          try {
            done_ = run(call);
          } catch (const maf::sandbox::Error& e) {
            done_ = error_type(e);
            failed_ = true;
          } catch (const std::exception& e) {
            done_ = std::string("untyped: ") + e.what();
            failed_ = true;
          }
          finished_ = true;
        }) {}
  BackgroundCall(const BackgroundCall&) = delete;
  BackgroundCall& operator=(const BackgroundCall&) = delete;
  ~BackgroundCall() {
    if (thread_.joinable()) thread_.join();
  }
  /// Waits for the call: its description, or the type of the error it raised ("OSError").
  const std::string& outcome() {
    if (thread_.joinable()) thread_.join();
    return done_;
  }
  bool failed() {
    outcome();
    return failed_;
  }
  /// Whether the call has returned, without waiting.
  bool finished() const { return finished_; }

private:
  std::string done_;
  bool failed_ = false;
  std::atomic<bool> finished_{false};
  std::thread thread_;  // last: it starts once the results above exist
};

/// An exec in the background; succeeds as "exit N" with its stdout kept in `out`.
inline std::function<boost::asio::awaitable<std::string>()> exec_call(std::shared_ptr<maf::sandbox::Sandbox> sb,
                                                                      std::string line,
                                                                      std::chrono::milliseconds timeout,
                                                                      std::string* out = nullptr) {
  return [sb, line, timeout, out]() -> boost::asio::awaitable<std::string> {
    maf::sandbox::Command command(line);
    std::string dot = ".";
    maf::sandbox::ExecResult r = co_await sb->exec(std::move(command), std::move(dot), timeout);
    if (out) *out = r.stdout_text();
    co_return "exit " + std::to_string(r.exit_code);
  };
}

}  // namespace reliability
