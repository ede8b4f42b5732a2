#pragma once
// One MCP session (docs/mcp.md): the lifecycle (initialize, initialized, ping), tools/list,
// tools/call over the tool layer's SandboxedTool, notifications/cancelled and progress. It
// knows no transport — stdio and HTTP feed it messages and carry what it sends — and runs on
// one io_context thread: every handler and every tool call's continuation runs there, so the
// session needs no lock.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "jsonrpc.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/tool.hpp"

namespace maf::sandbox::mcp {

/// The protocol revisions this server speaks, newest first. The one place a new revision is
/// added: negotiate_protocol_version reads it and nothing else branches on a version.
inline constexpr std::array<std::string_view, 2> kProtocolVersions{"2025-11-25", "2025-06-18"};

/// The client's requested version when this server speaks it, else the newest it speaks (the
/// client then decides whether to go on, as the lifecycle says).
std::string negotiate_protocol_version(const nlohmann::json& requested);

/// A ToolResult as MCP's CallToolResult: text items as `text`; bytes as `image` or `audio` by
/// their media type, else an embedded `resource` blob; a landed artifact as a `resource_link`
/// to its file; the labels in each item's `_meta` under "maf-sandbox/labels"; `structured` as
/// `structuredContent`.
nlohmann::json to_call_tool_result(const ToolResult& result);

struct ServerIdentity {
  std::string name = "maf-sandbox";
  std::string version;
  std::string instructions;
};

class McpSession {
public:
  using Send = std::function<void(const nlohmann::json& message)>;

  /// `send` is called on the session's thread with each outgoing message, in order.
  McpSession(boost::asio::any_io_executor executor, std::vector<SandboxedTool> tools, ServerIdentity identity,
             Send send);
  McpSession(const McpSession&) = delete;
  McpSession& operator=(const McpSession&) = delete;
  ~McpSession();

  /// One incoming message's text.
  void handle(std::string_view text);
  /// A message the transport refused as too large to read (answered -32600, id null).
  void refuse_oversize(std::size_t bytes);
  /// Asks every running call to stop, then waits until each has returned (its cleanup rung
  /// run). Answers nothing more for them.
  boost::asio::awaitable<void> drain();

  bool initialized() const noexcept { return initialized_; }
  std::size_t calls_in_flight() const noexcept { return in_flight_.size(); }
  /// How often a call that asked for progress is told the server is still at it.
  static constexpr std::chrono::milliseconds kProgressInterval{1000};

private:
  struct Call;
  void dispatch(Message message);
  void start_call(const nlohmann::json& id, const nlohmann::json& params);
  void cancel(const nlohmann::json& params);
  boost::asio::awaitable<void> run_call(std::shared_ptr<Call> call, SandboxedTool tool, ToolCall tool_call);
  boost::asio::awaitable<void> report_progress(std::shared_ptr<Call> call);

  boost::asio::any_io_executor executor_;
  std::vector<SandboxedTool> tools_;
  ServerIdentity identity_;
  Send send_;
  bool initialized_ = false;
  std::string protocol_version_;
  /// Keyed by the id's JSON text, so 7 and "7" stay two requests.
  std::map<std::string, std::shared_ptr<Call>> in_flight_;
  std::shared_ptr<bool> alive_;
};

}  // namespace maf::sandbox::mcp
