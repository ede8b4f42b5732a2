// maf::sandbox-otel without an engine: the traceparent and OTEL_EXPORTER_OTLP_HEADERS
// parsers, the environment, and the OTLP/JSON encoding of synthetic events as a loopback
// receiver decodes it. docs/observability.md OTEL-1…OTEL-6.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/otel.hpp"
#include "otel/otlp_receiver.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::otel;
using namespace std::chrono_literals;
using maf::sandbox::test::OtlpReceiver;
using maf::sandbox::test::span_attribute;
using maf::sandbox::test::string_attribute;

namespace {

/// Sets or clears environment variables for one test, restoring them after.
class Env {
public:
  Env& set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
    return *this;
  }
  ~Env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// Options that post to `receiver` soon after an event arrives.
OtlpOptions options_for(const OtlpReceiver& receiver) {
  OtlpOptions o;
  o.endpoint = receiver.url();
  o.flush_interval = 20ms;
  return o;
}

Env clean_env() {
  Env env;
  for (const char* n : {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
                        "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                        "TRACEPARENT"})
    env.set(n, nullptr);
  return env;
}

}  // namespace

TEST_CASE("OTEL-3: traceparent parses the W3C form and refuses every broken rule by name") {
  const auto p = parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  CHECK(p.trace_id[0] == 0x0a);
  CHECK(p.span_id[7] == 0x31);
  CHECK(p.flags == 1);
  CHECK(to_string(p) == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  // A later version may carry more fields after a '-'.
  CHECK_NOTHROW(parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"));
  const std::pair<const char*, const char*> bad[] = {
      {"", "shorter"},
      {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0", "shorter"},
      {"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "version ff"},
      {"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", "trace id"},
      {"00-00000000000000000000000000000000-b7ad6b7169203331-01", "trace id"},
      {"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "parent id"},
      {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g", "flags"},
      {"00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "separated"},
      {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-", "exactly 55"},
      {"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x", "only with '-'"},
  };
  for (const auto& [value, rule] : bad) {
    INFO(value);
    try {
      parse_traceparent(value);
      FAIL("accepted");
    } catch (const ValueError& e) {
      CHECK_THAT(e.what(), Catch::Contains(rule));
      CHECK_THAT(e.what(), Catch::Contains("traceparent"));
    }
  }
}

TEST_CASE("OTEL-5: OTEL_EXPORTER_OTLP_HEADERS parses key=value lists and refuses bad entries by key") {
  const auto h = parse_otlp_headers(" api-key = secret%20one ,, x-tenant=a%2Cb,");
  REQUIRE(h.size() == 2);
  CHECK(h[0] == std::pair<std::string, std::string>{"api-key", "secret one"});
  CHECK(h[1] == std::pair<std::string, std::string>{"x-tenant", "a,b"});
  CHECK(parse_otlp_headers("").empty());
  const std::pair<const char*, const char*> bad[] = {
      {"novalue", "no '='"},
      {"=v", "key is empty"},
      {"bad key=v", "not an HTTP header name"},
      {"k=%4", "cut short"},
      {"k=%zz", "two hex digits"},
      {"k=a%0D%0AInjected: 1", "CR, LF or NUL"},
  };
  for (const auto& [value, rule] : bad) {
    INFO(value);
    try {
      parse_otlp_headers(value);
      FAIL("accepted");
    } catch (const ValueError& e) {
      CHECK_THAT(e.what(), Catch::Contains(rule));
      CHECK_THAT(e.what(), Catch::Contains("OTEL_EXPORTER_OTLP_HEADERS"));
    }
  }
  // A secret value is never repeated in the message.
  try {
    parse_otlp_headers("api-key=supersecret%zz");
  } catch (const ValueError& e) {
    CHECK_THAT(e.what(), !Catch::Contains("supersecret"));
  }
}

TEST_CASE("OTEL-5: the standard variables configure the exporter; none set means no exporter") {
  auto env = clean_env();
  CHECK_FALSE(OtlpOptions::from_environment());
  CHECK(exporter_from_environment() == nullptr);
  env.set("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/");
  env.set("OTEL_EXPORTER_OTLP_HEADERS", "api-key=k1");
  env.set("OTEL_SERVICE_NAME", "agent-host");
  env.set("TRACEPARENT", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  auto o = OtlpOptions::from_environment();
  REQUIRE(o);
  CHECK(o->endpoint == "http://collector:4318/v1/traces");
  CHECK(o->headers.size() == 1);
  CHECK(o->service_name == "agent-host");
  REQUIRE(o->parent);
  CHECK(to_string(*o->parent) == "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  env.set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://other:9999/custom");
  CHECK(OtlpOptions::from_environment()->endpoint == "http://other:9999/custom");
  env.set("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
  CHECK_THROWS_WITH(OtlpOptions::from_environment(), Catch::Contains("OTEL_EXPORTER_OTLP_PROTOCOL='grpc'"));
  env.set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json");
  CHECK_NOTHROW(OtlpOptions::from_environment());
  env.set("TRACEPARENT", "garbage");
  CHECK_THROWS_AS(OtlpOptions::from_environment(), ValueError);
}

TEST_CASE("OTEL-5: the exporter refuses an unusable configuration by name") {
  CHECK_THROWS_WITH(OtlpExporter(OtlpOptions{}), Catch::Contains("endpoint"));
  OtlpOptions o;
  o.endpoint = "http://127.0.0.1:1/v1/traces";
  o.max_queue = 0;
  CHECK_THROWS_WITH(OtlpExporter(o), Catch::Contains("max_queue"));
}

TEST_CASE("OTEL-6: arguments and results are exported only when the host opts in; headers are sent") {
  for (const bool opted_in : {false, true}) {
    OtlpReceiver receiver;
    OtlpOptions o;
    o.endpoint = receiver.url();
    o.headers = {{"x-api-key", "k1"}};
    o.export_payloads = opted_in;
    o.flush_interval = 20ms;
    {
      OtlpExporter exporter(o);
      ToolCallEvent call;
      call.context.call_id = "c1";
      call.tool = "python";
      call.phase = ToolCallPhase::Admitted;
      exporter.on_event(call);
      call.phase = ToolCallPhase::Released;
      call.arguments = R"j({"code":"print(1)"})j";
      call.result = "1";
      exporter.on_event(call);
      REQUIRE(exporter.flush(30s));
    }
    const auto spans = receiver.spans();
    REQUIRE(spans.size() == 1);
    CHECK(spans[0]["name"] == "execute_tool python");
    CHECK(spans[0]["_scope"] == "maf-sandbox");
    CHECK(span_attribute(spans[0], "gen_ai.tool.call.arguments").is_null() == !opted_in);
    CHECK(span_attribute(spans[0], "gen_ai.tool.call.result").is_null() == !opted_in);
    CHECK(receiver.header("x-api-key") == std::vector<std::string>{"k1"});
  }
}

TEST_CASE("OTEL-1: a conversation sandbox's events go under the one call in flight for its holder") {
  OtlpReceiver receiver;
  OtlpExporter exporter(options_for(receiver));
  const SandboxKey conversation{"s", "t", "a", ""};
  ToolCallEvent call;
  call.context.key = conversation;
  call.context.call_id = "tool-call-1";
  call.tool = "shell";
  call.phase = ToolCallPhase::Admitted;
  exporter.on_event(call);
  ExecEvent exec;
  exec.context.key = conversation;  // no call id: the sandbox serves the whole conversation
  exec.context.time = std::chrono::system_clock::now();
  exec.exit_code = 0;
  exporter.on_event(exec);
  ExecEvent stranger = exec;
  stranger.context.key.agent_id = "other-agent";
  exporter.on_event(stranger);
  call.phase = ToolCallPhase::Released;
  exporter.on_event(call);
  REQUIRE(exporter.flush(30s));
  const auto spans = receiver.spans();
  REQUIRE(spans.size() == 3);
  const auto& parent = spans[2];
  CHECK(parent["name"] == "execute_tool shell");
  CHECK(spans[0]["parentSpanId"] == parent["spanId"]);
  CHECK(spans[0]["traceId"] == parent["traceId"]);
  // Another agent's sandbox is not this call's child.
  CHECK(spans[1].value("parentSpanId", "") != parent["spanId"]);
}

TEST_CASE("OTEL-1: under CALL scope a sandbox's events find their call by the key's host-made call id") {
  OtlpReceiver receiver;
  OtlpExporter exporter(options_for(receiver));
  // The tool layer's admitted event: the model's id, and the key whose call_id the sandbox's
  // own events carry.
  ToolCallEvent call;
  call.context.key = SandboxKey{"s", "t", "a", "call-0123456789abcdef"};
  call.context.call_id = "model-call-1";
  call.tool = "shell";
  call.phase = ToolCallPhase::Admitted;
  exporter.on_event(call);
  ExecEvent exec;
  exec.context.key = call.context.key;
  exec.context.call_id = "call-0123456789abcdef";
  exec.context.time = std::chrono::system_clock::now();
  exporter.on_event(exec);
  call.phase = ToolCallPhase::Released;
  exporter.on_event(call);
  // After the release the name maps to nothing: a late event joins the session's trace.
  exporter.on_event(exec);
  REQUIRE(exporter.flush(30s));
  const auto spans = receiver.spans();
  REQUIRE(spans.size() == 3);
  CHECK(spans[1]["name"] == "execute_tool shell");
  CHECK(spans[0]["parentSpanId"] == spans[1]["spanId"]);
  CHECK_FALSE(spans[2].contains("parentSpanId"));
}

TEST_CASE("OTEL-4: events from four threads, racing a flush, are each accepted or dropped and counted") {
  OtlpReceiver receiver;
  OtlpOptions o = options_for(receiver);
  o.flush_interval = 5ms;
  o.max_queue = 64;  // small: the worker swaps often, and some events are dropped
  o.max_batch = 8;
  OtlpExporter exporter(o);
  constexpr int kThreads = 4;
  constexpr int kEvents = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&exporter, t] {
      for (int i = 0; i < kEvents; ++i) {
        ExecEvent e;
        e.context.key = SandboxKey{"s", "thread-" + std::to_string(t), "a", ""};
        e.context.time = std::chrono::system_clock::now();
        e.argv_digest = std::string(64, 'a');  // past the small-string buffer: a real copy
        exporter.on_event(e);
      }
    });
  for (int i = 0; i < 20; ++i) exporter.flush(10ms);
  for (auto& t : threads) t.join();
  REQUIRE(exporter.flush(30s));
  const auto stats = exporter.stats();
  CHECK(stats.events_accepted + stats.events_dropped == kThreads * kEvents);
  CHECK(stats.events_accepted > 0);
  // Every accepted exec event is one span, exported or lost.
  CHECK(stats.spans_exported + stats.spans_lost == stats.events_accepted);
  CHECK(receiver.spans().size() == stats.spans_exported);
}

TEST_CASE("OBS-1 OBS-3 OTEL-4: four threads through the observer fan-out, the exporter among the observers") {
  // What the router and the backends do: emit() over an ObserverSet (the NVI, the tool
  // layer) and ObserverHub::notify (a backend's proxy decisions), from several threads at
  // once, with an observer ahead of the exporter that throws now and then. Under TSan
  // (label `tsan`) this is the race check of issue 29's "events from four threads".
  OtlpReceiver receiver;
  OtlpOptions o = options_for(receiver);
  o.flush_interval = 5ms;
  o.max_queue = 256;
  o.max_batch = 16;
  auto exporter = std::make_shared<OtlpExporter>(o);
  std::atomic<int> counted{0};
  std::atomic<int> thrown{0};
  auto thrower = make_observer([&thrown](const SandboxEvent& e) {
    if (context_of(e).key.agent_id == "a" && thrown.fetch_add(1) % 97 == 0) throw std::runtime_error("observer fault");
  });
  auto counter = make_observer([&counted](const SandboxEvent&) { counted.fetch_add(1); });
  auto set = std::make_shared<const ObserverSet>(std::vector<std::shared_ptr<SandboxObserver>>{thrower, exporter, counter});
  ObserverHub hub;
  hub.attach(set);
  constexpr int kThreads = 4;
  constexpr int kEvents = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const SandboxKey key{"s", "thread-" + std::to_string(t), "a", ""};
      for (int i = 0; i < kEvents; ++i) {
        if (t % 2 == 0) {
          ExecEvent e;
          e.context.key = key;
          e.context.backend = "process";
          e.argv_digest = std::string(64, 'a');
          e.exit_code = i % 3;
          emit(set.get(), e);  // the NVI's path: stamps the time, then the fan-out
        } else {
          NetworkDecisionEvent e;
          e.context.key = key;
          e.context.backend = "wslc";
          e.decision = i % 2 ? "ALLOW" : "DENY";
          e.host = "host-" + std::to_string(i) + ".test";
          e.port = 443;
          e.proxy = "maf-sandbox-wslc-0123456789ab-proxy";
          hub.notify(e);  // a backend's path
        }
      }
    });
  for (int i = 0; i < 20; ++i) exporter->flush(10ms);
  for (auto& t : threads) t.join();
  REQUIRE(exporter->flush(30s));
  // The throwing observer changed nothing: the observers after it saw every event.
  CHECK(counted.load() == kThreads * kEvents);
  CHECK(thrown.load() == kThreads * kEvents);
  const auto stats = exporter->stats();
  CHECK(stats.events_accepted + stats.events_dropped == kThreads * kEvents);
  CHECK(stats.events_accepted > 0);
  CHECK(stats.spans_exported + stats.spans_lost == stats.events_accepted);
  CHECK(receiver.spans().size() == stats.spans_exported);
}
