// spec_from_json / spec_to_json (spec_json.hpp): the maf-sandbox spec-file format. Every
// refusal must name the field that failed.
#include <catch2/catch.hpp>

#include "maf/sandbox/spec_json.hpp"

using namespace maf::sandbox;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {
/// The ValueError text spec_from_json raises for `j` (fails the test when it does not raise).
std::string refusal(const json& j) {
  try {
    spec_from_json(j);
  } catch (const ValueError& e) {
    return e.what();
  }
  FAIL("spec_from_json accepted " << j.dump());
  return {};
}
}  // namespace

TEST_CASE("spec_json: a minimal spec takes every SandboxSpec default (C-18, C-22)") {
  const SandboxSpec spec = spec_from_json({{"kind", "python"}});
  CHECK(spec.kind() == "python");
  CHECK(spec.egress() == Egress::Closed);
  CHECK(spec.requires_capabilities() == kDefaultCapabilities);
  CHECK(spec.files_in() == kDefaultTransferLimits);
  CHECK_FALSE(spec.work_dir());
  CHECK_FALSE(spec.min_isolation());
  CHECK(spec.isolation_scope() == IsolationScope::Conversation);
}

TEST_CASE("spec_json: every field of docs/cli.md \"The spec file\" is read") {
  const json j = json::parse(R"({
    "kind": "python", "image": "python:3.12", "image_id": "sha256:abc",
    "egress": "allowlist",
    "egress_allow": ["pypi.org", {"host": "api.example.com", "methods": ["GET", "HEAD"]}],
    "work_dir": "/work", "labels": {"team": "a"},
    "requires": ["exec", "files_in", "files_out"], "min_isolation": "vm",
    "declared_outputs": [{"path": "out/r.csv", "media_type": "text/csv", "required": false, "name": "r.csv"},
                         {"path": "scratch.bin", "disposition": "consume"}],
    "files_in": {"max_bytes_per_file": 10, "max_total_bytes": 20, "max_files": 3},
    "files_out": {"max_bytes_per_file": 11, "max_total_bytes": 21, "max_files": 4},
    "outputs_named_at_call_time": true, "requires_os_family": "posix", "isolation_scope": "call"})");
  const SandboxSpec spec = spec_from_json(j);
  CHECK(spec.image() == std::optional<std::string>("python:3.12"));
  CHECK(spec.image_id() == std::optional<std::string>("sha256:abc"));
  REQUIRE(spec.egress_allow().size() == 2);
  CHECK(std::get<EgressRule>(spec.egress_allow()[1]).methods() == std::vector<std::string>{"GET", "HEAD"});
  // C-9: a method-scoped rule adds EGRESS_METHODS.
  CHECK(spec.requires_capabilities().contains(Capability::EgressMethods));
  CHECK(spec.work_dir() == std::optional<std::string>("/work"));
  CHECK(spec.labels().at("team") == "a");
  CHECK(spec.min_isolation() == Isolation::Vm);
  REQUIRE(spec.declared_outputs().size() == 2);
  CHECK(spec.declared_outputs()[0] ==
        DeclaredOutput{"out/r.csv", OutputDisposition::Land, "text/csv", false, "r.csv"});
  CHECK(spec.declared_outputs()[1].disposition == OutputDisposition::Consume);
  CHECK(spec.declared_outputs()[1].required);
  CHECK(spec.files_in() == TransferLimits(10, 20, 3));
  CHECK(spec.files_out() == TransferLimits(11, 21, 4));
  CHECK(spec.outputs_named_at_call_time());
  CHECK(spec.requires_os_family() == OsFamily::Posix);
  CHECK(spec.isolation_scope() == IsolationScope::Call);

  SECTION("spec_to_json round-trips it") {
    const json again = spec_to_json(spec_from_json(spec_to_json(spec)));
    CHECK(again == spec_to_json(spec));
    CHECK(spec_from_json(again).fields().declared_outputs == spec.declared_outputs());
  }
}

TEST_CASE("spec_json: unknown fields are refused by name") {
  CHECK_THAT(refusal({{"kind", "k"}, {"egres", "closed"}}), Contains("spec field 'egres'"));
  CHECK_THAT(refusal({{"kind", "k"}, {"identities", json::array()}}), Contains("'identities'"));
  CHECK_THAT(refusal({{"kind", "k"}, {"declared_outputs", {{{"path", "a"}, {"glob", "*"}}}}}),
             Contains("declared_outputs[0]") && Contains("'glob'"));
  CHECK_THAT(refusal({{"kind", "k"}, {"files_in", {{"max_files", 1}, {"max_bytes", 1}}}}),
             Contains("files_in") && Contains("'max_bytes'"));
}

TEST_CASE("spec_json: C-1/C-5/C-12: bad enum values are refused naming the field and the type") {
  CHECK(refusal({{"kind", "k"}, {"egress", "open"}}).rfind("spec field 'egress': 'open' is not a valid Egress", 0) == 0);
  CHECK_THAT(refusal({{"kind", "k"}, {"min_isolation", "process"}}),
             Contains("'min_isolation'") && Contains("not a valid Isolation"));
  CHECK_THAT(refusal({{"kind", "k"}, {"min_isolation", "MICROVM"}}), Contains("not a valid Isolation"));
  CHECK_THAT(refusal({{"kind", "k"}, {"requires", {"exec", "network"}}}),
             Contains("'requires'") && Contains("'network' is not a valid Capability"));
  CHECK_THAT(refusal({{"kind", "k"}, {"requires_os_family", "linux"}}), Contains("not a valid OsFamily"));
  CHECK_THAT(refusal({{"kind", "k"}, {"isolation_scope", "thread"}}), Contains("not a valid IsolationScope"));
  CHECK_THAT(refusal({{"kind", "k"}, {"declared_outputs", {{{"path", "a"}, {"disposition", "keep"}}}}}),
             Contains("declared_outputs[0].disposition") && Contains("OutputDisposition"));
}

TEST_CASE("spec_json: wrong JSON types are refused naming the field") {
  CHECK_THAT(refusal(json::array()), Contains("JSON object"));
  CHECK_THAT(refusal({{"image", "x"}}), Contains("spec field 'kind': is required"));
  CHECK_THAT(refusal({{"kind", 3}}), Contains("spec field 'kind'") && Contains("string"));
  CHECK_THAT(refusal({{"kind", "k"}, {"labels", {{"a", 1}}}}), Contains("'labels.a'"));
  CHECK_THAT(refusal({{"kind", "k"}, {"requires", "exec"}}), Contains("'requires'") && Contains("array"));
  CHECK_THAT(refusal({{"kind", "k"}, {"outputs_named_at_call_time", "yes"}}),
             Contains("'outputs_named_at_call_time'"));
  CHECK_THAT(refusal({{"kind", "k"}, {"files_out", {{"max_bytes_per_file", 1.5}, {"max_total_bytes", 1}, {"max_files", 1}}}}),
             Contains("'files_out.max_bytes_per_file'") && Contains("integer"));
  CHECK_THAT(refusal({{"kind", "k"}, {"files_out", {{"max_bytes_per_file", 1}, {"max_total_bytes", 1}}}}),
             Contains("'files_out.max_files': is required"));
  CHECK_THAT(refusal({{"kind", "k"}, {"files_in", {{"max_bytes_per_file", 0}, {"max_total_bytes", 1}, {"max_files", 1}}}}),
             Contains("'files_in.max_bytes_per_file'") && Contains("at least 1"));
  CHECK_THAT(refusal({{"kind", "k"}, {"egress", "allowlist"}, {"egress_allow", {42}}}),
             Contains("'egress_allow[0]'"));
  CHECK_THAT(refusal({{"kind", "k"}, {"declared_outputs", {{{"required", true}}}}}),
             Contains("'declared_outputs[0].path': is required"));
}

TEST_CASE("spec_json: C-7/C-18: rule and spec validation still applies, naming the rule") {
  CHECK_THAT(refusal({{"kind", "k"}, {"egress", "allowlist"}, {"egress_allow", {{{"host", "h"}, {"methods", {"GET/x"}}}}}}),
             Contains("'egress_allow[0]'"));
  CHECK_THAT(refusal({{"kind", "k"}, {"egress", "allowlist"}, {"egress_allow", {{{"host", "h"}, {"methods", json::array()}}}}}),
             Contains("'egress_allow[0]'"));
  // egress_allow without ALLOWLIST: SandboxSpec's own refusal names the hosts and the mode.
  CHECK_THAT(refusal({{"kind", "k"}, {"egress_allow", {"pypi.org"}}}), Contains("pypi.org") && Contains("closed"));
}

TEST_CASE("spec_json: null is absent for the optional fields") {
  const SandboxSpec spec = spec_from_json(
      {{"kind", "k"}, {"image", nullptr}, {"work_dir", nullptr}, {"min_isolation", nullptr}, {"requires_os_family", nullptr}});
  CHECK_FALSE(spec.image());
  CHECK_FALSE(spec.work_dir());
  CHECK_FALSE(spec.min_isolation());
  CHECK_FALSE(spec.requires_os_family());
}
