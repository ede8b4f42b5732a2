// support/proxy_log.hpp: the egress proxy's decision lines, as Docker's drain and WSLC's
// disposal read them (docs/backends/egress-proxy.md; docs/observability.md OBS-7).
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/support/proxy_log.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::support;

TEST_CASE("D-27: decision lines of either proxy become decisions; nothing else does") {
  const std::string log =
      R"({"event":"listening","address":"0.0.0.0","port":3128,"allowing":"allowed.test"})"
      "\n"
      R"({"event":"decision","decision":"allow","method":"CONNECT","host":"allowed.test","port":443,"status":0})"
      "\n"
      R"({"event":"decision","decision":"deny","method":"GET","host":"denied.test","port":80,"status":403})"
      "\n"
      R"({"event":"decision","decision":"bad-request","method":"","host":"","port":0,"status":400})"
      "\n"
      "listening on 3128; allowing: allowed.test\n"
      "DENY-NONGLOBAL internal.test:443\r\n"
      "UNREACHABLE [2001:db8::1]:443\n"
      "DENY nocolon\n"
      "{not json\n";
  auto parsed = parse_proxy_decisions(log, false, 1000);
  CHECK_FALSE(parsed.truncated);
  CHECK(parsed.decisions == std::vector<ProxyDecision>{{"ALLOW", "allowed.test", 443},
                                                       {"DENY", "denied.test", 80},
                                                       {"DENY-NONGLOBAL", "internal.test", 443},
                                                       {"UNREACHABLE", "2001:db8::1", 443}});
  CHECK(parse_proxy_decisions(log, true, 1000).truncated);  // the reader stopped early

  // A full tail may have lost its head: flagged; more decisions than the bound: flagged.
  std::string full;
  for (int i = 0; i < 1000; ++i) full += "ALLOW a.test:443\n";
  auto tail = parse_proxy_decisions(full, false, 1000);
  CHECK(tail.truncated);
  CHECK(tail.decisions.size() == 1000);
  CHECK_FALSE(parse_proxy_decisions(full, false, 0).truncated);  // the whole log was read
  CHECK_FALSE(parse_proxy_decisions("ALLOW a.test:443\n", false, 1000).truncated);
  auto over = parse_proxy_decisions(full + "DENY b.test:80\n", false, 0);
  CHECK(over.truncated);
  CHECK(over.decisions.size() == kMaxProxyDecisions);
}

TEST_CASE("proxy decision log: a JSON decision's port is an integer of 0-65535 or 0; wrong types are no decision") {
  auto one = [](const std::string& line) { return parse_proxy_decisions(line, false, 0).decisions; };
  CHECK(one(R"({"event":"decision","decision":"deny","host":"h","port":65535})") ==
        std::vector<ProxyDecision>{{"DENY", "h", 65535}});
  CHECK(one(R"({"event":"decision","decision":"deny","host":"h","port":1e300})") ==
        std::vector<ProxyDecision>{{"DENY", "h", 0}});
  CHECK(one(R"({"event":"decision","decision":"deny","host":"h","port":-1})") ==
        std::vector<ProxyDecision>{{"DENY", "h", 0}});
  CHECK(one(R"({"event":"decision","decision":"deny","host":"h","port":99999999999999999999})") ==
        std::vector<ProxyDecision>{{"DENY", "h", 0}});
  CHECK(one(R"({"event":"decision","decision":"deny","host":7,"port":80})").empty());
  CHECK(one(R"({"event":"decision","decision":3,"host":"h","port":80})").empty());
  CHECK(one(R"(["event","decision"])").empty());
  CHECK(one("ALLOW h:70000").empty());
  CHECK(one("ALLOW h:8a").empty());
}

TEST_CASE("OBS-7: each decision becomes one NetworkDecisionEvent, keyed and in log order") {
  std::vector<NetworkDecisionEvent> seen;
  auto set = std::make_shared<const ObserverSet>(std::vector<std::shared_ptr<SandboxObserver>>{
      make_observer([&](const SandboxEvent& e) { seen.push_back(std::get<NetworkDecisionEvent>(e)); })});
  ObserverHub hub;
  hub.attach(set);
  const SandboxKey key{"s", "t", "a", "call-1"};
  notify_proxy_decisions(hub, "wslc", key, "n-proxy", {{"ALLOW", "a.test", 443}, {"DENY", "b.test", 80}}, true);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].decision == "ALLOW");
  CHECK(seen[0].host == "a.test");
  CHECK(seen[0].port == 443);
  CHECK(seen[1].decision == "DENY");
  for (const auto& e : seen) {
    CHECK(e.context.key == key);
    CHECK(e.context.call_id == "call-1");
    CHECK(e.context.backend == "wslc");
    CHECK(e.proxy == "n-proxy");
    CHECK(e.truncated);
  }
  seen.clear();
  notify_proxy_decisions(hub, "wslc", std::nullopt, "n-proxy", {{"ALLOW", "a.test", 443}}, false);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].context.key == SandboxKey{});  // unattributed
  CHECK(seen[0].context.call_id.empty());
}

TEST_CASE("C-10 OBS-7 issue-45: a decision a method/path rule made carries method, canonical path, rule and reason into "
          "the event and its JSON") {
  const std::string log =
      R"({"event":"decision","decision":"deny","method":"DELETE","host":"allowed.test","port":443,"status":403,)"
      R"("bytes_up":0,"bytes_down":0,"path":"/repo/x","rule":"allowed.test methods [GET] paths [/repo/]",)"
      R"("reason":"refused DELETE /repo/x on allowed.test: method DELETE is not allowed by rule allowed.test methods [GET] paths [/repo/]"})"
      "\n"
      R"({"event":"decision","decision":"allow","method":"CONNECT","host":"whole.test","port":443,"status":0})"
      "\n";
  const auto parsed = parse_proxy_decisions(log, false, 0);
  REQUIRE(parsed.decisions.size() == 2);
  const auto& d = parsed.decisions[0];
  CHECK(d.decision == "DENY");
  CHECK(d.method == "DELETE");
  CHECK(d.path == "/repo/x");
  CHECK(d.rule == "allowed.test methods [GET] paths [/repo/]");
  CHECK_THAT(d.reason, Catch::Contains("method DELETE is not allowed"));
  CHECK(parsed.decisions[1].method.empty());  // a host-only decision keeps its shape
  CHECK(parsed.decisions[1].rule.empty());

  std::vector<SandboxEvent> seen;
  auto set = std::make_shared<const ObserverSet>(std::vector<std::shared_ptr<SandboxObserver>>{
      make_observer([&](const SandboxEvent& e) { seen.push_back(e); })});
  ObserverHub hub;
  hub.attach(set);
  notify_proxy_decisions(hub, "docker", std::nullopt, "p", parsed.decisions, false);
  REQUIRE(seen.size() == 2);
  const std::string json = event_to_json(seen[0]);
  CHECK_THAT(json, Catch::Contains(R"("method":"DELETE")") && Catch::Contains(R"("path":"/repo/x")") &&
                       Catch::Contains(R"("rule":"allowed.test methods [GET] paths [/repo/]")") &&
                       Catch::Contains("method DELETE is not allowed"));
  CHECK(event_to_json(seen[1]).find("\"rule\"") == std::string::npos);
}
