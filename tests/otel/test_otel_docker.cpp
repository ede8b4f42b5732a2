// OTLP export of real work on Docker (label `docker`), decoded by a loopback receiver: one
// tool call's span tree on a CLOSED container, and an ALLOWLIST sandbox whose proxy denied a
// host — the decision, drained at disposal, arrives as a network_decision span under the
// call. docs/observability.md OTEL-1, OBS-7. Everything this test creates is in its own scope
// and is asserted gone by that scope's labels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>

#include "engine_fixture.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/otel.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "otel/otlp_receiver.hpp"
#include "otel/span_tree.hpp"

using namespace maf::sandbox;
using namespace docker_test;
using namespace std::chrono_literals;
using maf::sandbox::test::check_children;
using maf::sandbox::test::copy_text_body;
using maf::sandbox::test::find_span;
using maf::sandbox::test::OtlpReceiver;
using maf::sandbox::test::span_attribute;
using maf::sandbox::test::string_attribute;
using maf::sandbox::test::text_schema;

namespace {

std::string proxy_image() {
  const char* env = std::getenv("MAF_SANDBOX_EGRESS_PROXY_IMAGE");
  return env && *env ? env : "maf-sandbox-egress-proxy:local";
}

const RouterOptions kContainerFloor = RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{});

void tool_call(const SandboxRouter& router, const SandboxKey& key, const std::string& kind, ToolCallPhase phase) {
  ToolCallEvent e;
  e.context.key = key;
  e.context.call_id = key.call_id;
  e.context.kind = kind;
  e.tool = "shell";
  e.phase = phase;
  emit(router.observers().get(), std::move(e));
}

std::vector<nlohmann::json> named(const std::vector<nlohmann::json>& spans, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& s : spans)
    if (s["name"] == name) out.push_back(s);
  return out;
}

std::shared_ptr<otel::OtlpExporter> exporter_for(const OtlpReceiver& receiver) {
  otel::OtlpOptions o;
  o.endpoint = receiver.url();
  o.flush_interval = 50ms;
  return std::make_shared<otel::OtlpExporter>(o);
}

/// Nothing labelled with this test's scope is left on the engine.
void assert_scope_gone(const std::string& scope) {
  const auto digest = support::label_value(scope);
  CHECK(docker_cli({"ps", "-aq", "--filter", "label=maf-sandbox.scope=" + digest}).empty());
  CHECK(docker_cli({"network", "ls", "-q", "--filter", "label=maf-sandbox.scope=" + digest}).empty());
}

}  // namespace

TEST_CASE("OTEL-1: a tool call on Docker exports execute_tool with acquire, transfers, exec and cleanup") {
  OtlpReceiver receiver;
  auto exporter = exporter_for(receiver);
  std::string scope_name;
  {
    Scope scope;
    scope_name = scope.scope;
    SandboxRouter router({scope.backend}, kContainerFloor, {exporter});
    const SandboxKey key = scope.key("agent-1", "call-d1");
    const auto spec = spec_for(kImage, kAllCaps, "shell");
    tool_call(router, key, "shell", ToolCallPhase::Admitted);
    auto sandbox = scope.run([&] { return router.acquire(key, spec); });
    scope.run([&] { return sandbox->write_file("in.txt", "abc"); });
    CHECK(scope.sh(*sandbox, "cat in.txt; exit 3").exit_code == 3);
    CHECK(scope.run([&] { return sandbox->read_file("in.txt"); }) == "abc");
    sandbox.reset();
    CHECK(scope.run([&] { return router.dispose_kind(key, "shell"); }));
    tool_call(router, key, "shell", ToolCallPhase::Released);
    REQUIRE(exporter->flush(60s));
  }
  assert_scope_gone(scope_name);
  const auto spans = receiver.spans();
  REQUIRE(spans.size() == 6);
  const auto call = named(spans, "execute_tool shell");
  REQUIRE(call.size() == 1);
  CHECK(string_attribute(call[0], "gen_ai.tool.call.id") == "call-d1");
  for (const char* child : {"maf_sandbox.acquire", "maf_sandbox.transfer_in", "maf_sandbox.exec",
                            "maf_sandbox.transfer_out", "maf_sandbox.cleanup"}) {
    INFO(child);
    const auto s = named(spans, child);
    REQUIRE(s.size() == 1);
    CHECK(s[0]["parentSpanId"] == call[0]["spanId"]);
    CHECK(s[0]["traceId"] == call[0]["traceId"]);
    CHECK(string_attribute(s[0], "maf_sandbox.backend") == "docker");
  }
  CHECK(string_attribute(named(spans, "maf_sandbox.acquire")[0], "maf_sandbox.isolation") == "container");
  CHECK(span_attribute(named(spans, "maf_sandbox.exec")[0], "maf_sandbox.exit_code")["intValue"] == "3");
}

TEST_CASE("OBS-7 OTEL-1: the proxy's DENY reaches the observers as a network decision under the call") {
  OtlpReceiver receiver;
  auto exporter = exporter_for(receiver);
  std::vector<NetworkDecisionEvent> decisions;
  std::mutex mutex;
  auto recorder = make_observer([&](const SandboxEvent& e) {
    if (const auto* d = std::get_if<NetworkDecisionEvent>(&e)) {
      std::lock_guard lock(mutex);
      decisions.push_back(*d);
    }
  });
  std::string scope_name;
  SandboxKey key;
  {
    auto config = test_config();
    config.egress_proxy_image = proxy_image();
    config.egress_inhibit_ipv4_fallback = true;  // D-32: this engine may predate 28
    Scope scope(config);
    scope_name = scope.scope;
    SandboxRouter router({scope.backend}, kContainerFloor, {exporter, recorder});
    key = scope.key("agent-1", "call-egress");
    SandboxSpec::Fields f;
    f.kind = "egress";
    f.image = kImage;
    f.requires_capabilities = CapabilitySet{Capability::Exec};
    f.egress = Egress::Allowlist;
    f.egress_allow.emplace_back("allowed.test");
    const SandboxSpec spec(std::move(f));
    tool_call(router, key, "egress", ToolCallPhase::Admitted);
    auto sandbox = scope.run([&] { return router.acquire(key, spec); });
    // A CONNECT to a host off the allowlist, straight at the proxy the backend named.
    const auto r = scope.sh(*sandbox,
                            "p=${http_proxy#http://}; p=${p%/}; "
                            "printf 'CONNECT denied.test:80 HTTP/1.1\\r\\nHost: denied.test:80\\r\\n\\r\\n' "
                            "| nc -w 5 ${p%:*} ${p##*:}; echo rc=$?");
    INFO(r.stdout_bytes << r.stderr_bytes);
    CHECK(r.stdout_bytes.find("403") != std::string::npos);
    sandbox.reset();
    CHECK(scope.run([&] { return router.dispose_kind(key, "egress"); }));
    tool_call(router, key, "egress", ToolCallPhase::Released);
    REQUIRE(exporter->flush(60s));
  }
  assert_scope_gone(scope_name);
  {
    std::lock_guard lock(mutex);
    REQUIRE_FALSE(decisions.empty());
    const auto denied = std::find_if(decisions.begin(), decisions.end(),
                                     [](const auto& d) { return d.decision == "DENY" && d.host == "denied.test"; });
    REQUIRE(denied != decisions.end());
    CHECK(denied->context.key == key);
    CHECK(denied->context.backend == "docker");
    CHECK(denied->port == 80);
  }
  const auto spans = receiver.spans();
  const auto call = named(spans, "execute_tool shell");
  REQUIRE(call.size() == 1);
  const auto net = named(spans, "maf_sandbox.network_decision");
  REQUIRE_FALSE(net.empty());
  bool found = false;
  for (const auto& s : net) {
    if (string_attribute(s, "maf_sandbox.decision") != "DENY") continue;
    found = true;
    CHECK(string_attribute(s, "server.address") == "denied.test");
    CHECK(s["parentSpanId"] == call[0]["spanId"]);
  }
  CHECK(found);
}

TEST_CASE("OTEL-1, OTEL-2: a SandboxedTool call on Docker exports its span tree; a refused one an errored execute_tool") {
  OtlpReceiver receiver;
  auto exporter = exporter_for(receiver);
  std::string scope_name;
  {
    Scope scope;
    scope_name = scope.scope;
    auto router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{scope.backend},
                                                  kContainerFloor,
                                                  std::vector<std::shared_ptr<SandboxObserver>>{exporter});
    CallerContext context;
    context.current_scope = [&] { return scope.scope; };
    context.current_thread_id = [&] { return std::optional<std::string>(scope.thread); };
    SandboxedToolOptions options;
    options.input_schema = text_schema();
    const SandboxedTool tool = sandboxed_tool(copy_text_body(), router, context, "agent-1", spec_for(kImage, kAllCaps, "shell"),
                                "copy_text", options);
    const ToolResult ok = scope.run([&] { return tool.invoke({"model-d2", "copy_text", {{"text", "abc"}}}); });
    REQUIRE_FALSE(ok.is_error);
    CHECK(std::get<TextContent>(ok.content.at(0).value).text == "abc");
    const ToolResult bad = scope.run([&] { return tool.invoke({"model-d3", "copy_text", {{"text", 1}}}); });
    CHECK(bad.is_error);
    REQUIRE(exporter->flush(60s));
  }
  assert_scope_gone(scope_name);
  const auto spans = receiver.spans();
  // The served call and its five children (a conversation-scope call disposes by default),
  // and the refused call's span alone.
  REQUIRE(spans.size() == 7);
  const auto calls = named(spans, "execute_tool copy_text");
  REQUIRE(calls.size() == 2);
  const auto& served = string_attribute(calls[0], "gen_ai.tool.call.id") == "model-d2" ? calls[0] : calls[1];
  const auto& refused = &served == &calls[0] ? calls[1] : calls[0];
  CHECK(string_attribute(served, "gen_ai.operation.name") == "execute_tool");
  CHECK(string_attribute(served, "maf_sandbox.backend") == "docker");
  CHECK_FALSE(served.contains("status"));
  check_children(spans, served, "docker",
                 {"maf_sandbox.acquire", "maf_sandbox.transfer_in", "maf_sandbox.exec", "maf_sandbox.transfer_out",
                  "maf_sandbox.cleanup"});
  CHECK(string_attribute(*find_span(spans, "maf_sandbox.cleanup"), "maf_sandbox.rung") == "dispose");
  CHECK(string_attribute(*find_span(spans, "maf_sandbox.acquire"), "maf_sandbox.isolation") == "container");
  CHECK(string_attribute(refused, "gen_ai.tool.call.id") == "model-d3");
  CHECK(refused["status"]["code"] == 2);
  CHECK(string_attribute(refused, "error.type") == "invalid_arguments");
}
