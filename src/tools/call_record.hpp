#pragma once
// The tool layer's shared parts (src/tools/): what one attached tool is (ToolBinding), what
// one call did that its end must undo (ToolCallRecord), and the steps of a call each file
// owns — the call's events (call_events.cpp), its provenance labels (provenance_labels.cpp),
// its cleanup (call_cleanup.cpp); the session (session.cpp) and invoke/attach
// (sandboxed_tool.cpp) compose them. Private to the core.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "support/argument_schema.hpp"

namespace maf::sandbox::detail {

struct ToolBinding {
  ToolDefinition definition;
  ToolBody body;
  std::shared_ptr<SandboxRouter> router;
  CallerContext context;
  std::string agent_id;
  SandboxSpec spec;
  SandboxedToolOptions options;
  Cleanup rung = Cleanup::Dispose;
  std::unique_ptr<ArgumentSchema> schema;
  std::string backend;  // the serving backend's name at attach, for the events (may be empty)
};

/// One key the call was admitted for, and what it acquired there (null if acquire refused).
struct AdmittedKey {
  SandboxKey key;
  CallTicket ticket;
  std::shared_ptr<Sandbox> sandbox;
};

/// Everything one call did that its end has to undo. Never on the shared binding: concurrent
/// calls of one tool each have their own.
struct ToolCallRecord {
  std::mutex mutex;
  std::string call_id;
  std::string key_call_id;            // IsolationScope::Call only: a host-made name
  std::optional<std::string> name;    // the 12-hex directory name, once asked for
  std::vector<AdmittedKey> admitted;  // guarded by mutex
  bool closed = false;                // guarded by mutex
  bool refused = false;               // an acquire() of this call was refused; guarded by mutex
  Integrity read_floor = Integrity::Trusted;  // lowered by a weak or unknown read; guarded by mutex
  bool input_refused = false;  // record_file_read refused: its sentence quotes a path; guarded by mutex
  std::stop_token stop;
  // Background processes this call started (BG-10): its RECLAIM stops them. Guarded by mutex.
  std::vector<BackgroundProcess> background;
  // AGENT-7: sandboxes where the call was stopped while a program it started could not be
  // stopped (an exec without EXEC_STREAM, run_code): the rung escalates to DISPOSE there,
  // which ends it. Guarded by mutex.
  std::vector<const Sandbox*> unstoppable;
  // AGENT-8: the host's view of the call's output as it arrives (SandboxedTool::invoke).
  OutputHandler on_output;
};

/// AGENT-7: a program of `call` (null: of no call) in `sandbox`, which a stop of the call
/// ends — through exec_stream where the backend declares it (STR-10), else by the rung
/// escalated to DISPOSE (call_exec.cpp).
boost::asio::awaitable<ExecResult> exec_in_call(ToolCallRecord* call, Sandbox& sandbox, Command command,
                                                std::string working_directory, std::chrono::milliseconds timeout);

/// Guest output is untrusted data; the library's validation message may quote names the
/// model chose, so it is public but not trusted.
inline constexpr ContentLabels kValidationLabels{Integrity::Untrusted, Confidentiality::Public};

/// The binding a session serves; RuntimeError for a session that belongs to no tool call.
const ToolBinding& binding_of(const std::shared_ptr<const ToolBinding>& binding);

/// One ToolCallEvent of the tool layer to the router's observers. The key is the call's
/// (under CALL scope its call_id is the host-made name the sandbox's own events carry, which
/// is how the exporter links those to this call); call_id is the model's id.
void observe_call(const ToolBinding& b, ToolCallPhase phase, const std::string& call_id,
                  const std::optional<SandboxKey>& key, std::string error_type = {}, std::string traceparent = {},
                  std::optional<std::string> arguments = {}, std::optional<std::string> result = {}) noexcept;

/// One read of stored text (PROV-2, PROV-3, PROV-4): lowers `floor` when the text is untrusted
/// or unknown, and returns the refusal sentence when it is weaker than the kind accepts.
std::optional<std::string> judge_read(const ToolBinding& b, std::string_view path, Integrity& floor);

/// The labels of a finished call (PROV-1, PROV-3).
void stamp_labels(const ToolBinding& b, ToolResult& result, Integrity read_floor, bool library_made);

/// The spec of a tool with SandboxedToolOptions::host_tools: the registry's sealed aggregate
/// (and the exec transport's capabilities) added; ValueError when the spec carries another.
SandboxSpec with_host_tools(const std::string& tool, SandboxSpec spec, HostToolRegistry& registry);

/// The end of every call (result, refusal, exception, cancellation): close the record and
/// release every key it was admitted for with the rung owed (call_cleanup.cpp).
boost::asio::awaitable<void> finish_call(const ToolBinding& b, ToolCallRecord& call, std::chrono::milliseconds timeout);

}  // namespace maf::sandbox::detail
