#include "tasks.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <openssl/rand.h>

#include <cstdint>
#include <ctime>
#include <string_view>

#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"

namespace maf::sandbox::mcp {

namespace {

std::string iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

std::string new_task_id() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw RuntimeError("mcp: OpenSSL RAND_bytes failed; no task id minted");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "task-";
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

}  // namespace

struct TaskTable::Task {
  std::string id;
  std::string tool;
  std::string status = "working";  // working, completed, cancelled (never failed: errors are results)
  std::chrono::system_clock::time_point created = std::chrono::system_clock::now();
  std::chrono::system_clock::time_point updated = created;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::stop_source stop;
  bool cancel_asked = false;
  bool ended = false;
  nlohmann::json result;  // completed: the CallToolResult
  // MCP-9: the program's output so far, the last kOutputTail bytes of each stream.
  std::string stdout_tail, stderr_tail;
  std::uint64_t stdout_bytes = 0, stderr_bytes = 0;
};

namespace {

/// How much of each stream a running task keeps and shows (the newest bytes).
constexpr std::size_t kOutputTail = 16 * 1024;
/// How much of it the human-readable statusMessage quotes.
constexpr std::size_t kStatusTail = 2 * 1024;

void keep_tail(std::string& tail, std::string_view bytes) {
  tail.append(bytes);
  if (tail.size() > kOutputTail) tail.erase(0, tail.size() - kOutputTail);
}

std::string last(const std::string& s, std::size_t n) { return s.size() > n ? s.substr(s.size() - n) : s; }

}  // namespace

TaskTable::TaskTable(boost::asio::any_io_executor executor, TaskLimits limits,
                     std::function<nlohmann::json(const ToolResult&)> to_result)
    : executor_(std::move(executor)), limits_(limits), to_result_(std::move(to_result)) {}

nlohmann::json TaskTable::start(SandboxedTool tool, ToolCall call, std::function<void()> on_end) {
  forget_expired();
  auto task = std::make_shared<Task>();
  task->id = new_task_id();
  task->tool = call.name;
  tasks_.emplace(task->id, task);
  ++running_;
  boost::asio::co_spawn(executor_, run(task, std::move(tool), std::move(call), std::move(on_end)),
                        boost::asio::detached);
  return describe(*task);
}

boost::asio::awaitable<void> TaskTable::run(std::shared_ptr<Task> task, SandboxedTool tool, ToolCall call,
                                            std::function<void()> on_end) {
  // MCP-9: what the program wrote so far, for tasks/get (the task outlives this frame's use).
  const std::weak_ptr<Task> watched = task;
  const OutputHandler on_output = [watched](OutputStream stream, std::string_view bytes) {
    const auto t = watched.lock();
    if (!t) return;
    const bool out = stream == OutputStream::Stdout;
    keep_tail(out ? t->stdout_tail : t->stderr_tail, bytes);
    (out ? t->stdout_bytes : t->stderr_bytes) += bytes.size();
    t->updated = std::chrono::system_clock::now();
  };
  try {
    const ToolResult r = co_await tool.invoke(std::move(call), task->stop.get_token(), on_output);
    task->result = to_result_(r);
    task->status = "completed";
  } catch (const Cancelled&) {
    task->status = "cancelled";  // the program was stopped and the cleanup rung ran
  } catch (const std::exception& e) {
    logger()->error("mcp: task of '{}' failed: {}", task->tool, e.what());
    task->result = to_result_(ToolResult::error(kRefusalSandboxUnavailable));
    task->status = "completed";
  }
  task->ended = true;
  task->updated = std::chrono::system_clock::now();
  --running_;
  if (on_end) on_end();
}

nlohmann::json TaskTable::describe(const Task& task) const {
  nlohmann::json j{{"taskId", task.id},
                   {"status", task.status},
                   {"createdAt", iso8601(task.created)},
                   {"lastUpdatedAt", iso8601(task.updated)},
                   {"ttlMs", limits_.ttl.count()},
                   {"pollIntervalMs", limits_.poll_interval.count()}};
  if (task.status == "working") {
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - task.started).count();
    std::string message = task.tool + (task.cancel_asked ? " is being cancelled" : " running for " +
                                                                                       std::to_string(seconds) + " s");
    // MCP-9: the output so far — the statusMessage quotes its newest bytes for a person; the
    // `_meta` entry carries each stream's newest 16 KiB and byte counts for a program. Guest
    // output, untrusted, as in a result (docs/mcp.md "Tasks").
    if (task.stdout_bytes + task.stderr_bytes > 0) {
      message += "; output so far (untrusted guest output, newest bytes):";
      if (task.stdout_bytes) message += "\n--- stdout ---\n" + last(task.stdout_tail, kStatusTail);
      if (task.stderr_bytes) message += "\n--- stderr ---\n" + last(task.stderr_tail, kStatusTail);
      j["_meta"][kTaskOutputMeta] = {{"stdout", task.stdout_tail},
                                     {"stderr", task.stderr_tail},
                                     {"stdoutBytes", task.stdout_bytes},
                                     {"stderrBytes", task.stderr_bytes},
                                     {"tailBytes", kOutputTail},
                                     {"untrusted", true}};
    }
    j["statusMessage"] = std::move(message);
  } else if (task.status == "completed") {
    nlohmann::json result = task.result;
    result["resultType"] = "complete";
    j["result"] = std::move(result);
  }
  return j;
}

std::optional<nlohmann::json> TaskTable::get(const std::string& id) {
  forget_expired();
  const auto it = tasks_.find(id);
  if (it == tasks_.end()) return std::nullopt;
  return describe(*it->second);
}

bool TaskTable::cancel(const std::string& id) {
  const auto it = tasks_.find(id);
  if (it == tasks_.end()) return false;
  Task& t = *it->second;
  if (!t.ended && !t.cancel_asked) {
    t.cancel_asked = true;
    t.updated = std::chrono::system_clock::now();
    t.stop.request_stop();
  }
  return true;
}

void TaskTable::forget_expired() {
  const auto now = std::chrono::system_clock::now();
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    // A running task is never forgotten: its sandbox's own ttl bounds it (docs/mcp.md "Tasks").
    if (it->second->ended && now - it->second->created > limits_.ttl) it = tasks_.erase(it);
    else ++it;
  }
}

boost::asio::awaitable<void> TaskTable::drain() {
  for (auto& [id, task] : tasks_)
    if (!task->ended) {
      task->cancel_asked = true;
      task->stop.request_stop();
    }
  boost::asio::steady_timer timer(executor_);
  while (running_ > 0) {
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
}

}  // namespace maf::sandbox::mcp
