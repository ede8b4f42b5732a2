// Brokered credentials in the proxy (credentials.hpp; docs/backends/egress-proxy.md CRED-6…CRED-8).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "credentials.hpp"

using namespace maf::sandbox::egress_proxy;

namespace {

constexpr const char* kPlaceholder = "maf-cred-github-0123456789abcdef0123456789abcdef";

Credentials github(bool allow_http = false) {
  auto c = Credentials::parse_json(std::string(R"([{"name":"github","hosts":["api.github.com"],"header":"Authorization",)") +
                                   R"("format":"Bearer {value}","placeholder":")" + kPlaceholder + R"(","allow_http":)" +
                                   (allow_http ? "true" : "false") + "}]");
  c.load_values(R"({"github":"ghp_REAL"})");
  return c;
}

std::string auth(const char* value) { return std::string("Accept: */*\r\nAuthorization: ") + value + "\r\n"; }

}  // namespace

TEST_CASE("CRED-8: the placeholder becomes the value in the credential's header toward a bound host") {
  const auto c = github();
  std::string fields = auth((std::string("Bearer ") + kPlaceholder).c_str());
  const auto out = c.apply("/user", fields, "api.github.com", true);
  CHECK_FALSE(out.refused);
  CHECK(out.swapped == std::vector<std::string>{"github"});
  CHECK(fields == "Accept: */*\r\nAuthorization: Bearer ghp_REAL\r\n");
}

TEST_CASE("CRED-8: a head without a placeholder passes untouched") {
  const auto c = github();
  std::string fields = auth("Bearer something-else");
  const auto before = fields;
  CHECK_FALSE(c.apply("/", fields, "pypi.org", true).refused);
  CHECK(fields == before);
}

TEST_CASE("CRED-8: the placeholder toward another host, outside its header, or in the target is refused") {
  const auto c = github();
  std::string fields = auth((std::string("Bearer ") + kPlaceholder).c_str());
  auto out = c.apply("/", fields, "pypi.org", true);
  CHECK(out.refused);
  CHECK(out.credential == "github");
  CHECK_THAT(out.reason, Catch::Contains("'github'") && Catch::Contains("pypi.org") && Catch::Contains("not bound"));
  CHECK(out.reason.find("ghp_REAL") == std::string::npos);
  CHECK(fields.find("ghp_REAL") == std::string::npos);

  fields = std::string("X-Leak: ") + kPlaceholder + "\r\n";
  CHECK_THAT(c.apply("/", fields, "api.github.com", true).reason, Catch::Contains("another header"));
  fields = "Accept: */*\r\n";
  CHECK_THAT(c.apply(std::string("/?t=") + kPlaceholder, fields, "api.github.com", true).reason,
             Catch::Contains("request target"));
  fields = auth((std::string("token ") + kPlaceholder).c_str());
  CHECK_THAT(c.apply("/", fields, "api.github.com", true).reason, Catch::Contains("not shaped as"));
}

TEST_CASE("CRED-8: plain http:// is brokered only when allow_http is set") {
  std::string fields = auth((std::string("Bearer ") + kPlaceholder).c_str());
  CHECK_THAT(github().apply("/", fields, "api.github.com", false).reason, Catch::Contains("plain http"));
  CHECK_FALSE(github(true).apply("/", fields, "api.github.com", false).refused);
  CHECK_THAT(fields, Catch::Contains("ghp_REAL"));
}

TEST_CASE("CRED-8: the pass-through double swaps toward any host (so the probes can fail)") {
  std::string fields = auth((std::string("Bearer ") + kPlaceholder).c_str());
  CHECK_FALSE(github().apply("/", fields, "pypi.org", true, /*check_binding=*/false).refused);
  CHECK_THAT(fields, Catch::Contains("ghp_REAL"));
}

TEST_CASE("CRED-7: values are checked by name and never quoted") {
  auto c = Credentials::parse_json(std::string(R"([{"name":"github","hosts":["api.github.com"],"header":"Authorization",)") +
                                   R"("format":"Bearer {value}","placeholder":")" + kPlaceholder + R"("}])");
  CHECK_FALSE(c.loaded());
  try {
    c.load_values(R"({"github":"ghp_\r\nX: y"})");
    FAIL("a value with CR/LF was loaded");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(e.what(), Catch::Contains("'github'"));
    CHECK(std::string(e.what()).find("ghp_") == std::string::npos);
  }
  try {
    c.load_values(R"({"github": ghp_not_json})");
    FAIL("unparsable values were loaded");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("ghp_") == std::string::npos);
  }
  CHECK_THROWS_AS(c.load_values(R"({"other":"x"})"), std::invalid_argument);
  CHECK_THROWS_AS(c.load_values(R"({})"), std::invalid_argument);
  CHECK_THROWS_AS(Credentials::parse_json(R"([{"name":"a","hosts":[],"header":"A","format":"{value}","placeholder":"0123456789abcdef"}])"),
                  std::invalid_argument);
  CHECK_THROWS_AS(Credentials::parse_json(R"([{"name":"a","hosts":["x.test"],"header":"A","format":"{value}","placeholder":"short"}])"),
                  std::invalid_argument);
}
