// The control channel's messages (control_protocol.hpp; docs/backends/egress-proxy.md EGU-1…EGU-6).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "control_protocol.hpp"
#include "options.hpp"

using namespace maf::sandbox::egress_proxy;

TEST_CASE("EGU-1: an update carries its id and the new allowlist") {
  const auto m = parse_control_line(R"({"op":"update","id":7,"allow":"a.test,b.test:8443"})");
  CHECK(m.op == ControlOp::Update);
  CHECK(m.id == 7);
  CHECK(m.allow == "a.test,b.test:8443");
}

TEST_CASE("EGU-4: an answer names its ask, its verdict and a cleaned reason") {
  const auto m = parse_control_line(R"({"op":"answer","ask":3,"verdict":"deny","reason":"no\r\nX-Injected: 1"})");
  CHECK(m.op == ControlOp::Answer);
  CHECK(m.id == 3);
  CHECK(m.verdict == DeciderVerdict::Deny);
  CHECK(m.reason == "no  X-Injected: 1");  // never a header line in the guest's 403
  CHECK(parse_control_line(R"({"op":"answer","ask":1,"verdict":"allow-once"})").verdict == DeciderVerdict::AllowOnce);
  CHECK(parse_control_line(R"({"op":"answer","ask":1,"verdict":"allow-sandbox"})").verdict ==
        DeciderVerdict::AllowSandbox);
  CHECK(clean_reason(std::string(5000, 'x')).size() == kMaxDeciderReason);
}

TEST_CASE("EGU-1: a bad control line is refused naming what is wrong") {
  auto refused = [](const std::string& line, const std::string& naming) {
    try {
      parse_control_line(line);
      FAIL("accepted: " << line);
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Catch::Contains(naming));
    }
  };
  refused("not json", "not a JSON object");
  refused(R"({"id":1})", "'op'");
  refused(R"({"op":"reboot"})", "unknown control op 'reboot'");
  refused(R"({"op":"update","allow":"a.test"})", "'id'");
  refused(R"({"op":"update","id":-1,"allow":"a.test"})", "'id'");
  refused(R"({"op":"update","id":1})", "'allow'");
  refused(R"({"op":"answer","ask":1,"verdict":"maybe"})", "unknown decider verdict 'maybe'");
  refused(R"({"op":"answer","ask":1,"verdict":"deny","reason":5})", "'reason' is not a string");
  refused(std::string(kMaxControlLine + 1, ' '), "exceeds");
}

TEST_CASE("EGU-1: the lines the proxy writes are single JSON lines") {
  const auto ask = nlohmann::json::parse(ask_line(9, "CONNECT", "x.test", 443));
  CHECK(ask["ask"] == 9);
  CHECK(ask["host"] == "x.test");
  CHECK(ask["port"] == 443);
  CHECK(nlohmann::json::parse(ok_line(2, "a.test", 1))["closed"] == 1);
  CHECK(nlohmann::json::parse(error_line(2, "bad\nthing"))["error"] == "bad\nthing");
  CHECK(ok_line(1, "a", 0).find('\n') == std::string::npos);
  CHECK(nlohmann::json::parse(updated_line("a.test", 2))["event"] == "policy-updated");
}

TEST_CASE("EGU-1: --control, --decider-timeout-ms and --control-send parse; bad values are named") {
  const auto none = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  const auto no_file = [](const std::string&) -> std::string { return {}; };
  const auto o = parse_options({"--control", "@maf-control", "--decider-timeout-ms", "250"}, none, no_file);
  CHECK(o.control_address == "@maf-control");
  CHECK(o.decider_timeout.count() == 250);
  const auto s = parse_options({"--control-send", "@x", R"({"op":"decide"})"}, none, no_file);
  REQUIRE(s.control_send);
  CHECK(s.control_send->first == "@x");
  CHECK_THROWS_WITH(parse_options({"--control", "@"}, none, no_file), Catch::Contains("--control"));
  CHECK_THROWS_WITH(parse_options({"--decider-timeout-ms", "0"}, none, no_file), Catch::Contains("--decider-timeout-ms"));
  CHECK_THROWS_WITH(parse_options({"--control-send", "@x"}, none, no_file), Catch::Contains("--control-send"));
  CHECK(std::string(kFeatures).find("live-policy") != std::string::npos);
}
