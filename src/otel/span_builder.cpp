// Events -> OTLP/JSON spans (span_builder.hpp). The encoding is OTLP's JSON mapping of the
// protobuf messages: ids as lowercase hex, times as unix-nanosecond strings, enums as
// integers, 64-bit integers as strings, lowerCamelCase field names.
#include "span_builder.hpp"

#include <algorithm>

namespace maf::sandbox::otel::detail {
namespace {

using nlohmann::json;

constexpr int kSpanKindInternal = 1;
constexpr int kStatusError = 2;

template <std::size_t N>
std::string hex(const std::array<std::uint8_t, N>& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * N);
  for (auto b : bytes) (s += kHex[b >> 4]) += kHex[b & 15];
  return s;
}

std::string nanos(std::chrono::system_clock::time_point t) {
  return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

json attr(std::string key, std::string value) { return {{"key", std::move(key)}, {"value", {{"stringValue", std::move(value)}}}}; }
json attr(std::string key, std::int64_t value) {
  return {{"key", std::move(key)}, {"value", {{"intValue", std::to_string(value)}}}};
}
json attr(std::string key, bool value) { return {{"key", std::move(key)}, {"value", {{"boolValue", value}}}}; }

bool same_holder(const SandboxKey& a, const SandboxKey& b) {
  return a.scope == b.scope && a.thread_id == b.thread_id && a.agent_id == b.agent_id;
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

SpanBuilder::SpanBuilder(std::optional<TraceParent> parent, bool export_payloads)
    : random_(std::random_device{}()), export_payloads_(export_payloads) {
  if (parent) {
    session_.trace_id = parent->trace_id;
    session_.span_id = parent->span_id;
  } else {
    // One trace for everything outside a tool call: a CLI run is one trace.
    for (auto& b : session_.trace_id) b = static_cast<std::uint8_t>(random_());
    session_.trace_id[0] |= 1;  // never all zero
  }
}

std::array<std::uint8_t, 8> SpanBuilder::new_span_id() {
  std::array<std::uint8_t, 8> id{};
  const std::uint64_t r = random_() | 1;  // never all zero
  for (std::size_t i = 0; i < 8; ++i) id[i] = static_cast<std::uint8_t>(r >> (8 * i));
  return id;
}

SpanBuilder::Parent SpanBuilder::parent_for(const EventContext& context) const {
  // OBS-5: the event's tool call; for a conversation sandbox (no call id on the event), the
  // one call in flight for the same scope/thread/agent, when there is exactly one.
  if (!context.call_id.empty()) {
    auto it = calls_.find(context.call_id);
    if (it == calls_.end())
      if (auto alias = by_key_call_.find(context.call_id); alias != by_key_call_.end()) it = calls_.find(alias->second);
    if (it != calls_.end()) return {it->second.trace_id, it->second.span_id};
  } else {
    const Call* only = nullptr;
    for (const auto& [id, call] : calls_) {
      if (!same_holder(call.key, context.key)) continue;
      if (only) return session_;
      only = &call;
    }
    if (only) return {only->trace_id, only->span_id};
  }
  return session_;
}

void SpanBuilder::open(const ToolCallEvent& event) {
  const std::string& id = event.context.call_id;
  if (calls_.count(id)) return;  // queued, then admitted: one span from the first
  if (calls_.size() >= kMaxCallsInFlight) {
    auto oldest = std::min_element(calls_.begin(), calls_.end(),
                                   [](const auto& a, const auto& b) { return a.second.order < b.second.order; });
    forget(oldest);
  }
  Call call;
  call.start = event.context.time;
  call.key = event.context.key;
  call.order = next_order_++;
  call.span_id = new_span_id();
  std::optional<TraceParent> host;
  if (!event.traceparent.empty()) {
    try {
      host = parse_traceparent(event.traceparent);
    } catch (const std::exception&) {
      // A malformed per-call parent falls back to the session's; the call is still traced.
    }
  }
  if (host) {
    call.trace_id = host->trace_id;
    call.parent_span_id = host->span_id;
  } else {
    call.trace_id = session_.trace_id;
    call.parent_span_id = session_.span_id;
  }
  const std::string& key_call = event.context.key.call_id;
  if (!key_call.empty() && key_call != id) by_key_call_[key_call] = id;
  calls_.emplace(id, call);
}

void SpanBuilder::forget(std::map<std::string, Call>::iterator call) {
  const std::string& key_call = call->second.key.call_id;
  if (auto alias = by_key_call_.find(key_call); alias != by_key_call_.end() && alias->second == call->first)
    by_key_call_.erase(alias);
  calls_.erase(call);
}

void SpanBuilder::release(const ToolCallEvent& event, std::vector<json>& out) {
  auto it = calls_.find(event.context.call_id);
  Call call;
  if (it != calls_.end()) {
    call = it->second;
    forget(it);
  } else {  // its admission was dropped: still one span, from the release alone
    call.trace_id = session_.trace_id;
    call.parent_span_id = session_.span_id;
    call.span_id = new_span_id();
    call.start = event.context.time;
  }
  json attributes = json::array({attr("gen_ai.operation.name", std::string("execute_tool")),
                                 attr("gen_ai.tool.name", event.tool),
                                 attr("gen_ai.tool.call.id", event.context.call_id),
                                 attr("maf_sandbox.kind", event.context.kind)});
  if (!event.context.backend.empty()) attributes.push_back(attr("maf_sandbox.backend", event.context.backend));
  if (export_payloads_ && event.arguments) attributes.push_back(attr("gen_ai.tool.call.arguments", *event.arguments));
  if (export_payloads_ && event.result) attributes.push_back(attr("gen_ai.tool.call.result", *event.result));
  json span = {{"traceId", hex(call.trace_id)},
               {"spanId", hex(call.span_id)},
               {"name", "execute_tool " + event.tool},
               {"kind", kSpanKindInternal},
               {"startTimeUnixNano", nanos(call.start)},
               {"endTimeUnixNano", nanos(event.context.time)}};
  if (call.parent_span_id) span["parentSpanId"] = hex(*call.parent_span_id);
  if (!event.error_type.empty()) {
    attributes.push_back(attr("error.type", event.error_type));
    span["status"] = {{"code", kStatusError}};
  }
  span["attributes"] = std::move(attributes);
  out.push_back(std::move(span));
}

void SpanBuilder::add(const SandboxEvent& event, std::vector<json>& out) {
  if (const auto* call = std::get_if<ToolCallEvent>(&event)) {
    if (call->phase == ToolCallPhase::Released)
      release(*call, out);
    else
      open(*call);
    return;
  }
  const EventContext& c = context_of(event);
  std::string name;
  std::chrono::nanoseconds duration{};
  std::string error_type;
  std::string status_message;
  json attributes = json::array();
  if (!c.backend.empty()) attributes.push_back(attr("maf_sandbox.backend", c.backend));
  if (!c.kind.empty()) attributes.push_back(attr("maf_sandbox.kind", c.kind));
  if (!c.instance_id.empty()) attributes.push_back(attr("maf_sandbox.instance_id", c.instance_id));
  if (!c.call_id.empty()) attributes.push_back(attr("gen_ai.tool.call.id", c.call_id));
  std::visit(Overloaded{
                 [&](const AcquisitionEvent& e) {
                   name = "maf_sandbox.acquire";
                   duration = e.duration;
                   attributes.push_back(attr("maf_sandbox.outcome", std::string(to_string(e.outcome))));
                   if (e.isolation) attributes.push_back(attr("maf_sandbox.isolation", std::string(to_string(*e.isolation))));
                   attributes.push_back(attr("maf_sandbox.egress", std::string(to_string(e.egress))));
                   error_type = e.error_type;
                   status_message = e.reason;
                 },
                 [&](const ToolCallEvent&) {},
                 [&](const ExecEvent& e) {
                   name = e.run_code ? "maf_sandbox.run_code" : "maf_sandbox.exec";
                   duration = e.duration;
                   attributes.push_back(attr("maf_sandbox.argv_digest", e.argv_digest));
                   if (e.exit_code) attributes.push_back(attr("maf_sandbox.exit_code", std::int64_t{*e.exit_code}));
                   attributes.push_back(attr("maf_sandbox.timed_out", e.timed_out));
                   if (e.streamed) attributes.push_back(attr("maf_sandbox.streamed", true));
                   attributes.push_back(attr("maf_sandbox.stdout_bytes", static_cast<std::int64_t>(e.stdout_bytes)));
                   attributes.push_back(attr("maf_sandbox.stderr_bytes", static_cast<std::int64_t>(e.stderr_bytes)));
                   // ENV-5: the names, and only the values the host made public.
                   if (!e.env_names.empty()) {
                     std::string names;
                     for (const auto& n : e.env_names) names += (names.empty() ? "" : ",") + n;
                     attributes.push_back(attr("maf_sandbox.env_names", names));
                   }
                   for (const auto& [n, v] : e.env_public) attributes.push_back(attr("maf_sandbox.env." + n, v));
                   if (e.stdin_bytes)
                     attributes.push_back(attr("maf_sandbox.stdin_bytes", static_cast<std::int64_t>(e.stdin_bytes)));
                   error_type = e.error_type;
                 },
                 [&](const TransferEvent& e) {
                   name = e.direction == TransferDirection::In ? "maf_sandbox.transfer_in" : "maf_sandbox.transfer_out";
                   duration = e.duration;
                   attributes.push_back(attr("maf_sandbox.direction", std::string(to_string(e.direction))));
                   attributes.push_back(attr("maf_sandbox.guest_path", e.guest_path));
                   attributes.push_back(attr("maf_sandbox.bytes", static_cast<std::int64_t>(e.bytes)));
                   attributes.push_back(attr("maf_sandbox.refused_by_cap", e.refused_by_cap));
                   error_type = e.error_type;
                 },
                 [&](const NetworkDecisionEvent& e) {
                   name = "maf_sandbox.network_decision";
                   attributes.push_back(attr("maf_sandbox.decision", e.decision));
                   attributes.push_back(attr("server.address", e.host));
                   attributes.push_back(attr("server.port", std::int64_t{e.port}));
                   attributes.push_back(attr("maf_sandbox.proxy", e.proxy));
                   attributes.push_back(attr("maf_sandbox.truncated", e.truncated));
                   if (!e.rule.empty()) {  // a method/path rule decided (issue 45)
                     attributes.push_back(attr("http.request.method", e.method));
                     attributes.push_back(attr("url.path", e.path));
                     attributes.push_back(attr("maf_sandbox.egress_rule", e.rule));
                     if (!e.reason.empty()) attributes.push_back(attr("maf_sandbox.reason", e.reason));
                   }
                 },
                 [&](const CleanupEvent& e) {
                   name = "maf_sandbox.cleanup";
                   duration = e.duration;
                   const std::string outcome(to_string(e.outcome));
                   attributes.push_back(attr("maf_sandbox.rung", std::string(to_string(e.rung))));
                   attributes.push_back(attr("maf_sandbox.outcome", outcome));
                   if (e.outcome != CleanupOutcome::Done) {
                     error_type = e.detail.empty() ? outcome : e.detail;
                   }
                 },
                 [&](const HostToolDispatchEvent& e) {
                   name = "maf_sandbox.host_tool " + e.tool;
                   duration = e.duration;
                   attributes.push_back(attr("maf_sandbox.host_tool", e.tool));
                   attributes.push_back(
                       attr("maf_sandbox.identity", e.identity ? std::string(to_string(*e.identity)) : std::string()));
                   attributes.push_back(attr("maf_sandbox.outcome", std::string(to_string(e.outcome))));
                   error_type = e.error_type;
                 },
                 [&](const SnapshotEvent& e) {
                   name = "maf_sandbox.snapshot " + std::string(to_string(e.operation));
                   duration = e.duration;
                   attributes.push_back(attr("maf_sandbox.snapshot.operation", std::string(to_string(e.operation))));
                   if (!e.snapshot_id.empty()) attributes.push_back(attr("maf_sandbox.snapshot.id", e.snapshot_id));
                   error_type = e.error_type;
                 },
             },
             event);
  const Parent parent = parent_for(c);
  json span = {{"traceId", hex(parent.trace_id)},
               {"spanId", hex(new_span_id())},
               {"name", std::move(name)},
               {"kind", kSpanKindInternal},
               {"startTimeUnixNano", nanos(c.time - std::chrono::duration_cast<std::chrono::system_clock::duration>(duration))},
               {"endTimeUnixNano", nanos(c.time)}};
  if (parent.span_id) span["parentSpanId"] = hex(*parent.span_id);
  if (!error_type.empty()) {
    attributes.push_back(attr("error.type", error_type));
    span["status"] = {{"code", kStatusError}, {"message", status_message}};
  }
  span["attributes"] = std::move(attributes);
  out.push_back(std::move(span));
}

json SpanBuilder::document(const std::string& service_name, std::vector<json> spans) {
  return {{"resourceSpans",
           json::array({{{"resource", {{"attributes", json::array({attr("service.name", service_name)})}}},
                         {"scopeSpans",
                          json::array({{{"scope", {{"name", "maf-sandbox"}, {"version", MAF_SANDBOX_VERSION}}},
                                        {"spans", std::move(spans)}}})}}})}};
}

}  // namespace maf::sandbox::otel::detail
