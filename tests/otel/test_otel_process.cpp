// OTLP export of real work on the process backend (real bubblewrap), decoded by a loopback
// receiver: the span tree of one tool call — names, parent links, attributes — the host's
// traceparent as its parent, the error status of a refused acquire, and an unreachable or
// slow collector that loses spans (counted) without blocking or failing a call.
// docs/observability.md OTEL-1…OTEL-6.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/otel.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/sync.hpp"
#include "otel/otlp_receiver.hpp"
#include "otel/span_tree.hpp"

using namespace maf::sandbox;
using namespace std::chrono_literals;
using maf::sandbox::test::check_children;
using maf::sandbox::test::copy_text_body;
using maf::sandbox::test::find_span;
using maf::sandbox::test::OtlpReceiver;
using maf::sandbox::test::span_attribute;
using maf::sandbox::test::string_attribute;
using maf::sandbox::test::text_schema;
namespace fs = std::filesystem;

namespace {

struct ProcessFixture {
  fs::path root = fs::temp_directory_path() / ("maf-otel-process-" + std::to_string(::getpid()));
  std::shared_ptr<SandboxBackend> backend;
  BlockingRunner run;

  ProcessFixture() {
    process::ProcessBackendConfig c;
    c.root = root;
    backend = process::make_process_backend(c);
  }
  ~ProcessFixture() {
    try {
      run([&] { return backend->reap(std::chrono::seconds(0), std::nullopt); });
    } catch (const std::exception&) {
    }
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  /// A router over the backend, observed by `observer`.
  SandboxRouter router(std::shared_ptr<SandboxObserver> observer) const {
    return SandboxRouter({backend}, RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}),
                         {std::move(observer)});
  }
};

SandboxSpec script_spec() {
  return SandboxSpec({.kind = "script",
                      .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut}});
}

otel::OtlpOptions options_for(const std::string& url) {
  otel::OtlpOptions o;
  o.endpoint = url;
  o.service_name = "otel-process-test";
  o.flush_interval = 50ms;
  return o;
}

/// What the tool layer emits around a call (the tool-call events of observer.hpp).
void tool_call(const SandboxRouter& router, const SandboxKey& key, ToolCallPhase phase, std::string error_type = {},
               std::string traceparent = {}) {
  ToolCallEvent e;
  e.context.key = key;
  e.context.call_id = key.call_id;
  e.context.kind = "script";
  e.tool = "run_script";
  e.phase = phase;
  e.error_type = std::move(error_type);
  e.traceparent = std::move(traceparent);
  emit(router.observers().get(), std::move(e));
}

}  // namespace

TEST_CASE("OTEL-1: a tool call on the process backend exports execute_tool with its children") {
  ProcessFixture f;
  OtlpReceiver receiver;
  auto exporter = std::make_shared<otel::OtlpExporter>(options_for(receiver.url()));
  SandboxRouter router = f.router(exporter);
  const SandboxKey key{"tenant", "conv", "agent", "call-42"};
  const std::string host_parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  tool_call(router, key, ToolCallPhase::Admitted, {}, host_parent);
  auto sandbox = f.run([&] { return router.acquire(key, script_spec()); });
  f.run([&] { return sandbox->write_file("in.txt", "hello"); });
  const ExecResult r = f.run([&] { return sandbox->exec(Command("cat in.txt > out.txt; echo done")); });
  CHECK(r.exit_code == 0);
  CHECK(f.run([&] { return sandbox->read_file("out.txt"); }) == "hello");
  sandbox.reset();
  CHECK(f.run([&] { return router.dispose_kind(key, "script"); }));
  tool_call(router, key, ToolCallPhase::Released);

  REQUIRE(exporter->flush(30s));
  receiver.wait_for_spans(6);
  const auto spans = receiver.spans();
  REQUIRE(spans.size() == 6);
  CHECK(exporter->stats().spans_exported == 6);
  CHECK(receiver.content_types().front() == "application/json");

  const auto* call = find_span(spans, "execute_tool run_script");
  REQUIRE(call);
  CHECK((*call)["kind"] == 1);  // INTERNAL
  CHECK(string_attribute(*call, "gen_ai.operation.name") == "execute_tool");
  CHECK(string_attribute(*call, "gen_ai.tool.name") == "run_script");
  CHECK(string_attribute(*call, "gen_ai.tool.call.id") == "call-42");
  CHECK_FALSE(call->contains("status"));
  // OTEL-3: the host's traceparent is the call's parent.
  CHECK((*call)["traceId"] == "0af7651916cd43dd8448eb211c80319c");
  CHECK((*call)["parentSpanId"] == "b7ad6b7169203331");
  CHECK((*call)["_service"] == "otel-process-test");

  check_children(spans, *call, "process",
                 {"maf_sandbox.acquire", "maf_sandbox.transfer_in", "maf_sandbox.exec", "maf_sandbox.transfer_out",
                  "maf_sandbox.cleanup"});
  const auto* acquire = find_span(spans, "maf_sandbox.acquire");
  CHECK(string_attribute(*acquire, "maf_sandbox.isolation") == "os_process");
  CHECK(string_attribute(*acquire, "maf_sandbox.egress") == "closed");
  CHECK(string_attribute(*acquire, "maf_sandbox.outcome") == "started");
  const auto* exec = find_span(spans, "maf_sandbox.exec");
  CHECK(span_attribute(*exec, "maf_sandbox.exit_code")["intValue"] == "0");
  CHECK(span_attribute(*exec, "maf_sandbox.stdout_bytes")["intValue"] == "5");
  CHECK(string_attribute(*exec, "maf_sandbox.argv_digest").size() == 64);
  const auto* in = find_span(spans, "maf_sandbox.transfer_in");
  CHECK(span_attribute(*in, "maf_sandbox.bytes")["intValue"] == "5");
  CHECK(string_attribute(*in, "maf_sandbox.guest_path") == "in.txt");
  const auto* cleanup = find_span(spans, "maf_sandbox.cleanup");
  CHECK(string_attribute(*cleanup, "maf_sandbox.rung") == "dispose");
  CHECK(string_attribute(*cleanup, "maf_sandbox.outcome") == "done");
}

TEST_CASE("OTEL-2: a refused acquire exports an error span under an errored execute_tool") {
  ProcessFixture f;
  OtlpReceiver receiver;
  auto exporter = std::make_shared<otel::OtlpExporter>(options_for(receiver.url()));
  SandboxRouter router = f.router(exporter);
  const SandboxKey key{"tenant", "conv", "agent", "call-refused"};
  // The process backend declares no ATTACHED_IDENTITY: the router refuses before the backend is touched.
  const SandboxSpec spec({.kind = "script", .requires_capabilities = {Capability::Exec, Capability::AttachedIdentity}});

  tool_call(router, key, ToolCallPhase::Admitted);
  std::string error_type;
  try {
    f.run([&] { return router.acquire(key, spec); });
  } catch (const SandboxCapabilityNotSupported& e) {
    error_type = error_type_name(e);
  }
  REQUIRE(error_type == "SandboxCapabilityNotSupported");
  tool_call(router, key, ToolCallPhase::Released, error_type);

  REQUIRE(exporter->flush(30s));
  receiver.wait_for_spans(2);
  const auto spans = receiver.spans();
  REQUIRE(spans.size() == 2);
  const auto* call = find_span(spans, "execute_tool run_script");
  const auto* acquire = find_span(spans, "maf_sandbox.acquire");
  REQUIRE(call);
  REQUIRE(acquire);
  CHECK((*acquire)["parentSpanId"] == (*call)["spanId"]);
  CHECK((*acquire)["status"]["code"] == 2);
  CHECK_THAT((*acquire)["status"]["message"].get<std::string>(), Catch::Contains("attached_identity"));
  CHECK(string_attribute(*acquire, "error.type") == "SandboxCapabilityNotSupported");
  CHECK(string_attribute(*acquire, "maf_sandbox.outcome") == "refused");
  CHECK((*call)["status"]["code"] == 2);
  CHECK(string_attribute(*call, "error.type") == "SandboxCapabilityNotSupported");
  CHECK_FALSE(call->contains("parentSpanId"));  // no host parent: the call is a root
}

TEST_CASE("OTEL-4: an unreachable collector loses spans, counted; every call completes") {
  ProcessFixture f;
  // A port that was just bound and released: nothing listens there.
  std::string url;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    url = "http://127.0.0.1:" + std::to_string(a.local_endpoint().port()) + "/v1/traces";
  }
  auto options = options_for(url);
  options.timeout = 500ms;
  auto exporter = std::make_shared<otel::OtlpExporter>(options);
  SandboxRouter router = f.router(exporter);
  const SandboxKey key{"tenant", "conv", "agent", "call-unreachable"};
  auto sandbox = f.run([&] { return router.acquire(key, script_spec()); });
  for (int i = 0; i < 5; ++i) CHECK(f.run([&] { return sandbox->exec(Command("true")); }).exit_code == 0);
  REQUIRE(exporter->flush(30s));
  const auto stats = exporter->stats();
  CHECK(stats.events_accepted == 6);
  CHECK(stats.spans_exported == 0);
  CHECK(stats.spans_lost == 6);
  CHECK(stats.posts_failed >= 1);
}

TEST_CASE("OTEL-4: a slow collector and a full queue drop events, counted; calls never wait for it") {
  ProcessFixture f;
  OtlpReceiver slow(1500ms);  // holds every answer well past the exporter's bound
  auto options = options_for(slow.url());
  options.timeout = 200ms;
  options.max_queue = 2;
  options.max_batch = 1;
  auto exporter = std::make_shared<otel::OtlpExporter>(options);
  SandboxRouter router = f.router(exporter);
  const SandboxKey key{"tenant", "conv", "agent", "call-slow"};
  auto sandbox = f.run([&] { return router.acquire(key, script_spec()); });
  constexpr int kCalls = 20;
  int completed = 0;
  for (int i = 0; i < kCalls; ++i) completed += f.run([&] { return sandbox->exec(Command("true")); }).exit_code == 0;
  CHECK(completed == kCalls);
  // A burst on the calling thread while the exporter's thread waits on the collector: the
  // queue of two cannot hold it, so the rest is dropped, never waited for.
  constexpr int kBurst = 200;
  for (int i = 0; i < kBurst; ++i) emit(router.observers().get(), ExecEvent{});
  exporter->flush(30s);
  const auto stats = exporter->stats();
  // Every event was either accepted or dropped, and nothing accepted was exported: each POST
  // outlived its bound.
  CHECK(stats.events_accepted + stats.events_dropped == kCalls + 1 + kBurst);
  CHECK(stats.events_dropped > 0);
  CHECK(stats.spans_exported == 0);
  CHECK(stats.spans_lost == stats.events_accepted);
}

// --- A real tool call (SandboxedTool): the tool layer's own events, not simulated ones ---

namespace {

/// Collects every event, for what the exporter does not turn into a span (queued).
struct Recorder {
  std::mutex mutex;
  std::vector<SandboxEvent> events;
  std::shared_ptr<SandboxObserver> observer() {
    return make_observer([this](const SandboxEvent& e) {
      std::lock_guard lock(mutex);
      events.push_back(e);
    });
  }
  std::vector<ToolCallEvent> tool_calls() {
    std::lock_guard lock(mutex);
    std::vector<ToolCallEvent> out;
    for (const auto& e : events)
      if (const auto* t = std::get_if<ToolCallEvent>(&e)) out.push_back(*t);
    return out;
  }
};

CallerContext caller() {
  CallerContext c;
  c.current_scope = [] { return std::string("tenant"); };
  c.current_thread_id = [] { return std::optional<std::string>("conv"); };
  return c;
}

std::shared_ptr<SandboxRouter> shared_router(const ProcessFixture& f, std::vector<std::shared_ptr<SandboxObserver>> observers) {
  return std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{f.backend},
                                         RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}),
                                         std::move(observers));
}

}  // namespace

TEST_CASE("OTEL-1, OTEL-3: a SandboxedTool call (CALL scope) exports execute_tool over its sandbox's spans") {
  ProcessFixture f;
  OtlpReceiver receiver;
  auto exporter = std::make_shared<otel::OtlpExporter>(options_for(receiver.url()));
  Recorder recorder;
  auto router = shared_router(f, {exporter, recorder.observer()});
  SandboxSpec spec({.kind = "script",
                    .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                    .isolation_scope = IsolationScope::Call});
  SandboxedToolOptions o;
  o.input_schema = text_schema();
  o.observation.current_traceparent = [] { return std::string("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"); };
  const SandboxedTool tool = sandboxed_tool(copy_text_body(), router, caller(), "agent", spec, "copy_text", o);

  const ToolResult result = f.run([&] { return tool.invoke({"model-call-7", "copy_text", {{"text", "hello"}}}); });
  REQUIRE_FALSE(result.is_error);
  CHECK(std::get<TextContent>(result.content.at(0).value).text == "hello");

  REQUIRE(exporter->flush(30s));
  receiver.wait_for_spans(6);
  const auto spans = receiver.spans();
  // execute_tool, acquire, transfer_in, exec, transfer_out, cleanup (CALL scope disposes).
  REQUIRE(spans.size() == 6);
  const auto* call = find_span(spans, "execute_tool copy_text");
  REQUIRE(call);
  CHECK((*call)["kind"] == 1);
  CHECK(string_attribute(*call, "gen_ai.operation.name") == "execute_tool");
  CHECK(string_attribute(*call, "gen_ai.tool.name") == "copy_text");
  CHECK(string_attribute(*call, "gen_ai.tool.call.id") == "model-call-7");
  CHECK(string_attribute(*call, "maf_sandbox.backend") == "process");
  CHECK_FALSE(call->contains("status"));
  CHECK((*call)["traceId"] == "0af7651916cd43dd8448eb211c80319c");
  CHECK((*call)["parentSpanId"] == "b7ad6b7169203331");
  // OTEL-6: no payload without the opt-in.
  CHECK(span_attribute(*call, "gen_ai.tool.call.arguments").is_null());

  // The sandbox's events carry the key's host-made call id; the exporter links it to the
  // model's call through the admitted event.
  check_children(spans, *call, "process",
                 {"maf_sandbox.acquire", "maf_sandbox.transfer_in", "maf_sandbox.exec", "maf_sandbox.transfer_out",
                  "maf_sandbox.cleanup"});
  const auto* cleanup = find_span(spans, "maf_sandbox.cleanup");
  CHECK(string_attribute(*cleanup, "maf_sandbox.rung") == "dispose");
  CHECK(string_attribute(*cleanup, "maf_sandbox.outcome") == "done");
  CHECK(span_attribute(*find_span(spans, "maf_sandbox.transfer_in"), "maf_sandbox.bytes")["intValue"] == "5");

  // The tool layer's own events: admitted then released, both naming the model's call id and
  // the key the sandbox was acquired with (its call_id the host-made name).
  const auto calls = recorder.tool_calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].phase == ToolCallPhase::Admitted);
  CHECK(calls[1].phase == ToolCallPhase::Released);
  for (const auto& e : calls) {
    CHECK(e.context.call_id == "model-call-7");
    CHECK(e.tool == "copy_text");
    CHECK(e.context.key.scope == "tenant");
    CHECK(e.context.key.thread_id == "conv");
    CHECK_THAT(e.context.key.call_id, Catch::StartsWith("call-"));
    CHECK_FALSE(e.arguments);
  }
  CHECK(calls[0].traceparent == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  CHECK(calls[1].error_type.empty());
}

TEST_CASE("OTEL-2, C-119: a SandboxedTool call refused at admission is an errored execute_tool; queued is reported") {
  ProcessFixture f;
  OtlpReceiver receiver;
  auto exporter = std::make_shared<otel::OtlpExporter>(options_for(receiver.url()));
  Recorder recorder;
  auto router = shared_router(f, {exporter, recorder.observer()});
  SandboxedToolOptions o;
  o.input_schema = text_schema();
  o.admission.exclusive = true;
  o.admission.timeout = 300ms;
  const SandboxedTool tool = sandboxed_tool(copy_text_body(), router, caller(), "agent", script_spec(), "copy_text", o);

  // Another exclusive call holds the (key, kind): this one waits, then is refused.
  const SandboxKey key{"tenant", "conv", "agent", ""};
  const AdmitOptions exclusive{true, 10s};
  CallTicket held = f.run([&] { return router->admit_call(key, "script", exclusive); });
  const ToolResult result = f.run([&] { return tool.invoke({"model-call-8", "copy_text", {{"text", "x"}}}); });
  CHECK(result.is_error);
  CHECK(std::get<TextContent>(result.content.at(0).value).text == kRefusalSandboxUnavailable);
  f.run([&] { return router->release_call(std::move(held)); });

  REQUIRE(exporter->flush(30s));
  receiver.wait_for_spans(1);
  const auto spans = receiver.spans();
  REQUIRE(spans.size() == 1);  // nothing was acquired: the call's span alone
  const auto* call = find_span(spans, "execute_tool copy_text");
  REQUIRE(call);
  CHECK((*call)["status"]["code"] == 2);
  CHECK(string_attribute(*call, "error.type") == "refused");
  CHECK(string_attribute(*call, "gen_ai.tool.call.id") == "model-call-8");

  const auto calls = recorder.tool_calls();
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].phase == ToolCallPhase::Admitted);
  CHECK(calls[1].phase == ToolCallPhase::Queued);  // the router's: the admission had to wait
  CHECK(calls[1].context.call_id == "model-call-8");
  CHECK(calls[1].tool == "copy_text");
  CHECK(calls[1].context.key == key);
  CHECK(calls[2].phase == ToolCallPhase::Released);
  CHECK(calls[2].error_type == "refused");
}

TEST_CASE("OTEL-2, OTEL-6: a call with invalid arguments is one errored execute_tool; payloads only when opted in") {
  ProcessFixture f;
  OtlpReceiver receiver;
  auto eo = options_for(receiver.url());
  eo.export_payloads = true;
  auto exporter = std::make_shared<otel::OtlpExporter>(eo);
  auto router = shared_router(f, {exporter});
  bool ran = false;
  ToolBody body = [&ran](SandboxToolSession, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
    ran = true;
    co_return ToolResult::text("ran");
  };
  SandboxedToolOptions o;
  o.input_schema = text_schema();
  o.observation.observe_payloads = true;
  const SandboxedTool tool = sandboxed_tool(body, router, caller(), "agent", script_spec(), "copy_text", o);

  const ToolResult bad = f.run([&] { return tool.invoke({"model-call-9", "copy_text", {{"text", 42}}}); });
  CHECK(bad.is_error);
  CHECK_FALSE(ran);
  const ToolResult good = f.run([&] { return tool.invoke({"model-call-10", "copy_text", {{"text", "ok"}}}); });
  CHECK_FALSE(good.is_error);
  CHECK(ran);

  REQUIRE(exporter->flush(30s));
  receiver.wait_for_spans(2);
  const auto spans = receiver.spans();
  REQUIRE(spans.size() == 2);  // neither call acquired a sandbox
  const nlohmann::json* refused = nullptr;
  const nlohmann::json* served = nullptr;
  for (const auto& s : spans) {
    CHECK(s["name"] == "execute_tool copy_text");
    (string_attribute(s, "gen_ai.tool.call.id") == "model-call-9" ? refused : served) = &s;
  }
  REQUIRE(refused);
  REQUIRE(served);
  CHECK((*refused)["status"]["code"] == 2);
  CHECK(string_attribute(*refused, "error.type") == "invalid_arguments");
  CHECK(string_attribute(*refused, "gen_ai.tool.call.arguments") == R"({"text":42})");
  CHECK_FALSE(served->contains("status"));
  CHECK(string_attribute(*served, "gen_ai.tool.call.id") == "model-call-10");
  CHECK(string_attribute(*served, "gen_ai.tool.call.arguments") == R"({"text":"ok"})");
  CHECK(string_attribute(*served, "gen_ai.tool.call.result") == "ran");
}

TEST_CASE("OBS-3: an observer that throws on every tool-call event changes no SandboxedTool result") {
  ProcessFixture f;
  std::atomic<int> seen{0};
  auto thrower = make_observer([&seen](const SandboxEvent&) {
    ++seen;
    throw std::runtime_error("observer failure");
  });
  auto router = shared_router(f, {thrower});
  SandboxedToolOptions o;
  o.input_schema = text_schema();
  const SandboxedTool tool = sandboxed_tool(copy_text_body(), router, caller(), "agent", script_spec(), "copy_text", o);
  const ToolResult served = f.run([&] { return tool.invoke({"model-call-11", "copy_text", {{"text", "same"}}}); });
  REQUIRE_FALSE(served.is_error);
  CHECK(std::get<TextContent>(served.content.at(0).value).text == "same");
  const ToolResult bad = f.run([&] { return tool.invoke({"model-call-12", "copy_text", {}}); });
  CHECK(bad.is_error);
  CHECK_THAT(std::get<TextContent>(bad.content.at(0).value).text, Catch::Contains("invalid arguments"));
  // admitted, acquire, two transfers, exec, cleanup, released; then the bad call's released.
  CHECK(seen >= 8);
}
