// Snapshots, fork and pause on a real engine (issue 49; docs/snapshots.md SNAP-3…SNAP-9,
// docs/backends/docker.md "Snapshots and pause"). The SNAPSHOT suite and RESET (CLEANUP's
// RS-n) run on each transport: a snapshot is the tar plane's GET and a restore its PUT, which
// the two transports carry differently; pause is each transport's own pause call. What the
// transport does not change — a restore stops guest processes, ownership, budget, disposal —
// runs once ([once], the Engine API).
#include <algorithm>
#include <set>
#include <thread>

#include <maf/sandbox/conformance/conformance.hpp>
#include <maf/sandbox/support/labels.hpp>

#include "docker_sandbox.hpp"
#include "engine_fixture.hpp"
#include "probe_results.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace docker_test;

namespace {

docker::DockerConfig snapshot_config() {
  auto c = test_config();
  c.snapshots = true;
  return c;
}

SandboxSpec snapshot_spec(const std::string& kind = "snap") {
  return spec_for(kImage, {Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::Snapshot}, kind);
}

std::string container_state(const std::string& name) {
  int code = -1;
  auto out = docker_cli({"container", "inspect", "--format", "{{.State.Status}}", name}, &code);
  return code == 0 ? out : "absent";
}

/// The engine flips its paused flag when containerd's event arrives, after pause/unpause
/// answered (freeze.cpp): the state is read until it says `want`, within a bound.
std::string settled_state(const std::string& name, const std::string& want) {
  std::string state = container_state(name);
  for (int i = 0; i < 100 && state != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    state = container_state(name);
  }
  return state;
}

std::string name_of(Sandbox& sb) { return dynamic_cast<docker::detail::DockerSandbox&>(sb).container_name(); }

int containers_of_scope(const std::string& scope, const std::string& thread = "thread-1") {
  std::vector<std::string> args{"ps", "-aq"};
  for (const auto& [label, value] : support::scope_selector(scope, thread)) {
    args.push_back("--filter");
    args.push_back("label=" + support::label_argument(label, value));
  }
  const std::string out = docker_cli(args);
  return out.empty() ? 0 : 1 + static_cast<int>(std::count(out.begin(), out.end(), '\n'));
}

}  // namespace

TEST_CASE("SNAP-1: snapshots only when configured, at work_tree fidelity; a filesystem floor is refused", "[once]") {
  Scope plain;
  CHECK_FALSE(plain.backend->declarations().capabilities.contains(Capability::Snapshot));
  CHECK_FALSE(plain.backend->declarations().snapshot_fidelity.has_value());
  CHECK(plain.backend->declarations().capabilities.contains(Capability::Pause));
  Scope s(snapshot_config());
  const auto& d = s.backend->declarations();
  CHECK(d.capabilities.contains(Capability::Snapshot));
  REQUIRE(d.snapshot_fidelity.has_value());
  CHECK(*d.snapshot_fidelity == SnapshotFidelity::WorkTree);
  SandboxSpec::Fields f;
  f.kind = "snap";
  f.image = kImage;
  f.min_snapshot_fidelity = SnapshotFidelity::Filesystem;
  const SandboxSpec asks_more(std::move(f));
  CHECK_THROWS_AS(s.acquire(asks_more), SandboxSnapshotFidelityNotSupported);
  CHECK(containers_of_scope(s.scope) == 0);  // refused before any engine work
}

TEST_CASE("SN-1…SN-6 and RS-1…RS-4: the SNAPSHOT suite and RESET are green on Docker") {
  Scope s(snapshot_config());
  const SandboxSpec spec = snapshot_spec();
  auto sb = s.acquire(spec);
  PosixGuestSubject subject(s.run, sb, s.backend->declarations().capabilities, Egress::Closed);
  const SnapshotForkTarget fork{s.backend.get(), &spec};
  const auto snap = run_snapshot(subject, fork);
  report(snap);
  CHECK(ids(snap, Outcome::Fail).empty());
  CHECK(ids(snap, Outcome::Skip).empty());
  CHECK(ids(snap, Outcome::Pass) == std::set<std::string>{"SN-1", "SN-2", "SN-3", "SN-4", "SN-5", "SN-6"});
  const auto cleanup = run_suite(Suite::Cleanup, subject);
  report(cleanup);
  CHECK(ids(cleanup, Outcome::Fail).empty());
  for (const char* id : {"RS-1", "RS-2", "RS-3", "RS-4"}) CHECK(ids(cleanup, Outcome::Pass).contains(id));
  // The fork SN-6 made was disposed by the suite; the sandbox itself goes with the scope.
  CHECK(containers_of_scope(s.scope) == 1);
}

TEST_CASE("SNAP-3: a process running before a work_tree snapshot is not running after its restore", "[once]") {
  Scope s(snapshot_config());
  auto sb = s.acquire(snapshot_spec());
  const std::string name = name_of(*sb);
  REQUIRE(s.sh(*sb, "echo kept > kept.txt").exit_code == 0);
  auto started = s.sh(*sb, "sleep 1000 >/dev/null 2>&1 & echo $! > /tmp/bg.pid; cat /tmp/bg.pid");
  REQUIRE(started.exit_code == 0);
  REQUIRE(s.sh(*sb, "kill -0 $(cat /tmp/bg.pid)").exit_code == 0);
  const SnapshotInfo snap = s.run([&] { return sb->snapshot(); });
  CHECK(snap.fidelity == SnapshotFidelity::WorkTree);
  CHECK(snap.size_bytes > 0);
  REQUIRE(s.sh(*sb, "echo later > later.txt").exit_code == 0);
  s.run([&] { return sb->restore(snap.id); });
  // The same container (restore in place), still serving; the guest process is gone.
  CHECK(container_state(name) == "running");
  CHECK(s.sh(*sb, "kill -0 $(cat /tmp/bg.pid)").exit_code != 0);
  CHECK(s.sh(*sb, "cat kept.txt").stdout_text() == "kept\n");
  CHECK(s.sh(*sb, "test -e later.txt").exit_code != 0);
  // work_tree keeps the work tree only: a file outside it is not put back.
  REQUIRE(s.sh(*sb, "test -e /tmp/bg.pid").exit_code == 0);
}

TEST_CASE("SNAP-5 SNAP-6 SNAP-7: release, budget, and disposal drop snapshots; a fork is its own sandbox", "[once]") {
  auto config = snapshot_config();
  config.snapshot_budget_bytes = 256 * 1024;
  Scope s(config);
  const SandboxSpec spec = snapshot_spec();
  auto sb = s.acquire(spec);
  REQUIRE(s.sh(*sb, "echo small > small.txt").exit_code == 0);
  const SnapshotInfo kept = s.run([&] { return sb->snapshot(); });
  auto held = s.run([&] { return sb->snapshots(); });
  REQUIRE(held.size() == 1);
  CHECK(held[0].id == kept.id);
  // Past the budget: refused, naming the budget; nothing more kept.
  REQUIRE(s.sh(*sb, "dd if=/dev/zero of=big.bin bs=1024 count=400 2>/dev/null").exit_code == 0);
  try {
    s.run([&] { return sb->snapshot(); });
    FAIL("a snapshot past the budget was kept");
  } catch (const SandboxSnapshotBudgetExceeded& e) {
    CHECK(std::string(e.what()).find("snapshot_budget_bytes=262144") != std::string::npos);
  }
  CHECK(s.run([&] { return sb->snapshots(); }).size() == 1);
  // A fork: its own container and key, re-acquirable, refused when its key has one already.
  const SandboxKey fork_key = s.key("forked");
  auto child = s.run([&] { return s.backend->fork(sb, kept.id, fork_key, spec); });
  CHECK(child->instance_id() != sb->instance_id());
  CHECK(s.sh(*child, "cat small.txt").stdout_text() == "small\n");
  CHECK(s.sh(*child, "test -e big.bin").exit_code != 0);
  CHECK_THROWS_AS(s.run([&] { return s.backend->fork(sb, kept.id, fork_key, spec); }), ValueError);
  auto again = s.acquire(spec, "forked");
  CHECK(again->instance_id() == child->instance_id());
  CHECK(containers_of_scope(s.scope) == 2);
  // Released: gone. Disposed: the sandbox's snapshots go with it (a re-acquired container
  // under the same key holds none, and the old id restores nothing).
  REQUIRE(s.sh(*sb, "rm big.bin").exit_code == 0);
  const SnapshotInfo second = s.run([&] { return sb->snapshot(); });
  s.run([&] { return sb->release_snapshot(second.id); });
  CHECK_THROWS_AS(s.run([&] { return sb->restore(second.id); }), SandboxSnapshotNotFound);
  CHECK_FALSE(s.run([&] { return s.backend->dispose(s.key(), std::nullopt, std::nullopt); }).has_value());
  auto fresh = s.acquire(spec);
  CHECK(s.run([&] { return fresh->snapshots(); }).empty());
  CHECK_THROWS_AS(s.run([&] { return fresh->restore(kept.id); }), SandboxSnapshotNotFound);
  // The purge takes the fork with the rest.
  s.run([&] { return s.backend->dispose_scope(s.scope, s.thread); });
  CHECK(containers_of_scope(s.scope) == 0);
}

TEST_CASE("SNAP-9: pause freezes the container; exec waits for resume, files still move; dispose while paused") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps, "paused"));
  const std::string name = name_of(*sb);
  s.run([&] { return sb->pause(); });
  CHECK(sb->paused());
  CHECK(settled_state(name, "paused") == "paused");
  CHECK_THROWS_AS(s.run([&] { return sb->exec(std::string("true")); }), SandboxPaused);
  // The tar plane runs inside the pause's freeze.
  s.run([&] { return sb->write_file("while-paused.txt", "frozen"); });
  CHECK(s.run([&] { return sb->read_file("while-paused.txt"); }) == "frozen");
  CHECK(settled_state(name, "paused") == "paused");
  // Another acquire of the key refuses while this process holds the pause.
  CHECK_THROWS_AS(s.acquire(spec_for(kImage, kAllCaps, "paused")), SandboxPaused);
  s.run([&] { return sb->resume(); });
  CHECK_FALSE(sb->paused());
  CHECK(settled_state(name, "running") == "running");
  CHECK(s.sh(*sb, "cat while-paused.txt").stdout_text() == "frozen");
  // Disposed while paused: nothing is left.
  s.run([&] { return sb->pause(); });
  CHECK_FALSE(s.run([&] { return s.backend->dispose(s.key(), std::nullopt, std::nullopt); }).has_value());
  CHECK(container_state(name) == "absent");
  // A new container under the same name is not taken for the paused one.
  auto next = s.acquire(spec_for(kImage, kAllCaps, "paused"));
  s.run([&] { return next->write_file("after.txt", "x"); });
  CHECK(s.sh(*next, "cat after.txt").stdout_text() == "x");
}
