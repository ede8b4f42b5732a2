// Path rules of egress_allow (C-10; egress_path.hpp, docs/policy.md "Path rules"): the
// request-path canonicaliser the spec and the egress proxy share, the pattern grammar, the
// matcher, and EgressRule / SandboxSpec / JSON handling of `paths`.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "maf/sandbox/egress_path.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/spec_json.hpp"

using namespace maf::sandbox;

namespace {

std::string canonical(std::string_view target) {
  auto r = canonicalize_request_path(target);
  REQUIRE(r.value);
  return r.value->path;
}

std::string refusal(std::string_view target) {
  auto r = canonicalize_request_path(target);
  REQUIRE_FALSE(r.value);
  REQUIRE_FALSE(r.problem.empty());
  return r.problem;
}

using Paths = std::vector<std::string>;
using Methods = std::vector<std::string>;

}  // namespace

TEST_CASE("C-10: canonical paths decode unreserved escapes, upper-case the rest, remove dot segments") {
  CHECK(canonical("/") == "/");
  CHECK(canonical("/repo/x.git/info/refs") == "/repo/x.git/info/refs");
  CHECK(canonical("/%72%65po/") == "/repo/");        // unreserved letters decoded
  CHECK(canonical("/a%7e%2D_") == "/a~-_");          // ~ - decoded, either hex case
  CHECK(canonical("/a%3ab") == "/a%3Ab");            // a reserved ':' stays encoded, upper-case
  CHECK(canonical("/a/./b") == "/a/b");
  CHECK(canonical("/a/b/../c") == "/a/c");
  CHECK(canonical("/a/b/..") == "/a/");
  CHECK(canonical("/a/.") == "/a/");
  CHECK(canonical("/a/") == "/a/");
  CHECK(canonical("/caf%C3%A9") == "/caf%C3%A9");    // valid UTF-8 kept encoded
  CHECK(canonical("/x.y/file.tar.gz") == "/x.y/file.tar.gz");
  auto q = canonicalize_request_path("/info/refs?service=git-upload-pack");
  REQUIRE(q.value);
  CHECK(q.value->path == "/info/refs");
  CHECK(q.value->query == std::optional<std::string>("service=git-upload-pack"));
  CHECK_FALSE(canonicalize_request_path("/a").value->query);
}

TEST_CASE("C-10: the encoded-traversal family is refused, each naming why") {
  CHECK(refusal("/a/..%2fb") == "an encoded '/' (%2F)");
  CHECK(refusal("/a/%2F") == "an encoded '/' (%2F)");
  CHECK(refusal("/%2e%2e/secret") == "an encoded '.' (%2E)");
  CHECK(refusal("/a%5cb") == "an encoded '\\' (%5C)");
  CHECK(refusal("/a%00") == "an encoded NUL (%00)");
  CHECK(refusal("/a%0d%0a") == "an encoded control byte");
  CHECK(refusal("//repo/") == "an empty path segment ('//')");
  CHECK(refusal("/repo//x") == "an empty path segment ('//')");
  CHECK(refusal("/..") == "a '..' segment above the root");
  CHECK(refusal("/a/../../b") == "a '..' segment above the root");
  // Overlong UTF-8 for '/' and '.', a stray continuation byte, a surrogate, a truncated sequence.
  for (const char* overlong : {"/a%C0%AFb", "/%C0%AE%C0%AE/", "/%E0%80%AF", "/%80", "/%ED%A0%80", "/%C3", "/%F4%90%80%80"})
    CHECK_THAT(refusal(overlong), Catch::Contains("not valid UTF-8"));
  CHECK(refusal("/a%zz") == "a '%' not followed by two hex digits");
  CHECK(refusal("/a%4") == "a '%' not followed by two hex digits");
  CHECK(refusal("/a\\b") == "the character '\\' in the path");
  CHECK(refusal("/a b") == "the character ' ' in the path");
  CHECK(refusal("/a#frag") == "a fragment ('#')");
  CHECK(refusal("*") == "not an origin-form path (it must start with '/')");
  CHECK(refusal("http://h/a") == "not an origin-form path (it must start with '/')");
  CHECK_THAT(refusal("/a\x80"), Catch::Contains("non-ASCII"));
}

TEST_CASE("C-10: path patterns are /exact, /prefix/ or /prefix*, written canonically") {
  for (const char* ok : {"/", "/*", "/repo/", "/repo*", "/repo/x.git/info/refs", "/a%3Ab", "/v1/items/"})
    CHECK_FALSE(egress_path_pattern_problem(ok));
  CHECK(egress_path_pattern_problem("") == std::optional<std::string>("it is empty"));
  CHECK(egress_path_pattern_problem("repo/") == std::optional<std::string>("it does not start with '/'"));
  CHECK_THAT(*egress_path_pattern_problem("/a*/b"), Catch::Contains("'*' before its end"));
  CHECK_THAT(*egress_path_pattern_problem("/a?x=1"), Catch::Contains("'?'"));
  CHECK(egress_path_pattern_problem("/a/../b") == std::optional<std::string>("not in canonical form (write '/b')"));
  CHECK(egress_path_pattern_problem("/%72epo/*") == std::optional<std::string>("not in canonical form (write '/repo/*')"));
  CHECK(egress_path_pattern_problem("/a%3ab") == std::optional<std::string>("not in canonical form (write '/a%3Ab')"));
  CHECK(egress_path_pattern_problem("//x") == std::optional<std::string>("an empty path segment ('//')"));
  CHECK(egress_path_pattern_problem("/..%2f") == std::optional<std::string>("an encoded '/' (%2F)"));
}

TEST_CASE("C-10: matching: exact is exact, '/' and '*' end prefixes, case matters") {
  CHECK(egress_path_matches("/repo/", "/repo/"));
  CHECK(egress_path_matches("/repo/", "/repo/x.git/info/refs"));
  CHECK_FALSE(egress_path_matches("/repo/", "/repo"));
  CHECK_FALSE(egress_path_matches("/repo/", "/repository/"));
  CHECK_FALSE(egress_path_matches("/repo/", "/Repo/x"));
  CHECK(egress_path_matches("/repo*", "/repository"));
  CHECK(egress_path_matches("/repo*", "/repo"));
  CHECK(egress_path_matches("/*", "/anything/at/all"));
  CHECK(egress_path_matches("/", "/anything"));
  CHECK(egress_path_matches("/a/b", "/a/b"));
  CHECK_FALSE(egress_path_matches("/a/b", "/a/b/"));
  CHECK_FALSE(egress_path_matches("/a/b", "/a/bc"));
  // Match after canonicalisation: a traversal out of the prefix lands outside it.
  CHECK_FALSE(egress_path_matches("/repo/", canonical("/repo/../admin")));
  CHECK(egress_path_matches("/repo/", canonical("/%72epo/./x")));
}

TEST_CASE("C-10: EgressRule validates paths, naming the host and the entry") {
  CHECK_NOTHROW(EgressRule("allowed.test", Methods{"GET"}, Paths{"/repo/"}));
  CHECK_NOTHROW(EgressRule("allowed.test", std::nullopt, Paths{"/repo/", "/other*"}));
  CHECK_THROWS_AS(EgressRule("h.test", std::nullopt, Paths{}), ValueError);
  CHECK_THROWS_WITH(EgressRule("h.test", std::nullopt, Paths{"/a", "/a"}),
                    Catch::Contains("h.test") && Catch::Contains("'/a' is listed twice"));
  CHECK_THROWS_WITH(EgressRule("h.test", std::nullopt, Paths{"/a/../b"}),
                    Catch::Contains("host 'h.test'") && Catch::Contains("path '/a/../b'") &&
                        Catch::Contains("write '/b'"));
  CHECK_THROWS_WITH(EgressRule("h.test", std::nullopt, Paths{"/a/..%2fb"}), Catch::Contains("encoded '/'"));
}

TEST_CASE("C-10: a path rule requires egress_paths; a method rule egress_methods; both when both") {
  SandboxSpec paths_only({.kind = "k",
                          .egress_allow = {EgressRule("allowed.test", std::nullopt, Paths{"/repo/"})},
                          .egress = Egress::Allowlist});
  CHECK(paths_only.requires_capabilities().contains(Capability::EgressPaths));
  CHECK_FALSE(paths_only.requires_capabilities().contains(Capability::EgressMethods));
  CHECK(std::holds_alternative<EgressRule>(paths_only.egress_allow()[0]));
  SandboxSpec both({.kind = "k",
                    .egress_allow = {EgressRule("allowed.test", Methods{"GET"}, Paths{"/repo/"})},
                    .egress = Egress::Allowlist});
  CHECK(both.requires_capabilities().contains(Capability::EgressPaths));
  CHECK(both.requires_capabilities().contains(Capability::EgressMethods));
}

TEST_CASE("C-8 (C-10): equal path sets collapse; different ones, or a whole host beside a path rule, are refused") {
  SandboxSpec spec({.kind = "k",
                    .egress_allow = {EgressRule("a.test", Methods{"GET"}, Paths{"/x/", "/y"}),
                                     EgressRule("A.test", Methods{"GET"}, Paths{"/y", "/x/"})},
                    .egress = Egress::Allowlist});
  CHECK(spec.egress_allow().size() == 1);
  CHECK_THROWS_WITH(SandboxSpec({.kind = "k",
                                 .egress_allow = {EgressRule("a.test", Methods{"GET"}, Paths{"/x/"}),
                                                  EgressRule("a.test", Methods{"GET"}, Paths{"/y/"})},
                                 .egress = Egress::Allowlist}),
                    Catch::Contains("'a.test'") && Catch::Contains("path sets"));
  CHECK_THROWS_WITH(SandboxSpec({.kind = "k",
                                 .egress_allow = {std::string("a.test"), EgressRule("a.test", std::nullopt, Paths{"/x/"})},
                                 .egress = Egress::Allowlist}),
                    Catch::Contains("'a.test'") && Catch::Contains("narrowed"));
}

TEST_CASE("C-10: the JSON spec form reads and writes paths, and names a bad entry") {
  const auto spec = spec_from_json(nlohmann::json::parse(R"({"kind":"k","egress":"allowlist",
      "egress_allow":[{"host":"allowed.test","methods":["GET"],"paths":["/repo/"]}]})"));
  const auto& rule = std::get<EgressRule>(spec.egress_allow().at(0));
  CHECK(rule.paths() == std::optional<Paths>(Paths{"/repo/"}));
  const auto back = spec_to_json(spec);
  CHECK(back["egress_allow"][0]["paths"] == nlohmann::json::array({"/repo/"}));
  CHECK(spec_from_json(back).egress_allow() == spec.egress_allow());
  CHECK_THROWS_WITH(spec_from_json(nlohmann::json::parse(R"({"kind":"k","egress":"allowlist",
      "egress_allow":["a.test",{"host":"b.test","paths":["/a/%2e%2e/b"]}]})")),
                    Catch::Contains("egress_allow[1]") && Catch::Contains("'/a/%2e%2e/b'"));
  CHECK_THROWS_WITH(spec_from_json(nlohmann::json::parse(R"({"kind":"k","egress":"allowlist",
      "egress_allow":[{"host":"b.test","paths":"/a"}]})")),
                    Catch::Contains("egress_allow[0].paths"));
}
