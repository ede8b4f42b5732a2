// The egress proxy's request-head parser (request.hpp): what it accepts, what it refuses,
// and what it sends upstream. Rule ids: D-31 (the proxy behind ALLOWLIST; docs/backends/egress-proxy.md).
#include <catch2/catch.hpp>

#include "request.hpp"

using namespace maf::sandbox::egress_proxy;

namespace {
ParseResult parse(std::string_view head) { return parse_request_head(head); }
}  // namespace

TEST_CASE("D-31: CONNECT host:port parses to a lowercased target") {
  auto r = parse("CONNECT Allowed.Test.:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n");
  REQUIRE(r.request);
  CHECK(r.request->kind == RequestKind::Connect);
  CHECK(r.request->method == "CONNECT");
  CHECK(r.request->target == Target{"allowed.test", 443});
  CHECK(r.request->upstream_head.empty());
}

TEST_CASE("D-31: CONNECT to a bracketed IPv6 literal canonicalises the address") {
  auto r = parse("CONNECT [2001:DB8::0001]:8443 HTTP/1.1\r\n\r\n");
  REQUIRE(r.request);
  CHECK(r.request->target == Target{"2001:db8::1", 8443});
}

TEST_CASE("D-31: a CONNECT target without a valid port, or with userinfo, is refused 400") {
  for (const char* head : {"CONNECT allowed.test HTTP/1.1\r\n\r\n", "CONNECT allowed.test:0 HTTP/1.1\r\n\r\n",
                           "CONNECT allowed.test:65536 HTTP/1.1\r\n\r\n", "CONNECT allowed.test:44x HTTP/1.1\r\n\r\n",
                           "CONNECT user@allowed.test:443 HTTP/1.1\r\n\r\n", "CONNECT :443 HTTP/1.1\r\n\r\n",
                           "CONNECT a..b:443 HTTP/1.1\r\n\r\n", "CONNECT [::1:443 HTTP/1.1\r\n\r\n",
                           "CONNECT [fe80::1%eth0]:443 HTTP/1.1\r\n\r\n"}) {
    INFO(head);
    auto r = parse(head);
    CHECK_FALSE(r.request);
    CHECK(r.status == 400);
  }
}

TEST_CASE("D-31: an absolute-form GET is rewritten to origin-form with Host replaced and Connection: close") {
  auto r = parse(
      "GET http://Allowed.Test/path/x?q=1 HTTP/1.1\r\n"
      "Host: denied.test\r\n"
      "Proxy-Connection: keep-alive\r\n"
      "Proxy-Authorization: Basic Zm9vOmJhcg==\r\n"
      "Connection: keep-alive, X-Secret\r\n"
      "X-Secret: 1\r\n"
      "Accept: */*\r\n\r\n");
  REQUIRE(r.request);
  CHECK(r.request->kind == RequestKind::Forward);
  CHECK(r.request->target == Target{"allowed.test", 80});
  CHECK(r.request->upstream_head ==
        "GET /path/x?q=1 HTTP/1.1\r\nHost: allowed.test\r\nAccept: */*\r\nConnection: close\r\n\r\n");
}

TEST_CASE("D-31: a forward keeps a non-default port in Host and supplies / for an empty path") {
  auto r = parse("POST http://allowed.test:8080 HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
  REQUIRE(r.request);
  CHECK(r.request->target == Target{"allowed.test", 8080});
  CHECK(r.request->upstream_head ==
        "POST / HTTP/1.0\r\nHost: allowed.test:8080\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  auto q = parse("GET http://allowed.test?x HTTP/1.1\r\n\r\n");
  REQUIRE(q.request);
  CHECK(q.request->upstream_head.rfind("GET /?x HTTP/1.1\r\n", 0) == 0);
}

TEST_CASE("D-31: https://, origin-form and fragments are refused 400") {
  for (const char* head : {"GET https://allowed.test/ HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
                           "GET http://allowed.test/#frag HTTP/1.1\r\n\r\n", "GET ftp://allowed.test/ HTTP/1.1\r\n\r\n",
                           "GET http://u:p@allowed.test/ HTTP/1.1\r\n\r\n"}) {
    INFO(head);
    auto r = parse(head);
    CHECK_FALSE(r.request);
    CHECK(r.status == 400);
  }
}

TEST_CASE("D-31: heads two readers could read differently are refused 400") {
  for (const char* head : {
           "CONNECT allowed.test:443 HTTP/1.1\nHost: x\r\n\r\n",          // bare LF
           "CONNECT allowed.test:443 HTTP/1.1\r\nHost: x\r\r\n\r\n",      // bare CR
           "CONNECT allowed.test:443 HTTP/1.1\r\nHost: x\r\n y\r\n\r\n",  // obs-fold
           "CONNECT allowed.test:443  HTTP/1.1\r\n\r\n",                  // double space
           "CONNECT allowed.test:443 HTTP/2.0\r\n\r\n",                   // version
           "CONNECT allowed.test:443 HTTP/1.1\r\nBad Name: x\r\n\r\n",    // header name
           "CONNECT allowed.test:443 HTTP/1.1\r\nNoColon\r\n\r\n",
           "GET http://allowed.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
           "CONNECT allowed.test:443 HTTP/1.1\r\nX: a\x01z\r\n\r\n",  // control byte
           "CONNECT allowed.test:443 HTTP/1.1\r\n\r\nextra\r\n\r\n",  // not exactly one head
           "CONNECT allowed.test:443 HTTP/1.1\r\n",                   // unterminated
       }) {
    INFO(head);
    auto r = parse(head);
    CHECK_FALSE(r.request);
    CHECK(r.status == 400);
  }
  static constexpr char kNul[] = "CONNECT allowed.test:443 HTTP/1.1\r\nX: a\0b\r\n\r\n";
  const std::string nul(kNul, sizeof kNul - 1);
  CHECK(parse(nul).status == 400);
}

TEST_CASE("D-31: a head over the byte bound is 431; too many header lines is 400") {
  std::string big = "CONNECT allowed.test:443 HTTP/1.1\r\nX: " + std::string(kDefaultMaxHeadBytes, 'a') + "\r\n\r\n";
  CHECK(parse(big).status == 431);
  std::string many = "CONNECT allowed.test:443 HTTP/1.1\r\n";
  for (std::size_t i = 0; i <= kMaxHeaderLines; ++i) many += "X: 1\r\n";
  many += "\r\n";
  CHECK(parse(many).status == 400);
}

TEST_CASE("D-31: find_head_end finds the first blank line") {
  CHECK(find_head_end("CONNECT a:1 HTTP/1.1\r\n\r\nrest") == 24);
  CHECK(find_head_end("CONNECT a:1 HTTP/1.1\r\n") == std::string_view::npos);
}
