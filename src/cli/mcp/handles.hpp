#pragma once
// Sandbox handles (docs/mcp.md "Sandbox handles"): how a client of the stateless 2026-07-28
// revision keeps one sandbox across calls. `open_sandbox` mints a handle; a later call passes
// it back as its `sandbox` argument; `close_sandbox` (or the idle timeout, or the server's
// exit) disposes the sandbox. The 2025 era's `--cleanup reclaim` keeps its session's sandbox
// as an implicit handle in the same table.
//
// A handle is 128 random bits from OpenSSL's RAND_bytes, checked against this table — not a
// signed token: the server must hold the sandbox's state anyway, so a table lookup proves
// everything a signature would (issued here, still open) and cannot outlive a key rotation
// or leak a key. It is bound to the server instance because no other instance has the entry
// (keyed by the handle's SHA-256, so lookups' timing never tracks a live handle's prefix),
// and it names no path, key or host: the sandbox's key (scope, the server's thread, agent
// "h<n>") stays inside the server. A forged, closed or expired handle is an is_error result
// saying which. Everything runs on the server's one io_context thread: no lock.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/spec.hpp"
#include "tools.hpp"

namespace maf::sandbox::mcp {

struct HandleLimits {
  /// A handle no call used for this long is closed (its sandbox disposed).
  std::chrono::milliseconds idle_timeout = std::chrono::minutes(10);
  /// At most this many handles open at once on this server; open_sandbox beyond is an error.
  std::size_t cap = 16;
};

class SandboxHandles {
public:
  /// `specs`: the server's configured specs, by kind (what open_sandbox may name). `base`:
  /// scope, the server's thread, sink and run_code of every handle's tools.
  SandboxHandles(boost::asio::any_io_executor executor, std::shared_ptr<SandboxRouter> router,
                 std::vector<SandboxSpec> specs, ToolsetOptions base, HandleLimits limits);

  /// A new handle for the spec named `kind` (empty: the first configured), or the sentence
  /// saying why not (unknown spec, cap reached). Nothing is acquired yet: the first call does.
  std::variant<std::string, ToolResult> open(const std::string& kind);
  /// The tools of an open handle (its last use is now, and it is busy until `release`), or
  /// the is_error sentence for a malformed, unknown, closed or expired one.
  std::variant<const std::vector<SandboxedTool>*, ToolResult> use(const std::string& handle);
  void release(const std::string& handle);
  /// Closes a handle and disposes its sandbox; the error sentence when it is not open.
  boost::asio::awaitable<ToolResult> close(std::string handle);
  /// Closes every handle idle past the timeout. Runs on its own every idle_timeout/4 (at
  /// most 5 s) once `start_reaper` was called, and at each use.
  boost::asio::awaitable<void> reap_idle();
  void start_reaper();
  /// Stops the reaper and disposes every open handle's sandbox (server exit).
  boost::asio::awaitable<void> close_all();

  std::size_t open_count() const noexcept { return open_.size(); }
  const HandleLimits& limits() const noexcept { return limits_; }
  const std::vector<SandboxSpec>& specs() const noexcept { return specs_; }

private:
  struct Entry {
    std::string agent;  ///< the key's agent: "h<n>", what logs name instead of the handle
    std::string kind;
    std::vector<SandboxedTool> tools;
    std::chrono::steady_clock::time_point last_used;
    int busy = 0;
  };
  boost::asio::awaitable<void> dispose(Entry entry, const char* why);
  void remember(const std::string& key, const char* why);

  boost::asio::any_io_executor executor_;
  std::shared_ptr<SandboxRouter> router_;
  std::vector<SandboxSpec> specs_;
  ToolsetOptions base_;
  HandleLimits limits_;
  /// Keyed by the handle's SHA-256 (handles.cpp `digest`), never the handle itself.
  std::map<std::string, Entry> open_;
  /// Handles closed or expired lately, and why (bounded): the error then says which.
  std::map<std::string, const char*> gone_;
  std::deque<std::string> gone_order_;
  unsigned long serial_ = 0;
  std::shared_ptr<bool> reaping_ = std::make_shared<bool>(false);
  std::shared_ptr<boost::asio::steady_timer> reaper_timer_;
};

}  // namespace maf::sandbox::mcp
