// The egress proxy's method/path rules, its in-tunnel HTTP/1.1 reader and chunked-body
// scanner (issue 45; docs/backends/egress-proxy.md "Terminated hosts"). Rule ids: C-9
// (method rules), C-10 (path rules).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "l7_rules.hpp"
#include "options.hpp"
#include "tunnel_http.hpp"

using namespace maf::sandbox::egress_proxy;

namespace {
const char* kRules = R"([{"host":"allowed.test","methods":["GET"],"paths":["/repo/"]},
                         {"host":"*.api.test:8443","paths":["/v1/*"]}])";
std::string head(const std::string& request_line, const std::string& fields = "Host: allowed.test\r\n") {
  return request_line + "\r\n" + fields + "\r\n";
}
}  // namespace

TEST_CASE("C-10: rules parse from JSON and find their host and port like allowlist entries") {
  const auto rules = L7Rules::parse_json(kRules);
  REQUIRE(rules.rules().size() == 2);
  CHECK(rules.find(true, "allowed.test", 443));
  CHECK(rules.find(false, "allowed.test", 80));
  CHECK_FALSE(rules.find(true, "allowed.test", 8443));
  CHECK(rules.find(true, "x.api.test", 8443));
  CHECK_FALSE(rules.find(true, "x.y.api.test", 8443));
  CHECK_FALSE(rules.find(true, "other.test", 443));
  CHECK(rules.rules()[0].describe() == "allowed.test methods [GET] paths [/repo/]");
}

TEST_CASE("C-10: bad rules are refused naming the rule") {
  CHECK_THROWS_WITH(L7Rules::parse_json("{}"), Catch::Contains("JSON array"));
  CHECK_THROWS_WITH(L7Rules::parse_json(R"([{"host":"a.test"}])"), Catch::Contains("rule 0 narrows nothing"));
  CHECK_THROWS_WITH(L7Rules::parse_json(R"([{"host":"a.test","paths":["/a/../b"]}])"),
                    Catch::Contains("rule 0") && Catch::Contains("'/a/../b'") && Catch::Contains("write '/b'"));
  CHECK_THROWS_WITH(L7Rules::parse_json(R"([{"host":"a.test","methods":[]}])"), Catch::Contains("non-empty"));
  CHECK_THROWS_WITH(L7Rules::parse_json(R"([{"host":"a.test","methods":["GET"],"query":1}])"),
                    Catch::Contains("unknown field 'query'"));
  CHECK_THROWS_AS(L7Rules::parse_json(R"([{"host":"a b","methods":["GET"]}])"), std::invalid_argument);
  const auto options = parse_options({"--rules", kRules}, [](const char*) { return std::nullopt; },
                                     [](const std::string&) { return std::string(); });
  CHECK(options.rules.rules().size() == 2);
}

TEST_CASE("C-9/C-10: a request is allowed when its method is listed and its canonical path matches") {
  const auto rules = L7Rules::parse_json(kRules);
  const L7Rule& rule = rules.rules()[0];
  auto ok = check_request(rule, "GET", "/repo/x.git/info/refs?service=git-upload-pack", "allowed.test");
  CHECK(ok.allowed);
  CHECK(ok.canonical_path == "/repo/x.git/info/refs");
  CHECK(ok.upstream_target == "/repo/x.git/info/refs?service=git-upload-pack");
  auto canon = check_request(rule, "GET", "/%72epo/./a", "allowed.test");
  CHECK(canon.allowed);
  CHECK(canon.upstream_target == "/repo/a");  // sent upstream as checked

  auto method = check_request(rule, "POST", "/repo/x", "allowed.test");
  CHECK_FALSE(method.allowed);
  CHECK(method.status == 403);
  CHECK(method.reason ==
        "refused POST /repo/x on allowed.test: method POST is not allowed by rule allowed.test methods [GET] paths [/repo/]");
  auto path = check_request(rule, "GET", "/admin", "allowed.test");
  CHECK(path.status == 403);
  CHECK_THAT(path.reason, Catch::Contains("path /admin matches no path of rule"));
  CHECK_FALSE(check_request(rule, "get", "/repo/", "allowed.test").allowed);  // methods are case-sensitive
  CHECK_FALSE(check_request(rule, "GET", "/Repo/x", "allowed.test").allowed);  // so are paths
  CHECK_FALSE(check_request(rule, "GET", "/repo/../admin", "allowed.test").allowed);
  for (const char* traversal : {"/repo/..%2fadmin", "/repo/%2e%2e/admin", "//repo/", "/repo/%C0%AE%C0%AE/admin"}) {
    auto v = check_request(rule, "GET", traversal, "allowed.test");
    CHECK_FALSE(v.allowed);
    CHECK(v.status == 400);
  }
  CHECK(refusal_body("a\r\nb") == "maf-sandbox egress proxy: a  b\n");
}

TEST_CASE("C-10: the in-tunnel reader checks Host against the CONNECT target and finds the framing") {
  const Target tunnel{"allowed.test", 443};
  auto r = parse_tunnel_request(head("GET /repo/x HTTP/1.1", "Host: Allowed.Test\r\nProxy-Authorization: x\r\n"), tunnel, 16384);
  REQUIRE(r.request);
  CHECK(r.request->framing == BodyFraming::None);
  CHECK(tunnel_upstream_head(*r.request, "/repo/x") == "GET /repo/x HTTP/1.1\r\nHost: Allowed.Test\r\n\r\n");
  CHECK(parse_tunnel_request(head("GET / HTTP/1.1", "Host: allowed.test:443\r\n"), tunnel, 16384).request);

  auto other = parse_tunnel_request(head("GET / HTTP/1.1", "Host: other.test\r\n"), tunnel, 16384);
  CHECK(other.status == 403);
  CHECK_THAT(other.reason, Catch::Contains("Host header names other.test"));
  CHECK(parse_tunnel_request(head("GET / HTTP/1.1", "Host: allowed.test:8443\r\n"), tunnel, 16384).status == 403);
  CHECK(parse_tunnel_request(head("GET / HTTP/1.1", ""), tunnel, 16384).reason == "no Host header");
  CHECK(parse_tunnel_request(head("GET / HTTP/1.1", "Host: allowed.test\r\nHost: allowed.test\r\n"), tunnel, 16384).status == 400);
  CHECK(parse_tunnel_request(head("GET https://allowed.test/ HTTP/1.1"), tunnel, 16384).status == 400);
  CHECK(parse_tunnel_request(head("CONNECT /x HTTP/1.1"), tunnel, 16384).status == 400);
  auto len = parse_tunnel_request(head("POST /repo/ HTTP/1.1", "Host: allowed.test\r\nContent-Length: 12\r\n"), tunnel, 16384);
  REQUIRE(len.request);
  CHECK(len.request->framing == BodyFraming::Length);
  CHECK(len.request->content_length == 12);
  CHECK(parse_tunnel_request(head("POST / HTTP/1.1", "Host: allowed.test\r\nContent-Length: 1\r\nContent-Length: 1\r\n"), tunnel, 16384).status == 400);
  CHECK(parse_tunnel_request(head("POST / HTTP/1.1", "Host: allowed.test\r\nContent-Length: -1\r\n"), tunnel, 16384).status == 400);
  CHECK(parse_tunnel_request(head("POST / HTTP/1.1", "Host: allowed.test\r\nTransfer-Encoding: gzip, chunked\r\n"), tunnel, 16384).status == 400);
  CHECK(parse_tunnel_request(head("POST / HTTP/1.1", "Host: allowed.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n"), tunnel, 16384).status == 400);
  auto chunked = parse_tunnel_request(head("POST / HTTP/1.1", "Host: allowed.test\r\nTransfer-Encoding: Chunked\r\n"), tunnel, 16384);
  REQUIRE(chunked.request);
  CHECK(chunked.request->framing == BodyFraming::Chunked);
  auto upgrade = parse_tunnel_request(head("GET /ws HTTP/1.1", "Host: allowed.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"), tunnel, 16384);
  REQUIRE(upgrade.request);
  CHECK(upgrade.request->upgrade);
}

TEST_CASE("C-10: the chunked scanner finds where a body ends, whatever the pieces, and refuses bad framing") {
  const std::string body = "5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nTrailer: x\r\n\r\n";
  const std::string next = "GET /next HTTP/1.1\r\n";
  for (std::size_t piece : {1u, 2u, 7u, 1000u}) {
    ChunkedScanner scanner;
    const std::string all = body + next;
    std::size_t used = 0;
    bool done = false;
    for (std::size_t at = 0; at < all.size() && !done; at += piece) {
      const auto step = scanner.feed(std::string_view(all).substr(at, piece));
      REQUIRE_FALSE(step.error);
      used += step.consumed;
      done = step.done;
    }
    CHECK(done);
    CHECK(used == body.size());
  }
  for (const char* bad : {"x\r\n", "5\nhello", "5\r\nhelloX", "0\r\nbad\n", "ffffffffffffffff1\r\n"}) {
    ChunkedScanner scanner;
    CHECK(scanner.feed(bad).error);
  }
}
