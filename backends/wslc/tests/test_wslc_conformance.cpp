// The shared conformance suites against the wslc backend through the shim (wslc.md T-1):
// EXEC, FILES_IN and EGRESS_CLOSED pass; FILES_DELETE (and every files_out suite) is refused
// because the backend does not declare it (W-2).
#include <maf/sandbox/conformance/conformance.hpp>

#include "engine_fixture.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace wslc_test;

namespace {

void report(const std::vector<ProbeResult>& results) {
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
}

struct Subject {
  Engine engine;
  std::shared_ptr<Sandbox> sandbox;
  std::unique_ptr<PosixGuestSubject> subject;
  explicit Subject(const std::string& agent = "agent-1") {
    sandbox = engine.acquire(spec_for(engine.backend->declarations().capabilities, "conformance"), agent);
    subject = std::make_unique<PosixGuestSubject>(engine.run, sandbox, engine.backend->declarations().capabilities,
                                                  Egress::Closed);
  }
};

}  // namespace

TEST_CASE("T-1: FILES_IN passes") {
  Subject s;
  auto results = run_files_in(*s.subject);
  report(results);
  CHECK(ids_with(results, Outcome::Fail).empty());
  CHECK(s.engine.unsupported_calls() == 0);
}

TEST_CASE("T-1: EGRESS_CLOSED passes (--network none)") {
  Subject s;
  auto results = run_suite(Suite::EgressClosed, *s.subject);
  report(results);
  CHECK(ids_with(results, Outcome::Fail).empty());
}

TEST_CASE("T-1/W-2: FILES_DELETE and FILES_OUT are refused by their gates") {
  Subject s;
  CHECK_THROWS_AS(run_files_delete(*s.subject), SuiteRefused);
  CHECK_THROWS_AS(run_files_out(*s.subject), SuiteRefused);
}

TEST_CASE("T-1: EXEC on its own sandbox passes; the scope purge stays clean") {
  Subject s("agent-exec");
  auto results = run_suite(Suite::Exec, *s.subject);
  report(results);
  CHECK(ids_with(results, Outcome::Fail).empty());
  auto purge = s.engine.run([&] { return s.engine.backend->dispose_scope(s.engine.scope, s.engine.thread); });
  CHECK_FALSE(purge.undisposed.has_value());
  CHECK(s.engine.unsupported_calls() == 0);
}

TEST_CASE("T-1: HOST_INTEGRITY passes: the container's root is held by the engine's confinement (issue 21)") {
  Subject s("agent-host");
  // The shim's engine runs the image's root without user-namespace remapping: the rung
  // `container` claims that, and HI-4 checks the confinement instead of the uid.
  s.subject->set_host_boundary(default_host_boundary_claims(s.engine.backend->isolation()));
  auto results = run_host_integrity(*s.subject);
  report(results);
  CHECK(ids_with(results, Outcome::Fail).empty());
  CHECK(ids_with(results, Outcome::Skip) == host_integrity_skips_on_this_kernel());  // shared kernel
}

TEST_CASE("CLEANUP §9.2 through the shim: RECLAIM is declared and RC-1…RC-8 pass; RESET is withheld, so RS-n skip") {
  Subject s("agent-cleanup");
  const auto& declared = s.engine.backend->declarations().capabilities;
  REQUIRE(declared.contains(Capability::Reclaim));
  CHECK_FALSE(declared.contains(Capability::Snapshot));
  auto results = run_cleanup(*s.subject);
  report(results);
  CHECK(ids_with(results, Outcome::Fail).empty());
  CHECK(ids_with(results, Outcome::Skip) == std::vector<std::string>{"RS-1", "RS-2", "RS-3", "RS-4"});
  CHECK(ids_with(results, Outcome::Pass).size() == 8);
  CHECK(s.engine.unsupported_calls() == 0);
}
