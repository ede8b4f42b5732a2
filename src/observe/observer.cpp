// Observer events, their JSON line and the fan-out (observer.hpp, docs/observability.md).
#include "maf/sandbox/observer.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <typeinfo>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "maf/sandbox/logging.hpp"

namespace maf::sandbox {

SandboxObserver::~SandboxObserver() = default;

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::int64_t unix_nanos(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

class CallbackObserver final : public SandboxObserver {
public:
  explicit CallbackObserver(std::function<void(const SandboxEvent&)> callback) : callback_(std::move(callback)) {}
  void on_event(const SandboxEvent& event) override { callback_(event); }

private:
  std::function<void(const SandboxEvent&)> callback_;
};

}  // namespace

std::string_view event_type(const SandboxEvent& event) noexcept {
  static constexpr std::string_view kNames[] = {"acquisition", "tool_call", "exec",
                                                "transfer",    "network_decision", "cleanup",
                                                "host_tool_dispatch", "snapshot"};
  static_assert(std::size(kNames) == std::variant_size_v<SandboxEvent>);
  return kNames[event.index()];
}

const EventContext& context_of(const SandboxEvent& event) noexcept {
  return std::visit([](const auto& e) -> const EventContext& { return e.context; }, event);
}
EventContext& context_of(SandboxEvent& event) noexcept {
  return std::visit([](auto& e) -> EventContext& { return e.context; }, event);
}

CleanupEvent make_cleanup_event(EventContext context, Cleanup rung, CleanupOutcome outcome, std::string detail,
                                std::chrono::nanoseconds duration) {
  CleanupEvent event;
  event.context = std::move(context);
  event.rung = rung;
  event.outcome = outcome;
  if (outcome != CleanupOutcome::Done) event.detail = std::move(detail);
  event.duration = duration;
  return event;
}

std::string_view to_string(AcquisitionOutcome outcome) noexcept {
  switch (outcome) {
    case AcquisitionOutcome::Started: return "started";
    case AcquisitionOutcome::Reused: return "reused";
    case AcquisitionOutcome::Refused: return "refused";
    case AcquisitionOutcome::Failed: return "failed";
  }
  return "unknown";
}
std::string_view to_string(ToolCallPhase phase) noexcept {
  switch (phase) {
    case ToolCallPhase::Queued: return "queued";
    case ToolCallPhase::Admitted: return "admitted";
    case ToolCallPhase::Released: return "released";
  }
  return "unknown";
}
std::string_view to_string(TransferDirection direction) noexcept {
  return direction == TransferDirection::In ? "in" : "out";
}

std::string event_to_json(const SandboxEvent& event) {
  using nlohmann::json;
  const EventContext& c = context_of(event);
  json j = {{"event", event_type(event)},
            {"time", unix_nanos(c.time)},
            {"key", {{"scope", c.key.scope}, {"thread_id", c.key.thread_id}, {"agent_id", c.key.agent_id},
                     {"call_id", c.key.call_id}}},
            {"call_id", c.call_id},
            {"backend", c.backend},
            {"kind", c.kind},
            {"instance_id", c.instance_id}};
  auto nanos = [](std::chrono::nanoseconds d) { return d.count(); };
  std::visit(Overloaded{
                 [&](const AcquisitionEvent& e) {
                   j["outcome"] = to_string(e.outcome);
                   j["isolation"] = e.isolation ? to_string(*e.isolation) : std::string_view();
                   j["egress"] = to_string(e.egress);
                   j["error_type"] = e.error_type;
                   j["reason"] = e.reason;
                   j["duration_ns"] = nanos(e.duration);
                 },
                 [&](const ToolCallEvent& e) {
                   j["phase"] = to_string(e.phase);
                   j["tool"] = e.tool;
                   j["error_type"] = e.error_type;
                   // Payloads appear only when the tool layer attached them (the host opted in).
                   if (e.arguments) j["arguments"] = *e.arguments;
                   if (e.result) j["result"] = *e.result;
                 },
                 [&](const ExecEvent& e) {
                   j["run_code"] = e.run_code;
                   j["streamed"] = e.streamed;
                   j["argv_digest"] = e.argv_digest;
                   j["exit_code"] = e.exit_code ? json(*e.exit_code) : json();
                   j["timed_out"] = e.timed_out;
                   j["stdout_bytes"] = e.stdout_bytes;
                   j["stderr_bytes"] = e.stderr_bytes;
                   j["error_type"] = e.error_type;
                   j["duration_ns"] = nanos(e.duration);
                   // ENV-5: names, and only the values the host made public; never the rest.
                   if (!e.env_names.empty()) j["env_names"] = e.env_names;
                   if (!e.env_public.empty()) j["env_public"] = e.env_public;
                   if (e.stdin_bytes) j["stdin_bytes"] = e.stdin_bytes;
                 },
                 [&](const TransferEvent& e) {
                   j["direction"] = to_string(e.direction);
                   j["guest_path"] = e.guest_path;
                   j["bytes"] = e.bytes;
                   j["refused_by_cap"] = e.refused_by_cap;
                   j["error_type"] = e.error_type;
                   j["duration_ns"] = nanos(e.duration);
                 },
                 [&](const NetworkDecisionEvent& e) {
                   j["decision"] = e.decision;
                   j["host"] = e.host;
                   j["port"] = e.port;
                   j["proxy"] = e.proxy;
                   j["truncated"] = e.truncated;
                   if (!e.rule.empty()) {  // a method/path rule decided (issue 45)
                     j["method"] = e.method;
                     j["path"] = e.path;
                     j["rule"] = e.rule;
                     if (!e.reason.empty()) j["reason"] = e.reason;
                   }
                 },
                 [&](const CleanupEvent& e) {
                   j["rung"] = to_string(e.rung);
                   j["outcome"] = to_string(e.outcome);
                   j["detail"] = e.detail;
                   j["duration_ns"] = nanos(e.duration);
                 },
                 [&](const HostToolDispatchEvent& e) {
                   j["tool"] = e.tool;
                   j["identity"] = e.identity ? to_string(*e.identity) : std::string_view();
                   j["outcome"] = to_string(e.outcome);
                   j["error_type"] = e.error_type;
                   j["duration_ns"] = nanos(e.duration);
                 },
                 [&](const SnapshotEvent& e) {
                   j["operation"] = to_string(e.operation);
                   j["snapshot_id"] = e.snapshot_id;
                   j["size_bytes"] = e.size_bytes;
                   j["error_type"] = e.error_type;
                   j["duration_ns"] = nanos(e.duration);
                 },
             },
             event);
  // Guest paths and messages are not guaranteed UTF-8: replace rather than throw.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string class_name_of(std::string_view demangled) {
  // std::throw_with_nested throws std::_Nested_exception<E>, which derives from E: the
  // error the caller threw is E.
  constexpr std::string_view kNested = "std::_Nested_exception<";
  while (demangled.substr(0, kNested.size()) == kNested && demangled.back() == '>') {
    demangled = demangled.substr(kNested.size(), demangled.size() - kNested.size() - 1);
    while (!demangled.empty() && demangled.back() == ' ') demangled.remove_suffix(1);  // "> >"
  }
  // Any other template: its own name without arguments (whose "::" must not be cut at).
  if (const auto angle = demangled.find('<'); angle != std::string_view::npos) demangled = demangled.substr(0, angle);
  // Callers see the class name, not where it lives.
  if (const auto colons = demangled.rfind("::"); colons != std::string_view::npos) demangled.remove_prefix(colons + 2);
  return std::string(demangled);
}

std::string error_type_name(const std::exception& error) {
  const char* mangled = typeid(error).name();
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status),
                                                   std::free);
  return class_name_of(status == 0 && demangled ? demangled.get() : mangled);
}

std::string error_type_name(const std::exception_ptr& error) {
  if (!error) return {};
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return error_type_name(e);
  } catch (...) {
    return "unknown";
  }
}

ObserverSet::ObserverSet(std::vector<std::shared_ptr<SandboxObserver>> observers) {
  for (auto& o : observers)
    if (o) observers_.push_back(std::move(o));
}

void ObserverSet::notify(const SandboxEvent& event) const noexcept {
  for (const auto& observer : observers_) {
    // OBS-3: an observer's failure is its own; the operation it observes goes on unchanged.
    try {
      observer->on_event(event);
    } catch (const std::exception& e) {
      try {
        logger()->warn("a sandbox observer failed on a {} event: {}", event_type(event), e.what());
      } catch (...) {
      }
    } catch (...) {
      try {
        logger()->warn("a sandbox observer failed on a {} event", event_type(event));
      } catch (...) {
      }
    }
  }
}

std::shared_ptr<SandboxObserver> make_observer(std::function<void(const SandboxEvent&)> callback) {
  return std::make_shared<CallbackObserver>(std::move(callback));
}

void emit(const ObserverSet* observers, SandboxEvent event) noexcept {
  if (observers == nullptr || observers->empty()) return;
  EventContext& c = context_of(event);
  if (c.time == std::chrono::system_clock::time_point{}) c.time = std::chrono::system_clock::now();
  observers->notify(event);
}

void ObserverHub::attach(const std::shared_ptr<const ObserverSet>& observers) {
  if (!observers || observers->empty()) return;
  std::lock_guard lock(mutex_);
  std::erase_if(sets_, [](const auto& w) { return w.expired(); });
  for (const auto& w : sets_)
    if (w.lock() == observers) return;
  sets_.push_back(observers);
}

void ObserverHub::notify(SandboxEvent event) const noexcept {
  std::vector<std::shared_ptr<const ObserverSet>> live;
  {
    std::lock_guard lock(mutex_);
    for (const auto& w : sets_)
      if (auto set = w.lock()) live.push_back(std::move(set));
  }
  for (const auto& set : live) emit(set.get(), event);  // outside the lock: an observer may be slow
}

bool ObserverHub::empty() const {
  std::lock_guard lock(mutex_);
  for (const auto& w : sets_)
    if (!w.expired()) return false;
  return true;
}

}  // namespace maf::sandbox
