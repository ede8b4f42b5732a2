#pragma once
// The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for run_command and run_code
// (docs/mcp.md "Tasks"): a 2026-07-28 client that declares the extension in its request's
// clientCapabilities gets `resultType: "task"` at once; `tasks/get` reports the status and,
// once completed, the CallToolResult inline — while working, the program's output so far
// (MCP-9); `tasks/cancel` stops the guest program (the
// tool's stop token: the program is killed and the cleanup rung runs). A task belongs to the
// server, not to the request or connection that started it, so it outlives both; a finished
// task is kept for its ttl, then forgotten. Without the extension the call stays synchronous.
// Task ids are 128 random bits, like sandbox handles (handles.hpp). One io_context thread.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "maf/sandbox/sandboxed_tool.hpp"

namespace maf::sandbox::mcp {

inline constexpr const char* kTasksExtension = "io.modelcontextprotocol/tasks";
/// The `_meta` key of a working task's output so far (MCP-9): this server's own name space.
inline constexpr const char* kTaskOutputMeta = "dev.maf-sandbox/output";

struct TaskLimits {
  /// How long a task (and its result) is kept from its creation.
  std::chrono::milliseconds ttl = std::chrono::minutes(30);
  /// How often a client is asked to poll.
  std::chrono::milliseconds poll_interval = std::chrono::milliseconds(500);
  /// At most this many tasks not yet finished; a call beyond runs synchronously.
  std::size_t max_running = 64;
};

class TaskTable {
public:
  /// `to_result`: a ToolResult as the CallToolResult a completed task carries.
  TaskTable(boost::asio::any_io_executor executor, TaskLimits limits,
            std::function<nlohmann::json(const ToolResult&)> to_result);

  bool full() const noexcept { return running_ >= limits_.max_running; }
  /// Starts `tool` on `call` as a task and answers its CreateTaskResult body (without
  /// resultType). `on_end` runs when the call ends, however (a handle's release).
  nlohmann::json start(SandboxedTool tool, ToolCall call, std::function<void()> on_end);
  /// The task's detailed state (tasks/get), or nullopt for an id this server does not hold.
  std::optional<nlohmann::json> get(const std::string& id);
  /// Asks a running task to stop (tasks/cancel); false for an unknown id. A finished task is
  /// left as it is.
  bool cancel(const std::string& id);
  /// Stops every running task and waits for each to end (server exit).
  boost::asio::awaitable<void> drain();

private:
  struct Task;
  boost::asio::awaitable<void> run(std::shared_ptr<Task> task, SandboxedTool tool, ToolCall call,
                                   std::function<void()> on_end);
  nlohmann::json describe(const Task& task) const;
  void forget_expired();

  boost::asio::any_io_executor executor_;
  TaskLimits limits_;
  std::function<nlohmann::json(const ToolResult&)> to_result_;
  std::map<std::string, std::shared_ptr<Task>> tasks_;
  std::size_t running_ = 0;
};

}  // namespace maf::sandbox::mcp
