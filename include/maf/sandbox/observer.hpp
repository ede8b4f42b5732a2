#pragma once
/// @file observer.hpp
/// SandboxObserver (docs/observability.md): typed events for what sandboxes
/// did — acquisitions, tool calls, exec, transfers, network decisions, cleanup and host-tool
/// dispatch — delivered to every observer a host registered.
///
/// Delivery rules (OBS-1…OBS-4 in docs/observability.md): callbacks are synchronous, on the
/// thread of the operation they describe (any thread); several observers are called in
/// registration order; an observer that throws is logged and skipped, and never changes the
/// operation's result; delivery is not a durable audit trail. Events carry configuration and
/// sizes, never payloads — except a tool call's arguments and result, and only when the tool
/// layer was told to attach them (the host's opt-in).
///
/// Light: the standard library and the vocabulary headers only, so sandbox.hpp and
/// router_options.hpp can name it without pulling in Asio or JSON. Fields are typed (the
/// vocabulary's enums); strings appear only at the JSON and OTel edges (event_to_json, the
/// exporter), spelled by each enum's to_string.

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/cleanup.hpp"
#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/enum.hpp"
#include "maf/sandbox/isolation.hpp"
#include "maf/sandbox/key.hpp"

namespace maf::sandbox {

/// What every event carries: whose sandbox, which tool call, where, and when it completed.
struct EventContext {
  SandboxKey key{};
  /// The tool call the event belongs to: the key's call_id (CALL scope), or the id the tool
  /// layer named; empty when no tool call is known (docs/observability.md, OBS-5).
  std::string call_id{};
  std::string backend{};
  std::string kind{};
  std::string instance_id{};
  /// When the operation ended (or, for a queued/admitted tool call, when it happened).
  std::chrono::system_clock::time_point time{};
};

enum class AcquisitionOutcome {
  Started,  ///< the backend handed out a sandbox this router had not handed out before
  Reused,   ///< a sandbox this router already handed out (a warm conversation sandbox)
  Refused,  ///< the policy said no (a SandboxPolicyRefusal); `reason` is its message
  Failed,   ///< any other failure; `reason` is its message
};

struct AcquisitionEvent {
  EventContext context;
  AcquisitionOutcome outcome = AcquisitionOutcome::Started;
  /// The serving backend's rung; absent when none was selected (or its declaration is not a rung).
  std::optional<Isolation> isolation{};
  Egress egress = Egress::Closed;  ///< the spec's egress mode
  std::string error_type{};  ///< class name of the refusal or failure; empty on success
  std::string reason{};      ///< the refusal's or failure's message
  std::chrono::nanoseconds duration{};
};

enum class ToolCallPhase {
  Queued,    ///< waiting for admission (docs/tools.md "Call admission")
  Admitted,  ///< the call runs
  Released,  ///< the call returned, was refused or threw
};

struct ToolCallEvent {
  EventContext context;
  ToolCallPhase phase = ToolCallPhase::Admitted;
  std::string tool{};
  /// Released: what ended the call unsuccessfully — "invalid_arguments", "refused" (a refused
  /// acquire or SandboxToolRefused), "tool_error" (the body's own error result) or an
  /// exception's class name; empty on success (docs/observability.md OBS-10).
  std::string error_type{};
  /// Admitted: the host's W3C `traceparent` for this call, if it has one; empty otherwise.
  std::string traceparent{};
  /// The call's arguments / result as the tool saw them; filled only when the host opted in.
  std::optional<std::string> arguments{};
  std::optional<std::string> result{};
};

struct ExecEvent {
  EventContext context;
  bool run_code = false;      ///< run_code rather than exec
  bool streamed = false;      ///< exec_stream: the byte counts are what reached the handler
  std::string argv_digest{};  ///< hex SHA-256 of the shell line (or code); never the argv itself
  std::optional<int> exit_code{};  ///< absent when the program did not return one
  bool timed_out = false;
  std::uint64_t stdout_bytes = 0;
  std::uint64_t stderr_bytes = 0;
  std::string error_type{};  ///< class name when exec threw; empty otherwise
  std::chrono::nanoseconds duration{};
  /// The names of the command's own environment (ExecInput), never their values (ENV-5)…
  std::vector<std::string> env_names{};
  /// …except those the host marked public (ExecInput::public_names).
  std::map<std::string, std::string> env_public{};
  /// Bytes given on stdin (ExecInput::stdin_bytes); never the bytes themselves.
  std::uint64_t stdin_bytes = 0;
};

enum class TransferDirection { In, Out };

struct TransferEvent {
  EventContext context;
  TransferDirection direction = TransferDirection::In;
  std::string guest_path{};  ///< as the caller named it
  std::uint64_t bytes = 0;   ///< moved; for a cap refusal, the size that was refused when known
  bool refused_by_cap = false;
  std::string error_type{};
  std::chrono::nanoseconds duration{};
};

/// One decision of an ALLOWLIST sandbox's egress proxy.
struct NetworkDecisionEvent {
  EventContext context;
  std::string decision{};  ///< ALLOW, DENY, DENY-NONGLOBAL or UNREACHABLE
  std::string host{};
  int port = 0;
  std::string proxy{};     ///< the proxy that decided
  bool truncated = false;  ///< the proxy's log lost earlier decisions
  /// Set when a method/path rule decided (issue 45): the request's method, canonical path
  /// (no query), the rule, and for a refusal why. Never a header, a query or a body.
  std::string method{};
  std::string path{};
  std::string rule{};
  std::string reason{};
};

/// How one cleanup rung ended.
enum class CleanupOutcome {
  Done,         ///< "done"
  Failed,       ///< "failed": the rung raised; `detail` names the error
  Unconfirmed,  ///< "unconfirmed": a disposal no backend confirmed (in time)
};

template <>
struct EnumTraits<CleanupOutcome> {
  static constexpr std::string_view type_name = "CleanupOutcome";
  static constexpr std::array<std::pair<CleanupOutcome, std::string_view>, 3> values{{
      {CleanupOutcome::Done, "done"},
      {CleanupOutcome::Failed, "failed"},
      {CleanupOutcome::Unconfirmed, "unconfirmed"},
  }};
};
constexpr std::string_view to_string(CleanupOutcome o) noexcept { return enum_value(o); }

struct CleanupEvent {
  EventContext context;
  Cleanup rung = Cleanup::Dispose;  ///< docs/tools.md "The cleanup ladder"
  CleanupOutcome outcome = CleanupOutcome::Done;
  std::string detail{};  ///< why it failed or is unconfirmed
  std::chrono::nanoseconds duration{};
};

/// The one way a CleanupEvent is made (the Sandbox NVI's reclaim and reset, the router's
/// disposal): `detail` only where the outcome is not Done.
CleanupEvent make_cleanup_event(EventContext context, Cleanup rung, CleanupOutcome outcome, std::string detail,
                                std::chrono::nanoseconds duration);

/// How one host-tool dispatch ended.
enum class DispatchOutcome {
  Ok,       ///< "ok"
  Refused,  ///< "refused": the registry said no (unknown tool, identity, schema, caps)
  Failed,   ///< "failed": the tool's handler raised
};

template <>
struct EnumTraits<DispatchOutcome> {
  static constexpr std::string_view type_name = "DispatchOutcome";
  static constexpr std::array<std::pair<DispatchOutcome, std::string_view>, 3> values{{
      {DispatchOutcome::Ok, "ok"},
      {DispatchOutcome::Refused, "refused"},
      {DispatchOutcome::Failed, "failed"},
  }};
};
constexpr std::string_view to_string(DispatchOutcome o) noexcept { return enum_value(o); }

/// A host tool dispatched from a sandbox (docs/host-tools.md); the host-tool registry emits it.
struct HostToolDispatchEvent {
  EventContext context;
  std::string tool{};
  /// The authority the tool exercises; absent when the request named no dispatchable tool.
  std::optional<Identity> identity{};
  DispatchOutcome outcome = DispatchOutcome::Ok;
  std::string error_type{};
  std::chrono::nanoseconds duration{};
};

/// Which snapshot-or-pause operation of the Sandbox NVI an event reports (docs/snapshots.md).
enum class SnapshotOperation {
  Snapshot,  ///< "snapshot"
  Restore,   ///< "restore"
  Release,   ///< "release"
  Pause,     ///< "pause"
  Resume,    ///< "resume"
};

template <>
struct EnumTraits<SnapshotOperation> {
  static constexpr std::string_view type_name = "SnapshotOperation";
  static constexpr std::array<std::pair<SnapshotOperation, std::string_view>, 5> values{{
      {SnapshotOperation::Snapshot, "snapshot"},
      {SnapshotOperation::Restore, "restore"},
      {SnapshotOperation::Release, "release"},
      {SnapshotOperation::Pause, "pause"},
      {SnapshotOperation::Resume, "resume"},
  }};
};
constexpr std::string_view to_string(SnapshotOperation o) noexcept { return enum_value(o); }

/// One snapshot, restore, release, pause or resume of an observed sandbox (OBS-13): emitted
/// by the Sandbox NVI after the backend's hook, whether it succeeded or raised. A pause or
/// resume that changed nothing (already so) is not an operation and emits nothing.
struct SnapshotEvent {
  EventContext context;
  SnapshotOperation operation = SnapshotOperation::Snapshot;
  std::string snapshot_id{};    ///< the snapshot taken, restored or released; empty for pause/resume
  std::int64_t size_bytes = 0;  ///< what a successful snapshot holds; 0 otherwise
  std::string error_type{};     ///< the exception's class name; empty on success
  std::chrono::nanoseconds duration{};
};

using SandboxEvent = std::variant<AcquisitionEvent, ToolCallEvent, ExecEvent, TransferEvent, NetworkDecisionEvent,
                                  CleanupEvent, HostToolDispatchEvent, SnapshotEvent>;

/// "acquisition", "tool_call", "exec", "transfer", "network_decision", "cleanup",
/// "host_tool_dispatch", "snapshot".
std::string_view event_type(const SandboxEvent& event) noexcept;
const EventContext& context_of(const SandboxEvent& event) noexcept;
EventContext& context_of(SandboxEvent& event) noexcept;

std::string_view to_string(AcquisitionOutcome outcome) noexcept;
std::string_view to_string(ToolCallPhase phase) noexcept;
std::string_view to_string(TransferDirection direction) noexcept;

/// One JSON object on one line (no newline): `{"event": <event_type>, "time": <unix ns>,
/// "key": {…}, "call_id", "backend", "kind", "instance_id", …the event's own fields}`.
/// The shape of `maf-sandbox run --events FILE` (docs/observability.md).
std::string event_to_json(const SandboxEvent& event);

/// The class name of an error without namespaces, template arguments or the
/// std::_Nested_exception wrapper — "SandboxEgressNotEnforced".
std::string error_type_name(const std::exception& error);
/// The same for whatever `error` holds ("unknown" for a non-std exception).
std::string error_type_name(const std::exception_ptr& error);
/// The class name in a demangled type name.
std::string class_name_of(std::string_view demangled);

/// Receives events. Keep on_event short (hand off to a queue): it runs on the caller's
/// thread, inside the operation it describes, and may be called from several threads at once.
class SandboxObserver {
public:
  virtual ~SandboxObserver();
  virtual void on_event(const SandboxEvent& event) = 0;
};

/// An immutable fan-out over observers, shared by the router and every sandbox it hands out.
/// notify() calls each observer in order, logs and swallows whatever one throws.
class ObserverSet {
public:
  ObserverSet() = default;
  explicit ObserverSet(std::vector<std::shared_ptr<SandboxObserver>> observers);

  bool empty() const noexcept { return observers_.empty(); }
  std::size_t size() const noexcept { return observers_.size(); }
  void notify(const SandboxEvent& event) const noexcept;

private:
  std::vector<std::shared_ptr<SandboxObserver>> observers_;
};

/// The observer sets attached to a backend, for what it sees outside any one sandbox's
/// operations (an egress proxy's decisions, drained at teardown). Held weakly: a router that
/// goes takes its observers with it. Thread-safe.
class ObserverHub {
public:
  /// Adds `observers` unless already attached; null or empty is ignored.
  void attach(const std::shared_ptr<const ObserverSet>& observers);
  /// Delivers to every live attached set; stamps `time` if unset.
  void notify(SandboxEvent event) const noexcept;
  bool empty() const;

private:
  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<const ObserverSet>> sets_;
};

/// An observer over a callable, for hosts and tests that want a lambda.
std::shared_ptr<SandboxObserver> make_observer(std::function<void(const SandboxEvent&)> callback);

/// The emit helper of the tool layer: stamps `time` (now) if unset and notifies.
/// Null or empty `observers` costs one branch.
void emit(const ObserverSet* observers, SandboxEvent event) noexcept;

}  // namespace maf::sandbox
