// The shared conformance suites against the Docker backend on a real engine
// (conformance.md §5.1 DX-7…DX-10), plus this port's EGRESS_CLOSED.
#include <set>

#include <maf/sandbox/conformance/conformance.hpp>

#include "engine_fixture.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace docker_test;

namespace {

std::set<std::string> ids(const std::vector<ProbeResult>& results, Outcome outcome) {
  std::set<std::string> out;
  for (const auto& r : results)
    if (r.outcome == outcome) out.insert(r.id);
  return out;
}

void report(const std::vector<ProbeResult>& results) {
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
}

struct Subject {
  Scope scope;
  std::shared_ptr<Sandbox> sandbox;
  std::unique_ptr<PosixGuestSubject> subject;
  explicit Subject(const std::string& agent = "agent-1") {
    auto caps = scope.backend->declarations().capabilities;
    caps.erase(Capability::HostTools);  // host tools need configuration of their own
    sandbox = scope.acquire(spec_for(kImage, caps, "conformance"), agent);
    subject = std::make_unique<PosixGuestSubject>(scope.run, sandbox, scope.backend->declarations().capabilities,
                                                  Egress::Closed);
  }
};

}  // namespace

TEST_CASE("DX-7: FILES_OUT passes; exactly FO-9…FO-12 skip (no files_list)") {
  Subject s;
  auto results = run_files_out(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip) == std::set<std::string>{"FO-9", "FO-10", "FO-11", "FO-12"});
}

TEST_CASE("DX-8: FILES_IN passes with no skips") {
  Subject s;
  auto results = run_files_in(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip).empty());
}

TEST_CASE("DX-10: FILES_DELETE passes with no skips") {
  Subject s;
  auto results = run_files_delete(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip).empty());
}

TEST_CASE("READ_CAP and EGRESS_CLOSED pass") {
  Subject s;
  auto cap = run_suite(Suite::ReadCap, *s.subject);
  report(cap);
  CHECK(ids(cap, Outcome::Fail).empty());
  auto closed = run_suite(Suite::EgressClosed, *s.subject);
  report(closed);
  CHECK(ids(closed, Outcome::Fail).empty());
}

TEST_CASE("DX-9: EXEC on its own sandbox passes with no skips; the scope purge stays clean") {
  Subject s("agent-exec");
  auto results = run_suite(Suite::Exec, *s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip).empty());
  auto purge = s.scope.run([&] { return s.scope.backend->dispose_scope(s.scope.scope, s.scope.thread); });
  CHECK_FALSE(purge.undisposed.has_value());
}

TEST_CASE("HOST_INTEGRITY passes: root in the container is held by the engine's confinement (issue 21)") {
  Subject s("agent-host");
  // Docker runs the image's user (root here) without user-namespace remapping: the rung
  // `container` claims that, and HI-4 then checks the confinement instead of the uid.
  s.subject->set_host_boundary(default_host_boundary_claims(s.scope.backend->isolation()));
  auto results = run_host_integrity(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids_with(results, Outcome::Skip) == host_integrity_skips_on_this_kernel());  // shared kernel
}
