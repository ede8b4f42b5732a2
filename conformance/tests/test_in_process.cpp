// The conformance library against the in-process double: probe tables, gating, skips, the
// failure report, and the two suites the double can honestly serve (FILES_OUT, READ_CAP).
// A double with no real exec cannot serve FILES_IN, FILES_DELETE, EXEC or the egress
// suites; those run against real programs in test_broken_doubles.cpp and
// test_process_backend.cpp.
#include <catch2/catch.hpp>

#include <set>
#include <type_traits>

#include "maf/sandbox/conformance/conformance.hpp"
#include "support/host_tree_sandbox.hpp"
#include "support/in_process_subject.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using Ids = std::vector<std::string>;

namespace {

std::shared_ptr<testing::InProcessSandbox> double_with(CapabilitySet caps) {
  return std::make_shared<testing::InProcessSandbox>(testing::InProcessSandboxOptions{.capabilities = caps});
}

/// A subject whose file planting silently does nothing (links still land).
class LazyPlanter : public test::InProcessSubject {
public:
  using InProcessSubject::InProcessSubject;
  void plant_file(const std::string&, std::string_view) override {}
};

}  // namespace

TEST_CASE("conformance: probe tables are ordered, complete and uniquely named (docs/conformance.md counts, LATER EXEC)") {
  const std::vector<std::pair<Suite, std::pair<std::string, std::size_t>>> expected{
      {Suite::FilesOut, {"FO", 12}}, {Suite::FilesIn, {"FI", 12}}, {Suite::Exec, {"EX", 7}},
      {Suite::FilesDelete, {"FD", 10}}, {Suite::Egress, {"EG", 3}}, {Suite::EgressClosed, {"EC", 3}},
      {Suite::ReadCap, {"CAP", 2}}, {Suite::HostIntegrity, {"HI", 6}}, {Suite::Snapshot, {"SN", 6}}};
  for (const auto& [suite, want] : expected) {
    const auto table = probes(suite);
    REQUIRE(table.size() == want.second);
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < table.size(); ++i) {
      CHECK(table[i].id == want.first + "-" + std::to_string(i + 1));
      CHECK(table[i].suite == suite);
      CHECK_FALSE(table[i].why.empty());
      CHECK(names.insert(table[i].name).second);
    }
  }
  CHECK(probes(Suite::FilesOut)[2].name == "a-link-is-never-read");
  CHECK(probes(Suite::Exec)[6].name == "a-timeout-raises-timeout-error");
  // R7: only FILES_OUT's listing probes need more than the gate.
  const CapabilitySet listing{Capability::FilesOut, Capability::FilesList};
  for (Suite s : kAllSuites)
    for (const auto& p : probes(s))
      if (p.requires_capabilities.size() != 1) CHECK((s == Suite::FilesOut && p.requires_capabilities == listing));
}

TEST_CASE("conformance: the in-process double passes FILES_OUT and READ_CAP with no skips") {
  BlockingRunner run;
  test::InProcessSubject subject(run, double_with(testing::kInProcessCapabilities));
  const auto out = check_files_out(subject);
  CHECK(out.size() == 12);
  CHECK(ids_with(out, Outcome::Skip).empty());
  CHECK(ids_with(out, Outcome::Pass).size() == 12);
  const auto cap = check_read_cap(subject);
  CHECK(ids_with(cap, Outcome::Pass) == Ids{"CAP-1", "CAP-2"});
}

TEST_CASE("conformance: R3 a listing probe is skipped, and says why, when files_list is not declared") {
  BlockingRunner run;
  test::InProcessSubject subject(run, double_with({Capability::FilesOut}));
  const auto results = check_files_out(subject);
  CHECK(ids_with(results, Outcome::Skip) == Ids{"FO-9", "FO-10", "FO-11", "FO-12"});
  for (const auto& r : results)
    if (r.skipped()) CHECK(r.message == "backend does not declare files_list");
  CHECK(ids_with(results, Outcome::Pass).size() == 8);
}

TEST_CASE("conformance: R1 a suite whose gate is not declared is refused before anything is planted") {
  STATIC_REQUIRE_FALSE(std::is_base_of_v<ValueError, SuiteRefused>);
  STATIC_REQUIRE_FALSE(std::is_base_of_v<Error, SuiteRefused>);
  BlockingRunner run;
  auto sb = double_with({Capability::Exec});
  test::InProcessSubject subject(run, sb);
  try {
    run_files_out(subject);
    FAIL("FILES_OUT ran without files_out");
  } catch (const SuiteRefused& e) {
    CHECK(e.suite() == Suite::FilesOut);
    CHECK_THAT(e.what(), Catch::Contains("declares no FILES_OUT") && Catch::Contains("attacked nothing"));
  }
  CHECK_THROWS_WITH(run_files_delete(subject), Catch::Contains("declares no FILES_DELETE"));
  CHECK_THROWS_WITH(run_files_in(subject), Catch::Contains("declares no FILES_IN"));
  CHECK_THROWS_WITH(run_read_cap(subject), Catch::Contains("declares no FILES_OUT"));
  // The double enforces no egress: both network suites are refused by their gate.
  CHECK_THROWS_WITH(run_egress_closed(subject), Catch::Contains("declares no CLOSED egress"));
  CHECK_THROWS_AS(run_egress(subject, EgressTargets{"https://a.example/", "https://b.example/"}), SuiteRefused);
  CHECK(sb->contents().empty());
  CHECK(sb->symlinks().empty());
}

TEST_CASE("conformance: a subject whose planting does nothing fails FO-1 (and FO-8), and the report names both") {
  BlockingRunner run;
  LazyPlanter subject(run, double_with(testing::kInProcessCapabilities));
  const auto results = run_files_out(subject);
  CHECK(ids_with(results, Outcome::Fail) == Ids{"FO-1", "FO-8"});
  try {
    check_files_out(subject);
    FAIL("check_files_out did not throw");
  } catch (const ConformanceFailure& e) {
    const std::string text = e.what();
    CHECK_THAT(text, Catch::StartsWith("2 of 12 FILES_OUT probes failed"));
    CHECK_THAT(text, Catch::Contains("FO-1 a-legitimate-read-still-works") && Catch::Contains("FO-8 a-plain-parent-is-not-an-escape"));
    CHECK_THAT(text, Catch::Contains("why: positive control"));
    CHECK(e.failures().size() == 2);
    CHECK(e.results().size() == 12);
  }
}

TEST_CASE("conformance: broken double — truncating instead of refusing an over-cap read fails CAP-1") {
  BlockingRunner run;
  auto sb = std::make_shared<test::TruncatingSandbox>();
  test::InProcessSubject subject(run, sb);
  const auto results = run_read_cap(subject);
  CHECK(ids_with(results, Outcome::Fail) == Ids{"CAP-1"});
  CHECK_THAT(results[0].message, Catch::Contains("(truncated)"));
  // FILES_OUT sees only the hidden size (FO-1), never the truncation: hence READ_CAP.
  const auto out = run_files_out(subject);
  CHECK(ids_with(out, Outcome::Fail) == Ids{"FO-1"});
  CHECK_THAT(out[0].message, Catch::Contains("size none"));
}

TEST_CASE("conformance: broken double — refusing a read exactly at the cap fails CAP-2") {
  BlockingRunner run;
  test::InProcessSubject subject(run, std::make_shared<test::OffByOneCapSandbox>());
  const auto results = run_read_cap(subject);
  CHECK(ids_with(results, Outcome::Fail) == Ids{"CAP-2"});
  CHECK_THAT(results[1].message, Catch::Contains("raised SandboxTransferCapExceeded"));
}

TEST_CASE("conformance: R8 measure_files_delete_probes has no gate and no verdict") {
  BlockingRunner run;
  test::InProcessSubject subject(run, double_with({Capability::Exec, Capability::FilesIn}));
  std::vector<ProbeResult> results;
  REQUIRE_NOTHROW(results = measure_files_delete_probes(subject));
  REQUIRE(results.size() == 10);
  CHECK(ids_with(results, Outcome::Skip).empty());
  // remove is not declared, so every probe that removes fails with the core's refusal.
  CHECK_THAT(results[0].message, Catch::Contains("raised NotImplementedError"));
  CHECK(ids_with(results, Outcome::Pass).empty());
}

TEST_CASE("conformance: suite names parse both spellings; unknown names are refused by name") {
  CHECK(parse_suite("files_out") == Suite::FilesOut);
  CHECK(parse_suite("EGRESS_CLOSED") == Suite::EgressClosed);
  CHECK(parse_suite("host_integrity") == Suite::HostIntegrity);
  CHECK_THROWS_WITH(parse_suite("network"), Catch::Contains("'network'") && Catch::Contains("egress_closed"));
}

TEST_CASE("conformance: HOST_INTEGRITY's gate refuses a subject that promises no host boundary (isolation none)") {
  CHECK_FALSE(default_host_boundary_claims("none").promised);
  CHECK_FALSE(default_host_boundary_claims("runtime").promised);
  CHECK(default_host_boundary_claims("os_process").promised);
  CHECK_FALSE(default_host_boundary_claims("os_process").root_confined_by_engine);
  CHECK(default_host_boundary_claims("container").root_confined_by_engine);
  CHECK(default_host_boundary_claims("microvm").root_confined_by_engine);
  // An unknown rung is held to everything.
  const auto unknown = default_host_boundary_claims("something-new");
  CHECK((unknown.promised && !unknown.root_confined_by_engine && unknown.seccomp));
}
