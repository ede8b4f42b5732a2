// SandboxSpec construction, validation and canonicalisation (C-8, C-9, C-18…C-20).
#include <catch2/catch.hpp>

#include "maf/sandbox/spec.hpp"

using namespace maf::sandbox;

TEST_CASE("spec: SandboxSpec defaults") {
  SandboxSpec spec({.kind = "k"});
  CHECK(spec.kind() == "k");
  CHECK(spec.egress() == Egress::Closed);
  CHECK(spec.requires_capabilities() == kDefaultCapabilities);
  CHECK(spec.files_in() == kDefaultTransferLimits);
  CHECK(spec.files_out() == kDefaultTransferLimits);
  CHECK_FALSE(spec.work_dir().has_value());
  CHECK(spec.effective_work_dir() == ".");
  CHECK(spec.isolation_scope() == IsolationScope::Conversation);
  CHECK_FALSE(spec.requires_os_family().has_value());
  CHECK_FALSE(spec.min_isolation().has_value());
  CHECK(spec.identities().empty());
  CHECK(spec.labels().empty());
}

TEST_CASE("C-18: egress_allow without ALLOWLIST is refused naming the hosts and the mode") {
  CHECK_THROWS_WITH(SandboxSpec({.kind = "k", .egress_allow = {std::string("pypi.org"), std::string("x.test")}}),
                    Catch::Contains("pypi.org, x.test") && Catch::Contains("'closed'") && Catch::Contains("'k'"));
  CHECK_THROWS_AS(SandboxSpec({.kind = "k", .egress_allow = {std::string("a")}, .egress = Egress::Unrestricted}),
                  ValueError);
}

TEST_CASE("C-19: ALLOWLIST with an empty egress_allow is valid; work_dir is never rewritten") {
  SandboxSpec spec({.kind = "k", .work_dir = "C:\\odd\\path", .egress = Egress::Allowlist});
  CHECK(spec.egress_allow().empty());
  CHECK(*spec.work_dir() == "C:\\odd\\path");
}

TEST_CASE("C-8: egress_allow is canonicalised: bare hosts, case-insensitive collapse, first spelling kept") {
  SandboxSpec spec({.kind = "k",
                    .egress_allow = {std::string("PyPI.org"), EgressRule("pypi.ORG"), std::string("b.test"),
                                     EgressRule("api.test", std::vector<std::string>{"GET", "POST"}),
                                     EgressRule("API.test", std::vector<std::string>{"POST", "GET"})},
                    .egress = Egress::Allowlist});
  REQUIRE(spec.egress_allow().size() == 3);
  CHECK(std::get<std::string>(spec.egress_allow()[0]) == "PyPI.org");
  CHECK(std::get<std::string>(spec.egress_allow()[1]) == "b.test");
  CHECK(std::get<EgressRule>(spec.egress_allow()[2]).host() == "api.test");
}

TEST_CASE("C-8: an all-methods rule becomes the bare host string") {
  SandboxSpec spec({.kind = "k", .egress_allow = {EgressRule("h.test")}, .egress = Egress::Allowlist});
  REQUIRE(spec.egress_allow().size() == 1);
  CHECK(std::holds_alternative<std::string>(spec.egress_allow()[0]));
  CHECK_FALSE(spec.requires_capabilities().contains(Capability::EgressMethods));
}

TEST_CASE("C-8: conflicting entries for one host are refused naming the host") {
  CHECK_THROWS_WITH(SandboxSpec({.kind = "k",
                                 .egress_allow = {EgressRule("h.test", std::vector<std::string>{"GET"}),
                                                  EgressRule("H.TEST", std::vector<std::string>{"POST"})},
                                 .egress = Egress::Allowlist}),
                    Catch::Contains("h.test") && Catch::Contains("two different method sets"));
  CHECK_THROWS_WITH(SandboxSpec({.kind = "k",
                                 .egress_allow = {std::string("h.test"),
                                                  EgressRule("h.test", std::vector<std::string>{"GET"})},
                                 .egress = Egress::Allowlist}),
                    Catch::Contains("every method and narrowed"));
}

TEST_CASE("C-9: a method-scoped rule adds EGRESS_METHODS to requires") {
  SandboxSpec spec({.kind = "k",
                    .egress_allow = {EgressRule("h.test", std::vector<std::string>{"GET"})},
                    .egress = Egress::Allowlist});
  CHECK(spec.requires_capabilities().contains(Capability::EgressMethods));
  CHECK(spec.requires_capabilities().contains(Capability::Exec));
}

TEST_CASE("C-20: the spec is immutable; a derived spec is validated again") {
  SandboxSpec spec({.kind = "k"});
  auto fields = spec.fields();
  fields.egress_allow = {std::string("x")};
  CHECK_THROWS_AS(SandboxSpec(fields), ValueError);
  fields.egress = Egress::Allowlist;
  CHECK_NOTHROW(SandboxSpec(fields));
}

TEST_CASE("bad input: empty kind and empty work_dir are refused") {
  CHECK_THROWS_WITH(SandboxSpec({}), Catch::Contains("kind"));
  CHECK_THROWS_WITH(SandboxSpec({.kind = "k", .work_dir = ""}), Catch::Contains("work_dir"));
}
