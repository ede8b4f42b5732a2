#pragma once
/// @file sandboxed_tool.hpp
/// `sandboxed_tool(...)` (docs/tools.md, issue 26 item 2): a tool whose body runs against a
/// sandbox, with the arguments checked against the input schema before anything runs, call
/// admission per (key, kind), a private call directory (`guest_call_path`, C-120) and the
/// cleanup rung after every call (docs/tools.md "The cleanup ladder"). docs/tools.md is the guide.
///
/// @code
///   SandboxedTool tool = sandboxed_tool(
///       [](SandboxToolSession session, nlohmann::json args) -> boost::asio::awaitable<ToolResult> {
///         auto sandbox = co_await session.acquire();
///         if (!sandbox) co_return ToolResult::error(sandbox.refusal());
///         const std::string dir = session.guest_call_path();  // "3f2a9c0d1b4e": removed after the call
///         const Command run = "mkdir -p " + dir + " && cd " + dir + " && " + args["command"].get<std::string>();
///         auto r = co_await session.exec(**sandbox, run);  // host tools reachable, when attached
///         co_return ToolResult::text(r.stdout_text());
///       },
///       host, fixed_conversation("my-app", "conversation-1"), "agent-1", spec, "shell",
///       {.input_schema = schema, .cleanup = {.rung = rung_for(BetweenCalls::KeepSandbox)}});
///   ToolResult r = co_await tool.invoke(call);  // an error result, never an exception, for a bad call
/// @endcode
///
/// The session handed to a body is a per-call record (C++ has no task-local context): a copy
/// kept past the call still refuses `guest_call_path()` with RuntimeError, and its `acquire()`
/// no longer records into the call (nothing would clean up after it).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/background.hpp"
#include "maf/sandbox/between_calls.hpp"
#include "maf/sandbox/call_admission.hpp"
#include "maf/sandbox/call_defaults.hpp"
#include "maf/sandbox/caller_context.hpp"
#include "maf/sandbox/cleanup.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/exec_stream.hpp"
#include "maf/sandbox/file_provenance.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/named_argument.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/tool.hpp"

namespace maf::sandbox {

/// The fixed sentences of C-119. A model sees these and nothing else; the detail is logged.
inline constexpr const char* kRefusalNoBackend = "Error: no sandbox backend is configured — degrading to T0";
inline constexpr const char* kRefusalSandboxUnavailable =
    "Error: sandbox unavailable — degrading to T0 (LLM self-check only)";
/// The no-thread refusal: "Error: no active thread context — <tool> must be called from within
/// a thread".
std::string no_thread_refusal(const std::string& tool_name);

/// A value, or the refusal sentence the tool should return instead (C-119).
template <class T>
class Refusable {
public:
  Refusable(T value) : value_(std::move(value)) {}  // NOLINT: implicit, like std::optional
  static Refusable refused(std::string sentence) { return Refusable(std::nullopt, std::move(sentence)); }

  bool has_value() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  /// The refusal sentence; empty when there is a value.
  const std::string& refusal() const noexcept { return refusal_; }
  /// The value, or SandboxToolRefused carrying the sentence (invoke turns it into the
  /// is_error result).
  T& value() {
    if (!value_) throw SandboxToolRefused(refusal_);
    return *value_;
  }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }

private:
  Refusable(std::nullopt_t, std::string sentence) : refusal_(std::move(sentence)) {}
  std::optional<T> value_;
  std::string refusal_;
};

namespace detail {
struct ToolBinding;
struct ToolCallRecord;
}  // namespace detail

/// What a tool body is handed, per call: host configuration plus this call's record.
class SandboxToolSession {
public:
  /// A session outside any call: guest_call_path() raises RuntimeError.
  SandboxToolSession() = default;

  /// The tool's name, as the model sees it.
  const std::string& name() const;
  /// The model's call id (for correlation and logs only; never part of a key, C-14).
  const std::string& call_id() const;
  const SandboxSpec& spec() const;
  /// The sink sandboxed_tool checked the spec against (null if none).
  std::shared_ptr<OutputSink> output_sink() const;
  /// Set when the host asked the call to stop; pass it on to backends that take one.
  std::stop_token stop_token() const;

  /// The key of this call, or the no-thread refusal (C-119, C-17). Scope and thread come from
  /// the host's CallerContext; for IsolationScope::Call, `call_id` is a fresh host-made name
  /// per call, never the model's id.
  Refusable<SandboxKey> key() const;
  /// Admission for (key, kind), then the router's acquire; a failure is one of the C-119
  /// sentences: no backend; a ValueError shown verbatim; anything else (an unclean key, an
  /// admission timeout, a provider failure) the fixed "sandbox unavailable" sentence, the
  /// detail only in logs. The sandbox is recorded into the call for cleanup.
  boost::asio::awaitable<Refusable<std::shared_ptr<Sandbox>>> acquire(SandboxKey key) const;
  /// key(), then acquire(key).
  boost::asio::awaitable<Refusable<std::shared_ptr<Sandbox>>> acquire() const;

  /// C-120 (the later, relative form): this call's directory, relative to the storage base —
  /// use it with working_directory ".". One random 12-hex-digit name per call, made on first
  /// use; nothing is created. RuntimeError outside a call or after it returned.
  std::string guest_call_path() const;

  /// The body read stored text at `path` (a store path, file_provenance.hpp) to feed this
  /// call — record it *before* executing what it feeds. An untrusted or unknown read weakens
  /// every derived item of the result to untrusted (a trusted read never promotes them); a
  /// read weaker than `requires_file_integrity` throws SandboxToolRefused, which ends the call
  /// with its sentence (PROV-3, PROV-4). A malformed path is refused the same way.
  void record_file_read(std::string_view path) const;
  /// Start a background process (background.hpp) that belongs to this call: the call's
  /// RECLAIM rung stops it (SIGKILL to its group) and forgets it before it removes the call's
  /// directory; one it cannot stop escalates the rung to DISPOSE (docs/background.md BG-10).
  /// `sandbox` is one this call acquired. RuntimeError outside a call or after it returned.
  /// A process the host starts with start_background itself belongs to no call and outlives
  /// them all.
  boost::asio::awaitable<BackgroundProcess> start_background(std::shared_ptr<Sandbox> sandbox, Command command,
                                                             const BackgroundOptions& options) const;
  /// start_background with the default options.
  boost::asio::awaitable<BackgroundProcess> start_background(std::shared_ptr<Sandbox> sandbox, Command command) const;
  /// Refused at compile time: a braced temporary in a co_await expression is destroyed twice
  /// by GCC 12 (docs/tools.md "GCC 12 and temporaries"). Name the options first.
  template <class Refused = BackgroundOptions>
  boost::asio::awaitable<BackgroundProcess> start_background(std::shared_ptr<Sandbox>, Command, BackgroundOptions&&) const {
    static_assert(detail::kNamedArgumentRequired<Refused>,
                  "GCC 12 destroys a braced temporary in a co_await expression twice: name the options first "
                  "(`const BackgroundOptions options{...}; co_await session.start_background(sb, cmd, options);`)");
    return {};
  }

  /// Run `command` in `sandbox` (one this call acquired) with this tool's host tools
  /// reachable from it: with SandboxedToolOptions::host_tools, through run_with_host_tools
  /// with a HostToolRun of this call (its own dispatch count and byte ledger; stdout is then
  /// the program's merged stdout and stderr, stderr empty); without, Sandbox::exec. ValueError
  /// for an empty or malformed command, before anything runs; SandboxProgramTimeout past
  /// `timeout`. When the host can stop the call (ToolCall's stop token) and has attached no
  /// host tools, a stop ends the program (AGENT-7): on a backend declaring EXEC_STREAM it runs
  /// through Sandbox::exec_stream and its whole process group is killed (STR-10), the sandbox
  /// kept; elsewhere this returns at once and the call's rung is escalated to DISPOSE. Either
  /// way Cancelled propagates.
  boost::asio::awaitable<ExecResult> exec(Sandbox& sandbox, Command command, std::string working_directory = ".",
                                          std::chrono::milliseconds timeout = kDefaultExecTimeout) const;
  /// Run `command` in `sandbox` and hand its stdout and stderr to `on_output` as they arrive
  /// (Sandbox::exec_stream, docs/streaming.md) — a body's way to show output so far. The
  /// call's stop is the stream's (unless `options.stop` names another): a stopped call kills
  /// the program's process group and this throws Cancelled (STR-10, AGENT-7). The tool's host
  /// tools are not reachable from it. NotImplementedError where the backend does not declare
  /// exec_stream; ValueError for an empty or malformed command. `options` is copied before
  /// this returns; a braced temporary is refused at compile time (AGENT-1: name it first, or
  /// use the overload without options).
  boost::asio::awaitable<StreamedExit> exec_stream(Sandbox& sandbox, Command command, OutputHandler on_output,
                                                   const ExecStreamOptions& options) const;
  /// exec_stream with the default ExecStreamOptions.
  boost::asio::awaitable<StreamedExit> exec_stream(Sandbox& sandbox, Command command, OutputHandler on_output) const;
  /// Refused at compile time (docs/tools.md "GCC 12 and temporaries").
  template <class Refused = ExecStreamOptions>
  boost::asio::awaitable<StreamedExit> exec_stream(Sandbox&, Command, OutputHandler, ExecStreamOptions&&) const {
    static_assert(detail::kNamedArgumentRequired<Refused>,
                  "name the options first: `const ExecStreamOptions options{...}; co_await session.exec_stream(sandbox, "
                  "command, handler, options);` — GCC 12 destroys a braced temporary in a co_await expression twice");
    return {};
  }
  /// Sandbox::run_code in `sandbox` (one this call acquired). The seam cannot stop run_code:
  /// a stopped call returns at once (Cancelled) and its rung is escalated to DISPOSE, which
  /// ends the program (AGENT-7).
  boost::asio::awaitable<ExecResult> run_code(Sandbox& sandbox, std::string code,
                                              std::chrono::milliseconds timeout = kDefaultExecTimeout) const;

private:
  friend class SandboxedTool;
  /// The coroutine behind exec_stream: it owns its copy of the options.
  boost::asio::awaitable<StreamedExit> exec_stream_with(Sandbox& sandbox, Command command, OutputHandler on_output,
                                                        ExecStreamOptions options) const;
  boost::asio::awaitable<BackgroundProcess> start_background_in_call(std::shared_ptr<Sandbox> sandbox, Command command,
                                                                     BackgroundOptions options) const;
  SandboxToolSession(std::shared_ptr<const detail::ToolBinding> binding, std::shared_ptr<detail::ToolCallRecord> call)
      : binding_(std::move(binding)), call_(std::move(call)) {}
  std::shared_ptr<const detail::ToolBinding> binding_;
  std::shared_ptr<detail::ToolCallRecord> call_;
};

/// A tool body: the session of this call and the (already validated) arguments.
using ToolBody = std::function<boost::asio::awaitable<ToolResult>(SandboxToolSession session, nlohmann::json arguments)>;

/// What becomes of an exception a body raises — the one place this is stated (docs/tools.md
/// "Errors are results").
enum class ToolErrors {
  /// The default. An error that answers the model's own input — ValueError (a bad or
  /// escaping path, an empty or malformed command), FileNotFoundError, IsADirectoryError,
  /// NotADirectoryError, TimeoutError (a program past its timeout), SandboxOutputError (an
  /// output missing or over a cap) — is an is_error result "Error: <message>" the model can
  /// read and correct (labels untrusted/public: the message may quote its path). Any other
  /// exception is the fixed kRefusalSandboxUnavailable sentence; its detail goes to the log and
  /// to the call's released ToolCallEvent (`error_type`). Only `Cancelled` propagates.
  AsResults,
  /// Every exception of the body propagates out of `invoke`, after the cleanup rung ran.
  Propagate,
};

/// `cleanup` of SandboxedToolOptions: what runs after each call (docs/tools.md "The cleanup
/// ladder" and "What survives a call").
struct ToolCleanupOptions {
  /// The host's rung. Dispose unless the host explicitly opts into Reset (needs SNAPSHOT) or
  /// Reclaim (needs the backend's RECLAIM) — `rung_for(BetweenCalls::KeepSandbox)` is the
  /// choice that keeps a conversation's files. IsolationScope::Call always disposes.
  Cleanup rung = Cleanup::Dispose;
  /// The weakest rung the kind tolerates (a kind that leaves processes behind says Reset or
  /// Dispose); the stronger of this and `rung` runs.
  Cleanup workload_floor = Cleanup::Reclaim;
  /// Bounds each cleanup rung, and separately on_reclaim_failure (C-120); positive.
  std::chrono::milliseconds reclaim_timeout = kDefaultCleanupTimeout;
  /// Told of every rung that did not happen for a call that had allocated its directory.
  std::function<boost::asio::awaitable<void>(ReclaimFailure)> on_reclaim_failure{};
  FailedReclaimPolicy failed_reclaim = FailedReclaimPolicy::Refuse;
};

/// `admission` of SandboxedToolOptions: how calls of one (key, kind) share it
/// (docs/tools.md "Call admission").
struct ToolAdmissionOptions {
  /// The kind asks for one call at a time per (key, kind), cleanup included.
  bool exclusive = false;
  /// How long a call waits for admission before it is refused ("sandbox unavailable").
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
};

/// `provenance` of SandboxedToolOptions: the labels of a result (docs/tools.md PROV-1…PROV-6).
struct ToolProvenanceOptions {
  /// Explicit labels for the body's unlabelled items (default: untrusted, private) — the
  /// kind's claim about what it derives. Not together with a sink, whose destination decides
  /// them (C-118).
  std::optional<ContentLabels> labels{};
  /// Fixed text the kind commits to returning as the last item of every normal (not
  /// is_error) result. Verified after each call — the last item, a text item, unlabelled,
  /// equal byte for byte — and then stamped trusted/public; a result that does not end with it
  /// stamps nothing trusted and is logged (PROV-1). Non-empty when given (ValueError). Never
  /// put text chosen from guest output here.
  std::optional<std::string> standing_guidance{};
  /// The host's record of its file store's integrity, shared with the store's writers
  /// (file_provenance.hpp). Reads named by file_inputs or record_file_read consult it.
  std::shared_ptr<FileStoreProvenance> file_provenance{};
  /// The store paths a call will read, from its validated arguments; judged before the body
  /// runs (PROV-2). A callback that throws refuses the call (its detail is logged).
  std::function<std::vector<std::string>(const nlohmann::json& arguments)> file_inputs{};
  /// The weakest input the kind accepts: Trusted refuses untrusted and unknown inputs,
  /// Untrusted refuses unknown ones — before anything runs (PROV-4). Needs file_provenance.
  std::optional<Integrity> requires_file_integrity{};
};

/// `observation` of SandboxedToolOptions: what the call's ToolCallEvents carry
/// (docs/observability.md).
struct ToolObservationOptions {
  /// The host's W3C `traceparent` for the call starting now (read once per call, on its
  /// thread), carried by its ToolCallEvent `admitted`; empty or absent = none (OTEL-3).
  std::function<std::string()> current_traceparent{};
  /// Attach the call's arguments and result text to its ToolCallEvents (OTEL-6). Off: events
  /// carry no payload.
  bool observe_payloads = false;
};

/// Host and kind configuration of one tool, in named parts, for designated initialisers:
/// `{.description = "…", .cleanup = {.rung = Cleanup::Reclaim}, .admission = {.exclusive = true}}`.
/// Every field has the safe default.
struct SandboxedToolOptions {
  std::string description{};
  /// JSON Schema (draft 7) of the arguments; compiled once at attach (ValueError if invalid).
  nlohmann::json input_schema = nlohmann::json{{"type", "object"}};
  ToolAnnotations annotations{};
  /// Where declared outputs land; required when the spec lands artifacts (C-118).
  std::shared_ptr<OutputSink> output_sink{};
  /// Host tools the body's programs may call (docs/host-tools.md), attached once: the spec is
  /// given the registry's sealed aggregate (and HOST_TOOLS) at attach, and every
  /// `session.exec` of a call runs with its own dispatch ledger — no HostToolRun or
  /// HostToolProgram by hand. The registry outlives the tool.
  std::shared_ptr<HostToolRegistry> host_tools{};
  /// What a body's exception becomes (ToolErrors).
  ToolErrors errors = ToolErrors::AsResults;
  ToolCleanupOptions cleanup{};
  ToolAdmissionOptions admission{};
  ToolProvenanceOptions provenance{};
  ToolObservationOptions observation{};
};

/// One attached tool; a cheap, copyable handle. Safe to invoke concurrently.
class SandboxedTool {
public:
  const ToolDefinition& definition() const;
  /// The rung that runs after each call (after IsolationScope::Call and the floor).
  Cleanup cleanup() const;

  /// Validate, run the body, clean up. A bad call (wrong name, arguments failing the schema)
  /// is an is_error result naming the field, and nothing runs. A body's exception becomes a
  /// result or propagates as `options.errors` says (ToolErrors: by default an input error is
  /// "Error: <message>", anything else the fixed "sandbox unavailable" sentence); `Cancelled`
  /// always propagates, after a cleanup bounded by min(reclaim_timeout, 2 s).
  boost::asio::awaitable<ToolResult> invoke(ToolCall call, std::stop_token stop = {}) const;
  /// invoke(), with the output of the call's programs handed to `on_output` as it arrives —
  /// what a host shows while a long call runs (docs/tools.md "Output so far", AGENT-8). Every
  /// SandboxToolSession::exec of the call tees its stdout and stderr there where the backend
  /// declares EXEC_STREAM (elsewhere nothing arrives before the result). Guest output:
  /// untrusted. Runs on the call's executor and must not block; a handler that throws ends
  /// the program, and its exception propagates as the body's would (STR-6).
  boost::asio::awaitable<ToolResult> invoke(ToolCall call, std::stop_token stop, OutputHandler on_output) const;
  /// invoke() to completion on a per-thread io_context (keep calling from the same thread
  /// while its sandboxes live: a backend may bind I/O to the executor of first use).
  ToolResult invoke_blocking(ToolCall call) const;

private:
  friend SandboxedTool sandboxed_tool(ToolBody, std::shared_ptr<SandboxRouter>, CallerContext, std::string,
                                      SandboxSpec, std::string, SandboxedToolOptions);
  explicit SandboxedTool(std::shared_ptr<const detail::ToolBinding> binding) : binding_(std::move(binding)) {}
  std::shared_ptr<const detail::ToolBinding> binding_;
};

/// Attach a tool (C-118, in this order): router null or disabled -> NoSandboxBackend (a host
/// without a sandbox offers no tool: catch it to leave the tool out); a sink and explicit
/// labels together -> ValueError; a spec that lands artifacts without a sink ->
/// SandboxOutputSinkRequired; outputs declared (or named at call time) without FILES_OUT ->
/// ValueError; reclaim_timeout not positive -> ValueError; host_tools whose aggregate differs
/// from the spec's -> ValueError; the router's ensure_can_serve; a work_dir that normalises to
/// "/" -> ValueError; then the rung: RESET without the backend's SNAPSHOT, or RECLAIM without
/// its RECLAIM, -> SandboxCapabilityNotSupported; an input schema that is not a valid schema
/// -> ValueError; an empty standing_guidance, or requires_file_integrity without
/// file_provenance -> ValueError. Returns the one tool.
SandboxedTool sandboxed_tool(ToolBody body, std::shared_ptr<SandboxRouter> router, CallerContext context,
                             std::string agent_id, SandboxSpec spec, std::string name, SandboxedToolOptions options = {});
/// The same over a SandboxHost's router (docs/getting-started.md's host): the host must
/// outlive the tool.
SandboxedTool sandboxed_tool(ToolBody body, SandboxHost& host, CallerContext context, std::string agent_id,
                             SandboxSpec spec, std::string name, SandboxedToolOptions options = {});

/// A CallerContext for one conversation whose scope and thread are fixed (an MCP session, a
/// test, a one-conversation host): the same two strings on every call.
CallerContext fixed_conversation(std::string scope, std::string thread_id);

}  // namespace maf::sandbox
