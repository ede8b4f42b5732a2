// LIMITS acquires sandboxes of its own, one per bound; what their disposal leaves behind is a
// harness failure the caller must see (C-59: disposal reports, it does not throw — so the
// suite must carry the report). Before this, run_limits swallowed it and the runner's
// disposal report named only its own subject: the broken implementation these tests fail.
#include <catch2/catch.hpp>

#include <memory>

#include "maf/sandbox/conformance/conformance.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;

namespace {

/// An in-process backend declaring the memory bound (its probe fails at once: the double runs
/// no program) whose every disposal is refused.
std::shared_ptr<testing::InProcessSandboxBackend> refusing_backend() {
  testing::InProcessSandboxBackendOptions o;
  o.declarations.resource_bounds = ResourceBoundSet{ResourceBound::Memory};
  auto backend = std::make_shared<testing::InProcessSandboxBackend>(std::move(o));
  backend->set_dispose_failure(DisposalFailure{kDisposalRefused, "the engine kept it"});
  return backend;
}

}  // namespace

TEST_CASE("C-59: run_limits keeps the verdicts and raises naming every LIMITS sandbox left behind") {
  auto backend = refusing_backend();
  BlockingRunner runner;
  BackendLimitsSubject subject(backend, {}, runner);
  try {
    (void)run_limits(subject);
    FAIL("run_limits returned although every disposal was refused");
  } catch (const LimitsDisposalFailed& e) {
    const std::string what = e.what();
    for (const char* name : {"memory", "processes", "processes-neighbour", "cpus", "ttl-acquire", "ttl-reap"})
      CHECK_THAT(what, Catch::Contains(std::string("/") + name + "/"));
    CHECK_THAT(what, Catch::Contains("refused: the engine kept it"));
    // The probes' verdicts are kept: one per LIMITS probe, the memory one judged, the rest skipped.
    REQUIRE(e.results().size() == probes(Suite::Limits).size());
    CHECK(e.results().front().id == "LM-1");
    CHECK(e.results().front().outcome == Outcome::Fail);
    CHECK(e.results().back().outcome == Outcome::Skip);
  }
  CHECK(backend->disposed().size() == 6);  // every key tried although the first failed
}

TEST_CASE("C-59: the runner's disposal report names the LIMITS sandboxes as well as its own subject (exit 2)") {
  auto backend = refusing_backend();
  RunnerOptions o;
  o.suites = {Suite::Limits};
  const RunReport report = run_conformance(*backend, o);
  REQUIRE(report.disposal_failure);
  INFO(*report.disposal_failure);
  CHECK_THAT(*report.disposal_failure, Catch::Contains(report.key));
  CHECK_THAT(*report.disposal_failure, Catch::Contains("LIMITS sandboxes not disposed"));
  CHECK_THAT(*report.disposal_failure, Catch::Contains("/ttl-reap/"));
  CHECK(report.exit_code() == 2);
  REQUIRE(report.suites.size() == 1);
  CHECK(report.suites[0].status == SuiteStatus::Ran);
  CHECK(report.suites[0].results.size() == probes(Suite::Limits).size());
}
