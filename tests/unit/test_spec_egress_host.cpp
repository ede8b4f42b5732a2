// egress_allow host validation at SandboxSpec construction (egress.hpp egress_host_problem;
// issue 22): names, wildcard names and IP literals, with an optional port; nothing else.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/spec.hpp"

using namespace maf::sandbox;

namespace {

SandboxSpec allowing(std::string host) {
  return SandboxSpec({.kind = "k", .egress_allow = {std::move(host)}, .egress = Egress::Allowlist});
}

}  // namespace

TEST_CASE("issue-22: names, wildcard names, IP literals and host:port are egress_allow hosts") {
  for (const std::string host :
       {"pypi.org", "PyPI.org.", "allowed.test", "localhost", "a-b.c_d.example", "xn--bcher-kva.example",
        "*.data.mcr.microsoft.com", "*.example.com", "pypi.org:8443", "*.example.com:443", "192.0.2.1",
        "192.0.2.1:8080", "2001:db8::1", "::1", "[2001:db8::1]", "[2001:db8::1]:8443"}) {
    INFO(host);
    CHECK_FALSE(egress_host_problem(host));
    CHECK_NOTHROW(allowing(host));
  }
}

TEST_CASE("issue-22: a malformed egress_allow host is a ValueError naming the entry") {
  // The entry the issue found: the proxy split it on the comma and allowed denied.test.
  CHECK_THROWS_AS(allowing("allowed.test,denied.test"), ValueError);
  CHECK_THROWS_WITH(allowing("allowed.test,denied.test"),
                    Catch::Contains("'allowed.test,denied.test'") && Catch::Contains("','") &&
                        Catch::Contains("kind 'k'"));
  for (const std::string& host : std::vector<std::string>{
           "", "a.test b.test", "a.test\tb.test", "a.test\n", "user@a.test", "a.test#frag", "a.test/path",
        "http://a.test", "a.test;b.test", "*", "*.com", "*.", "a.*.test", "*a.test", "a*.test", "**.a.test",
        "a..test", ".a.test", "-a.test", "a-.test", "a.test:", "a.test:0", "a.test:65536", "a.test:08",
        "a.test:80:81", "1.2.3", "1.2.3.4.5", "0x7f.0.0.1", "01.2.3.4", "256.1.1.1", "[a.test]", "[::1", "[::1]x",
        "[::1]:", "::1:99999:", "fe80::1%eth0", "*.192.0.2.1", "b\xc3\xbc" "cher.example",
        std::string(64, 'a') + ".test", std::string("a\0b.test", 8)}) {
    INFO(host);
    CHECK(egress_host_problem(host));
    CHECK_THROWS_AS(allowing(host), ValueError);
  }
}

TEST_CASE("issue-22: method-scoped rules are held to the same host shapes") {
  CHECK_THROWS_WITH(
      SandboxSpec({.kind = "k",
                   .egress_allow = {EgressRule("api.test,evil.test", std::vector<std::string>{"GET"})},
                   .egress = Egress::Allowlist}),
      Catch::Contains("'api.test,evil.test'"));
}
