// CLEANUP (RECLAIM RC-n, RESET RS-n) and NL-1 against an honest host-tree double — and
// against broken ones, each of which must fail exactly the probes named for its flaw: a
// probe that cannot fail is a defect (docs/tools.md "The cleanup ladder"; docs/conformance.md "CLEANUP").
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "maf/sandbox/conformance/conformance.hpp"
#include "support/host_tree_sandbox.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using Ids = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

constexpr CapabilitySet kBothRungs{Capability::Reclaim, Capability::Snapshot};

struct CleanupFixture : test::DoubleFixture<test::HostTreeSandbox> {
  explicit CleanupFixture(test::Flaw flaw = test::Flaw::None, CapabilitySet rungs = kBothRungs)
      : DoubleFixture("maf-conformance-cleanup", flaw, rungs) {}
};

}  // namespace

TEST_CASE("conformance CLEANUP: an honest double passes every RC and RS probe") {
  CleanupFixture f;
  std::vector<ProbeResult> results;
  REQUIRE_NOTHROW(results = check_cleanup(*f.subject));
  INFO(test::failure_messages(results));
  CHECK(ids_with(results, Outcome::Pass).size() == probes(Suite::Cleanup).size());
  CHECK(ids_with(results, Outcome::Pass) == Ids{"RC-1", "RC-2", "RC-3", "RC-4", "RC-5", "RC-6", "RC-7", "RC-8", "RS-1",
                                                "RS-2", "RS-3", "RS-4"});
}

TEST_CASE("conformance CLEANUP: the gate refuses a subject with neither RECLAIM nor SNAPSHOT, before planting") {
  CleanupFixture f(test::Flaw::None, {});
  CHECK_THROWS_AS(run_cleanup(*f.subject), SuiteRefused);
  try {
    run_cleanup(*f.subject);
  } catch (const SuiteRefused& e) {
    CHECK_THAT(e.what(), Catch::Contains("declares neither RECLAIM nor SNAPSHOT"));
  }
  CHECK(fs::is_empty(f.dir.path() / "work"));  // nothing planted
}

TEST_CASE("conformance CLEANUP: each rung skips the other's probes, naming the capability (R3)") {
  SECTION("reclaim only") {
    CleanupFixture f(test::Flaw::None, {Capability::Reclaim});
    const auto results = run_cleanup(*f.subject);
    CHECK(ids_with(results, Outcome::Skip) == Ids{"RS-1", "RS-2", "RS-3", "RS-4"});
    CHECK(results.back().message == "backend does not declare snapshot");
    CHECK(ids_with(results, Outcome::Fail).empty());
  }
  SECTION("snapshot only") {
    CleanupFixture f(test::Flaw::None, {Capability::Snapshot});
    const auto results = run_cleanup(*f.subject);
    CHECK(ids_with(results, Outcome::Skip) == Ids{"RC-1", "RC-2", "RC-3", "RC-4", "RC-5", "RC-6", "RC-7", "RC-8"});
    CHECK(ids_with(results, Outcome::Fail).empty());
  }
}

TEST_CASE("conformance CLEANUP broken double: a reclaim that removes nothing fails RC-1…RC-4, RC-6, RC-7") {
  CleanupFixture f(test::Flaw::ReclaimNothing, {Capability::Reclaim});
  const auto results = run_cleanup(*f.subject);
  INFO(test::failure_messages(results));
  CHECK(ids_with(results, Outcome::Fail) == Ids{"RC-1", "RC-2", "RC-3", "RC-4", "RC-6", "RC-7"});
  CHECK_THROWS_AS(check_cleanup(*f.subject), ConformanceFailure);
}

TEST_CASE("conformance CLEANUP broken double: a reclaim that follows links fails RC-3 and RC-6") {
  CleanupFixture f(test::Flaw::ReclaimFollowsLinks, {Capability::Reclaim});
  const auto results = run_cleanup(*f.subject);
  INFO(test::failure_messages(results));
  CHECK(ids_with(results, Outcome::Fail) == Ids{"RC-3", "RC-6"});
}

TEST_CASE("conformance CLEANUP broken double: an over-broad reclaim fails RC-1 (a sibling call's directory)") {
  CleanupFixture f(test::Flaw::ReclaimTakesTheParent, {Capability::Reclaim});
  const auto results = run_cleanup(*f.subject);
  INFO(test::failure_messages(results));
  const auto failed = ids_with(results, Outcome::Fail);
  REQUIRE(!failed.empty());
  CHECK(failed.front() == "RC-1");
  CHECK_THAT(results.front().message, Catch::Contains("sibling call"));
}

TEST_CASE("conformance CLEANUP broken double: a reclaim refusing a missing directory fails RC-4 and RC-5 (docs/tools.md \"The cleanup ladder\")") {
  CleanupFixture f(test::Flaw::ReclaimRefusesMissing, {Capability::Reclaim});
  const auto results = run_cleanup(*f.subject);
  INFO(test::failure_messages(results));
  CHECK(ids_with(results, Outcome::Fail) == Ids{"RC-4", "RC-5"});
}

TEST_CASE("conformance CLEANUP broken double: a reset that restores nothing fails RS-1, RS-2, RS-3") {
  CleanupFixture f(test::Flaw::ResetNothing, {Capability::Snapshot});
  const auto results = run_cleanup(*f.subject);
  INFO(test::failure_messages(results));
  CHECK(ids_with(results, Outcome::Fail) == Ids{"RS-1", "RS-2", "RS-3"});
}

TEST_CASE("conformance CLEANUP broken double: a reset that only empties the tree fails RS-2 and RS-3") {
  CleanupFixture f(test::Flaw::ResetOnlyEmpties, {Capability::Snapshot});
  const auto results = run_cleanup(*f.subject);
  INFO(test::failure_messages(results));
  CHECK(ids_with(results, Outcome::Fail) == Ids{"RS-2", "RS-3"});
}

TEST_CASE("conformance CLEANUP RS-4 R-CL-4 broken double: a reset that strands the file plane (every later write "
          "fails) fails the-sandbox-serves-after-a-reset") {
  CleanupFixture f(test::Flaw::ResetStrandsFilePlane, {Capability::Snapshot});
  const auto results = run_cleanup(*f.subject);
  INFO(test::failure_messages(results));
  CHECK(ids_with(results, Outcome::Fail) == Ids{"RS-4"});
}

TEST_CASE("conformance NL-1 nothing_left_behind: equal inventories pass, residue and removals fail by name") {
  test::TempDir engine("maf-conformance-nl");
  FunctionFingerprint inventory("a directory", [&]() -> std::optional<EngineFingerprint> {
    EngineFingerprint f;
    for (const auto& e : fs::directory_iterator(engine.path())) f.items.push_back(e.path().filename().string());
    return f;
  });
  std::ofstream(engine.path() / "kept-by-someone-else") << "x";

  SECTION("a call that cleans up after itself") {
    const auto r = assert_nothing_left_behind(inventory, [&] {
      std::ofstream(engine.path() / "temporary") << "x";
      fs::remove(engine.path() / "temporary");
    });
    CHECK(r.passed());
    CHECK(r.id == "NL-1");
  }
  SECTION("a call that leaves an item behind (the broken double of DISPOSE)") {
    const auto r = run_nothing_left_behind(inventory, [&] { std::ofstream(engine.path() / "leaked-container") << "x"; });
    CHECK(r.failed());
    CHECK_THAT(r.message, Catch::Contains("left behind") && Catch::Contains("leaked-container"));
    CHECK_THROWS_AS(assert_nothing_left_behind(inventory, [&] { std::ofstream(engine.path() / "leaked-network") << "x"; }),
                    ConformanceFailure);
  }
  SECTION("a call that removes what it did not own") {
    const auto r = run_nothing_left_behind(inventory, [&] { fs::remove(engine.path() / "kept-by-someone-else"); });
    CHECK(r.failed());
    CHECK_THAT(r.message, Catch::Contains("kept-by-someone-else"));
  }
  SECTION("a call that raises fails, naming the error") {
    const auto r = run_nothing_left_behind(inventory, [] { throw OSError("dispose refused"); });
    CHECK(r.failed());
    CHECK_THAT(r.message, Catch::Contains("OSError") && Catch::Contains("dispose refused"));
  }
  SECTION("an engine that cannot be inventoried skips and does not run the call") {
    FunctionFingerprint none("nothing", [] { return std::optional<EngineFingerprint>{}; });
    bool ran = false;
    const auto r = run_nothing_left_behind(none, [&] { ran = true; });
    CHECK(r.skipped());
    CHECK_FALSE(ran);
    CHECK_THAT(r.message, Catch::Contains("unsupported"));
  }
}
