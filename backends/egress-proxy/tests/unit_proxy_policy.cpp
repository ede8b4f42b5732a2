// The egress proxy's allowlist, pinned names, routability test, options and decision log.
// Rule ids: D-31 (allowlist topology and proxy), C-55 (a policy is part of the identity).
#include <catch2/catch.hpp>

#include <map>
#include <stdexcept>

#include "allowlist.hpp"
#include "decision_log.hpp"
#include "options.hpp"
#include "pinned_names.hpp"

using namespace maf::sandbox::egress_proxy;

TEST_CASE("D-31: a bare host allows CONNECT to 443 and plain HTTP to 80 only") {
  auto list = Allowlist::parse("Allowed.Test");
  CHECK(list.allows(RequestKind::Connect, {"allowed.test", 443}));
  CHECK(list.allows(RequestKind::Forward, {"allowed.test", 80}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"allowed.test", 80}));
  CHECK_FALSE(list.allows(RequestKind::Forward, {"allowed.test", 443}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"allowed.test", 22}));
}

TEST_CASE("D-31: host:port allows exactly that port, for both kinds") {
  auto list = Allowlist::parse("allowed.test:8080, [2001:db8::1]:443");
  CHECK(list.allows(RequestKind::Connect, {"allowed.test", 8080}));
  CHECK(list.allows(RequestKind::Forward, {"allowed.test", 8080}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"allowed.test", 443}));
  CHECK(list.allows(RequestKind::Connect, {"2001:db8::1", 443}));
  CHECK(list.describe() == "allowed.test:8080,[2001:db8::1]:443");
}

TEST_CASE("D-31: matching is exact: no suffix or prefix widening") {
  auto list = Allowlist::parse("allowed.test");
  CHECK_FALSE(list.allows(RequestKind::Connect, {"sub.allowed.test", 443}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"allowed.test.evil", 443}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"llowed.test", 443}));
  CHECK_THROWS_AS(Allowlist::parse("user@allowed.test"), std::invalid_argument);
}

TEST_CASE("issue-22: a wildcard name covers exactly one label in front of its base, ports as for a name") {
  auto list = Allowlist::parse("*.Data.MCR.microsoft.com.,*.api.test:8443");
  CHECK(list.allows(RequestKind::Connect, {"westus2.data.mcr.microsoft.com", 443}));
  CHECK(list.allows(RequestKind::Forward, {"westus2.data.mcr.microsoft.com", 80}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"westus2.data.mcr.microsoft.com", 8443}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"data.mcr.microsoft.com", 443}));           // not the base
  CHECK_FALSE(list.allows(RequestKind::Connect, {"a.b.data.mcr.microsoft.com", 443}));       // one label only
  CHECK_FALSE(list.allows(RequestKind::Connect, {"evil-data.mcr.microsoft.com", 443}));      // no suffix match
  CHECK_FALSE(list.allows(RequestKind::Connect, {"x.data.mcr.microsoft.com.evil", 443}));
  CHECK(list.allows(RequestKind::Connect, {"v1.api.test", 8443}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"v1.api.test", 443}));
  CHECK(list.describe() == "*.data.mcr.microsoft.com,*.api.test:8443");
  for (const char* bad : {"*", "*.", "*.com", "a.*.test", "*a.test", "**.a.test", "*.192.0.2.1", "*.[::1]"}) {
    INFO(bad);
    CHECK_THROWS_AS(Allowlist::parse(bad), std::invalid_argument);
  }
}

TEST_CASE("issue-22: a bare IPv6 literal (as the spec allows) is one entry for its default ports") {
  auto list = Allowlist::parse("2001:db8::1");
  REQUIRE(list.entries().size() == 1);
  CHECK(list.allows(RequestKind::Connect, {"2001:db8::1", 443}));
  CHECK_FALSE(list.allows(RequestKind::Connect, {"2001:db8::1", 1}));
}

TEST_CASE("D-31: an empty allowlist allows nothing") {
  auto list = Allowlist::parse(" , ");
  CHECK(list.empty());
  CHECK(list.describe() == "nothing");
  CHECK_FALSE(list.allows(RequestKind::Connect, {"allowed.test", 443}));
}

TEST_CASE("D-31: addresses that are not globally routable are recognised") {
  for (const char* ip : {"127.0.0.1", "10.1.2.3", "172.17.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
                         "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "192.0.2.2", "::1", "::",
                         "fe80::1", "fd00::1", "ff02::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2001:db8::1",
                         "2002:7f00:1::"}) {
    INFO(ip);
    CHECK_FALSE(is_globally_routable(ip));
  }
  for (const char* ip : {"1.1.1.1", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "::ffff:1.1.1.1"}) {
    INFO(ip);
    CHECK(is_globally_routable(ip));
  }
  CHECK_FALSE(is_globally_routable("not-an-ip"));
}

TEST_CASE("D-31: pins come from --resolve and hosts-file text, keyed by the normalised host") {
  PinnedNames pins;
  pins.add_pin("Allowed.Test=172.30.0.2");
  pins.add_hosts_text("# comment\n172.30.0.3 denied.test other.test # trailing\n\n[::1] v6.test\n");
  REQUIRE(pins.lookup("allowed.test"));
  CHECK(*pins.lookup("allowed.test") == std::vector<std::string>{"172.30.0.2"});
  CHECK(*pins.lookup("other.test") == std::vector<std::string>{"172.30.0.3"});
  CHECK(*pins.lookup("v6.test") == std::vector<std::string>{"::1"});
  CHECK(pins.lookup("absent.test") == nullptr);
  CHECK_THROWS_AS(pins.add_pin("allowed.test"), std::invalid_argument);
  CHECK_THROWS_AS(pins.add_pin("allowed.test=not-an-ip"), std::invalid_argument);
  CHECK_THROWS_AS(pins.add_hosts_text("172.30.0.2\n"), std::invalid_argument);
}

TEST_CASE("D-31: options union --allow with MAF_EGRESS_ALLOW and MAF_SANDBOX_ALLOW") {
  std::map<std::string, std::string> env{{"MAF_EGRESS_ALLOW", "a.test"}, {"MAF_SANDBOX_ALLOW", "b.test"},
                                         {"MAF_SANDBOX_PROXY_PORT", "3130"}};
  auto get = [&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional(it->second);
  };
  auto read = [](const std::string& path) -> std::string {
    if (path == "/hosts") return "172.30.0.9 c.test\n";
    throw std::invalid_argument("no file " + path);
  };
  auto o = parse_options({"--allow", "c.test:8080", "--resolve", "a.test=172.30.0.2", "--hosts-file", "/hosts",
                          "--max-connections", "4", "--idle-timeout", "7"},
                         get, read);
  CHECK(o.allow.describe() == "a.test,b.test,c.test:8080");
  CHECK(o.listen_port == 3130);
  CHECK(o.max_connections == 4);
  CHECK(o.idle_timeout == std::chrono::seconds(7));
  CHECK(o.pins.lookup("c.test"));
  auto l = parse_options({"--listen", "127.0.0.1:9"}, get, read);
  CHECK(l.listen_address == "127.0.0.1");
  CHECK(l.listen_port == 9);
  CHECK_THROWS_AS(parse_options({"--bogus", "1"}, get, read), std::invalid_argument);
  CHECK_THROWS_AS(parse_options({"--allow"}, get, read), std::invalid_argument);
  CHECK_THROWS_AS(parse_options({"--max-connections", "0"}, get, read), std::invalid_argument);
  CHECK_THROWS_AS(parse_options({"--listen", "host:80"}, get, read), std::invalid_argument);
}

TEST_CASE("D-31: a decision is one JSON line; client bytes cannot break it") {
  Decision d;
  d.decision = "deny";
  d.method = "CONNECT";
  d.host = "x\"\n\xff";
  d.port = 443;
  d.status = 403;
  const std::string line = decision_json(d);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.rfind("{\"event\":\"decision\",\"decision\":\"deny\",\"method\":\"CONNECT\",", 0) == 0);
  CHECK(line.find("\"status\":403") != std::string::npos);
}
