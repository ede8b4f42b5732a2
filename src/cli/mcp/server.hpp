#pragma once
// One MCP session (docs/mcp.md): the 2025 lifecycle (initialize, initialized, ping), the
// 2026-07-28 stateless requests (server/discover; era.hpp decides which a request speaks),
// tools/list, tools/call over the tool layer's SandboxedTool and the sandbox handle table,
// notifications/cancelled and progress. It knows no transport — stdio and HTTP feed it
// messages and carry what it sends — and runs on one io_context thread: every handler and
// every tool call's continuation runs there, so the session needs no lock.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <array>
#include <chrono>
#include <optional>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "era.hpp"
#include "handles.hpp"
#include "jsonrpc.hpp"
#include "tasks.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/tool.hpp"

namespace maf::sandbox::mcp {

/// The client's requested 2025-era version (kProtocolVersions, era.hpp) when this server speaks it, else the newest it speaks (the
/// client then decides whether to go on, as the lifecycle says).
std::string negotiate_protocol_version(const nlohmann::json& requested);

/// A ToolResult as MCP's CallToolResult: text items as `text`; bytes as `image` or `audio` by
/// their media type, else an embedded `resource` blob; a landed artifact as a `resource_link`
/// to its file; the labels in each item's `_meta` under "maf-sandbox/labels"; `structured` as
/// `structuredContent`.
nlohmann::json to_call_tool_result(const ToolResult& result);

/// The handle tools' names, and how long a client may cache tools/list and server/discover.
inline constexpr const char* kOpenSandbox = "open_sandbox";
inline constexpr const char* kCloseSandbox = "close_sandbox";
inline constexpr int kListTtlMs = 60000;

/// What the server says of itself: `serverInfo` (name, version) and `instructions` in
/// initialize and server/discover, and `_meta` io.modelcontextprotocol/serverInfo on every
/// 2026-07-28 result — named as the protocol names it (issue 44).
struct ServerInfo {
  std::string name = "maf-sandbox";
  std::string version;
  std::string instructions;
};

/// What every session of one server shares (one per `maf-sandbox mcp` process).
struct ServerContext {
  /// The 2025 era's tools, with --cleanup's rung (reclaim: a session handle is used instead).
  std::vector<SandboxedTool> legacy_tools;
  Cleanup legacy_cleanup = Cleanup::Dispose;
  /// The 2026-07-28 era's tools for a call without a handle: a fresh sandbox (Dispose).
  std::vector<SandboxedTool> stateless_tools;
  std::shared_ptr<SandboxHandles> handles;
  /// run_command / run_code as tasks, for 2026-07-28 clients declaring the extension.
  std::shared_ptr<TaskTable> tasks;
  ServerInfo info;
  /// What tools/list answers in both eras: the tools with their `sandbox` argument, and
  /// open_sandbox / close_sandbox.
  nlohmann::json tool_list;
};

class McpSession {
public:
  using Send = std::function<void(const nlohmann::json& message)>;

  /// `send` is called on the session's thread with each outgoing message, in order.
  McpSession(boost::asio::any_io_executor executor, std::shared_ptr<const ServerContext> server, Send send);
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;
  ~McpSession();

  /// One incoming message's text (stdio: no headers; the era is decided here).
  void handle(std::string_view text);
  /// One parsed message whose era the transport decided (decide_era, with its headers).
  void handle(Message message, const EraDecision& era);
  /// A message the transport refused as too large to read (answered -32600, id null).
  void refuse_oversize(std::size_t bytes);
  /// Asks every running call to stop, then waits until each has returned (its cleanup rung
  /// run). Answers nothing more for them. Then closes the session's own handle (--cleanup
  /// reclaim), unless `close_session_handle` is false: the caller disposes the whole thread
  /// itself and counts what it finds.
  boost::asio::awaitable<void> drain(bool close_session_handle = true);

  bool initialized() const noexcept { return initialized_; }
  std::size_t calls_in_flight() const noexcept { return in_flight_.size(); }
  /// How often a call that asked for progress is told the server is still at it.
  static constexpr std::chrono::milliseconds kProgressInterval{1000};

private:
  struct Call;
  void dispatch(Message message);
  void dispatch_modern(Message message, const EraDecision& era);
  void task_request(const Message& message);
  /// A result as the request's era wants it: 2026-07-28 adds resultType and serverInfo.
  nlohmann::json answer(Era era, const nlohmann::json& id, nlohmann::json result) const;
  nlohmann::json discover_result() const;
  /// `as_task`: the client declared the Tasks extension (a long tool then answers a task).
  void start_call(const nlohmann::json& id, const nlohmann::json& params, Era era, bool as_task = false);
  void cancel(const nlohmann::json& params);
  boost::asio::awaitable<void> run_call(std::shared_ptr<Call> call, SandboxedTool tool, ToolCall tool_call);
  boost::asio::awaitable<void> close_handle(std::shared_ptr<Call> call, std::string handle);
  boost::asio::awaitable<void> report_progress(std::shared_ptr<Call> call);
  void finish(const std::shared_ptr<Call>& call, std::optional<nlohmann::json> answer);

  boost::asio::any_io_executor executor_;
  std::shared_ptr<const ServerContext> server_;
  Send send_;
  /// The 2025 era with --cleanup reclaim: this session's sandbox, a handle of the table.
  std::string session_handle_;
  bool initialized_ = false;
  std::string protocol_version_;
  /// Keyed by the id's JSON text, so 7 and "7" stay two requests.
  std::map<std::string, std::shared_ptr<Call>> in_flight_;
  std::shared_ptr<bool> alive_;
};

}  // namespace maf::sandbox::mcp
