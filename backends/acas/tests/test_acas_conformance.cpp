// HOST_INTEGRITY (issue 21) against the ACAS backend on the emulator: the emulator runs each
// session as a container of the shared Docker engine, so the probes meet that engine's
// confinement (read-only /proc/sys, masked kernel files, default seccomp profile).
#include <catch2/catch.hpp>
#include <maf/sandbox/conformance/conformance.hpp>

#include "acas_fixture.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace acas_test;

TEST_CASE("HOST_INTEGRITY passes against the emulator's sessions (HI-1…HI-6)") {
  Fixture f;
  auto backend = f.backend();
  auto sandbox = f.run([&] { return backend->acquire(f.key("agent-host"), files_spec()); });
  PosixGuestSubject subject(f.run, sandbox, backend->declarations().capabilities, std::nullopt);
  // The rung's default claims: from `container` up the guest may be the engine's root, and
  // HI-4 then checks the confinement standing in for the uid.
  subject.set_host_boundary(default_host_boundary_claims(backend->isolation()));
  const auto results = run_host_integrity(subject);
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
  CHECK(ids_with(results, Outcome::Fail).empty());
  CHECK(ids_with(results, Outcome::Skip) == host_integrity_skips_on_this_kernel());  // shared kernel
}

TEST_CASE("§9.2 ACAS withholds RECLAIM (CLEANUP refused by its gate), yet reclaim removes a call's directory over exec for guest_call_path (C-120)") {
  Fixture f;
  auto backend = f.backend();
  const auto& declared = backend->declarations().capabilities;
  CHECK_FALSE(declared.contains(Capability::Reclaim));
  CHECK_FALSE(declared.contains(Capability::Snapshot));
  auto sandbox = f.run([&] { return backend->acquire(f.key("agent-reclaim"), files_spec()); });
  PosixGuestSubject subject(f.run, sandbox, declared, std::nullopt);
  CHECK_THROWS_AS(run_cleanup(subject), SuiteRefused);
  // The removal C-120 owes after every call still works: the core's rm -rf as the guest, from /.
  const std::string base = sandbox->storage_base();
  auto sh = [&](const std::string& line) { return f.run([&] { return sandbox->exec(line, "/"); }); };
  REQUIRE(sh("mkdir -p " + base + "/call-a/deep " + base + "/call-b && touch " + base + "/call-a/deep/f " + base +
             "/call-b/f").exit_code == 0);
  f.run([&] { return sandbox->reclaim(base + "/call-a", ".", std::chrono::seconds(60)); });
  CHECK(sh("test -e " + base + "/call-a").exit_code != 0);
  CHECK(sh("test -f " + base + "/call-b/f").exit_code == 0);
  f.run([&] { return sandbox->reclaim(base + "/call-a", ".", std::chrono::seconds(60)); });  // missing = success
  CHECK_THROWS_AS(f.run([&] { return sandbox->reset(std::chrono::seconds(10)); }), NotImplementedError);
}
