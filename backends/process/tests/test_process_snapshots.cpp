// Snapshots, restore, fork and pause on the process backend against real bubblewrap
// (docs/snapshots.md SNAP-3…SNAP-9, issue 49): what a restore brings back and what it does
// not (no process survives a `filesystem` restore), a fork that diverges from its parent,
// ownership (disposal, purge and reap leave nothing), TTL and budget, and the freezer.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "maf/sandbox/background.hpp"
#include "maf/sandbox/conformance/conformance.hpp"
#include "maf/sandbox/errors.hpp"
#include "process_fixture.hpp"

using namespace maf::sandbox;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using maf::sandbox::process::test::Fixture;

namespace {

/// Host pids of the guests rooted at `root` (the sandbox's private root).
std::set<pid_t> guests_of(const fs::path& root) {
  std::set<pid_t> out;
  struct stat want {};
  if (::stat(root.c_str(), &want) != 0) return out;
  for (const auto& p : fs::directory_iterator("/proc")) {
    struct stat st {};
    const std::string n = p.path().filename().string();
    if (!std::isdigit(static_cast<unsigned char>(n[0]))) continue;
    if (::stat((p.path() / "root").c_str(), &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino)
      out.insert(static_cast<pid_t>(std::stol(n)));
  }
  return out;
}

/// A pid is gone once /proc no longer lists it as a live process (a zombie counts as gone).
bool gone(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("State:", 0) == 0) return line.find('Z') != std::string::npos || line.find('X') != std::string::npos;
  return true;
}

/// Waits (bounded, for the kernel to deliver SIGKILL) until every pid is gone.
bool all_gone(const std::set<pid_t>& pids) {
  for (int i = 0; i < 400; ++i) {
    bool all = true;
    for (pid_t p : pids) all = all && gone(p);
    if (all) return true;
    std::this_thread::sleep_for(25ms);
  }
  return false;
}

std::string out_of(Fixture& f, Sandbox& sb, const std::string& line) {
  const auto r = f.exec(sb, line);
  REQUIRE(r.exit_code == 0);
  return r.stdout_text();
}

fs::path only_dir(Fixture& f) {
  const auto paths = f.sandbox_paths();
  REQUIRE(paths.size() == 1);
  return paths.front();
}

SandboxSpec snapshot_spec(Fixture& f, std::string kind = "script") {
  auto fields = f.spec(std::move(kind)).fields();
  fields.min_snapshot_fidelity = SnapshotFidelity::Filesystem;
  return SandboxSpec(std::move(fields));
}

const char* kLayout =
    "mkdir -p d/sub && echo one > d/sub/f && echo keep > gone.txt && printf '#!/bin/sh\\n' > run.sh && "
    "chmod 0750 run.sh && ln -s d/sub/f link && echo outside > /home-file";

}  // namespace

TEST_CASE("SNAP-4: the process backend declares 'filesystem' fidelity, and a spec asking 'memory' is refused") {
  Fixture f;
  const auto& d = f.backend->declarations();
  REQUIRE(d.snapshot_fidelity == SnapshotFidelity::Filesystem);
  CHECK(d.capabilities.contains(Capability::Snapshot));
  auto fields = f.spec().fields();
  fields.min_snapshot_fidelity = SnapshotFidelity::Memory;
  const SandboxSpec memory(std::move(fields));
  try {
    f.acquire(f.key, memory);
    FAIL("a memory snapshot was promised by a backend that keeps no process");
  } catch (const SandboxSnapshotFidelityNotSupported& e) {
    CHECK(e.asked() == "memory");
    CHECK(e.declared() == "filesystem");
  }
  CHECK(f.sandbox_dirs() == 0);
}

TEST_CASE("SNAP-3: restore brings back files, deletions, modes and links, in the work tree and outside it") {
  Fixture f;
  auto sb = f.acquire(f.key, snapshot_spec(f));
  REQUIRE(f.exec(*sb, kLayout).exit_code == 0);
  const SnapshotInfo snap = f.run([&] { return sb->snapshot(); });
  CHECK(snap.fidelity == SnapshotFidelity::Filesystem);
  CHECK(snap.size_bytes > 0);
  REQUIRE(f.exec(*sb, "echo two > d/sub/f && rm gone.txt && chmod 0600 run.sh && rm link && ln -s gone.txt link && "
                      "echo new > added && rm /home-file && mkdir more")
              .exit_code == 0);
  f.run([&] { return sb->restore(snap.id); });
  CHECK(out_of(f, *sb, "cat d/sub/f") == "one\n");
  CHECK(out_of(f, *sb, "cat gone.txt") == "keep\n");
  CHECK(out_of(f, *sb, "stat -c %a run.sh") == "750\n");
  CHECK(out_of(f, *sb, "readlink link") == "d/sub/f\n");
  CHECK(out_of(f, *sb, "cat /home-file") == "outside\n");
  CHECK(f.exec(*sb, "test -e added || test -e more").exit_code != 0);
  // The snapshot stays restorable until released.
  REQUIRE(f.exec(*sb, "rm -r d").exit_code == 0);
  f.run([&] { return sb->restore(snap.id); });
  CHECK(out_of(f, *sb, "cat link") == "one\n");
}

TEST_CASE("SNAP-3: a process running when a filesystem snapshot was taken is not running after its restore") {
  Fixture f;
  auto sb = f.acquire(f.key, snapshot_spec(f));
  const auto started = f.run([&] { return start_background(sb, Command("exec sleep 600")); });
  (void)started;
  const fs::path root = only_dir(f) / "root";
  const std::set<pid_t> before = guests_of(root);
  REQUIRE_FALSE(before.empty());
  const SnapshotInfo snap = f.run([&] { return sb->snapshot(); });
  f.run([&] { return sb->restore(snap.id); });
  CHECK(all_gone(before));
  CHECK(guests_of(root).empty());
}

TEST_CASE("SNAP-5, SNAP-6: released or expired snapshots are not found; ids are the backend's own") {
  Fixture f;
  auto sb = f.acquire(f.key, snapshot_spec(f));
  const SnapshotInfo snap = f.run([&] { return sb->snapshot(); });
  CHECK(f.run([&] { return sb->snapshots(); }).size() == 1);
  f.run([&] { return sb->release_snapshot(snap.id); });
  CHECK(f.run([&] { return sb->snapshots(); }).empty());
  CHECK_THROWS_AS(f.run([&] { return sb->restore(snap.id); }), SandboxSnapshotNotFound);
  CHECK_THROWS_AS(f.run([&] { return sb->release_snapshot(snap.id); }), SandboxSnapshotNotFound);
  CHECK_THROWS_AS(f.run([&] { return sb->restore("../../snapshot"); }), SandboxSnapshotNotFound);
  CHECK(!fs::exists(only_dir(f) / "snapshots" / snap.id));

  Fixture g([](process::ProcessBackendConfig& c) { c.snapshot_ttl = 0s; });
  auto sb2 = g.acquire(g.key, snapshot_spec(g));
  const SnapshotInfo expired = g.run([&] { return sb2->snapshot(); });
  CHECK_THROWS_AS(g.run([&] { return sb2->restore(expired.id); }), SandboxSnapshotNotFound);
  CHECK(!fs::exists(only_dir(g) / "snapshots" / expired.id));
}

TEST_CASE("SNAP-6: reap --expired removes snapshots past their ttl from the sandboxes it walks") {
  Fixture f([](process::ProcessBackendConfig& c) { c.snapshot_ttl = 0s; });
  auto sb = f.acquire(f.key, snapshot_spec(f));
  const SnapshotInfo expired = f.run([&] { return sb->snapshot(); });
  const fs::path kept = only_dir(f) / "snapshots" / expired.id;
  REQUIRE(fs::exists(kept));  // taken, and not yet looked at since
  f.run([&] { return f.backend->reap_expired(std::nullopt); });
  CHECK_FALSE(fs::exists(kept));
  CHECK(f.sandbox_dirs() == 1);  // the sandbox itself has no ttl: it stays
}

TEST_CASE("SNAP-7: a snapshot past the budget is refused, naming the sizes, and nothing is kept") {
  Fixture f([](process::ProcessBackendConfig& c) { c.snapshot_budget_bytes = 150000; });
  auto sb = f.acquire(f.key, snapshot_spec(f));
  REQUIRE(f.exec(*sb, "head -c 100000 /dev/zero > blob").exit_code == 0);
  const SnapshotInfo first = f.run([&] { return sb->snapshot(); });
  const std::string msg = [&] {
    try {
      f.run([&] { return sb->snapshot(); });
    } catch (const SandboxSnapshotBudgetExceeded& e) {
      return std::string(e.what());
    }
    return std::string("not refused");
  }();
  CHECK_THAT(msg, Catch::Contains("150000") && Catch::Contains("snapshot_budget_bytes"));
  CHECK(f.run([&] { return sb->snapshots(); }).size() == 1);
  f.run([&] { return sb->release_snapshot(first.id); });
  CHECK_NOTHROW(f.run([&] { return sb->snapshot(); }));
}

TEST_CASE("SNAP-8: a fork is a sandbox of its own that diverges from its parent without touching it") {
  Fixture f;
  auto parent = f.acquire(f.key, snapshot_spec(f));
  REQUIRE(f.exec(*parent, "echo base > shared.txt").exit_code == 0);
  const SnapshotInfo snap = f.run([&] { return parent->snapshot(); });
  REQUIRE(f.exec(*parent, "echo after > parent-only").exit_code == 0);
  const SandboxKey fork_key{"tenant", "conv-1", "agent-fork", ""};
  const SandboxSpec spec = snapshot_spec(f);
  auto child = f.run([&] { return f.backend->fork(parent, snap.id, fork_key, spec); });
  CHECK(child->instance_id() != parent->instance_id());
  CHECK(f.sandbox_dirs() == 2);
  CHECK(out_of(f, *child, "cat shared.txt") == "base\n");
  CHECK(f.exec(*child, "test -e parent-only").exit_code != 0);
  REQUIRE(f.exec(*child, "echo child > shared.txt && echo c > child-only").exit_code == 0);
  CHECK(out_of(f, *parent, "cat shared.txt") == "base\n");
  CHECK(f.exec(*parent, "test -e child-only").exit_code != 0);
  // A second fork onto the same key is refused: a fork never replaces a sandbox.
  CHECK_THROWS_AS(f.run([&] { return f.backend->fork(parent, snap.id, fork_key, spec); }), ValueError);
  // The fork is acquired again by its key like any sandbox, and its RESET goes to its start.
  auto again = f.acquire(fork_key, spec);
  CHECK(again->instance_id() == child->instance_id());
  f.run([&] { return child->reset(); });
  CHECK(out_of(f, *child, "cat shared.txt") == "base\n");
  // Disposing the parent leaves the fork; the conversation's purge takes both.
  f.run([&] { return f.backend->dispose(f.key, std::nullopt, std::nullopt); });
  CHECK(out_of(f, *child, "cat shared.txt") == "base\n");
  const auto purge = f.run([&] { return f.backend->dispose_scope("tenant", "conv-1"); });
  CHECK(purge.disposed == 1);
  CHECK(f.sandbox_dirs() == 0);
}

TEST_CASE("SNAP-5: disposal, the conversation's purge and reap leave no snapshot behind") {
  Fixture f;
  for (int round = 0; round < 3; ++round) {
    auto sb = f.acquire(f.key, snapshot_spec(f));
    REQUIRE(f.exec(*sb, "echo x > f").exit_code == 0);
    f.run([&] { return sb->snapshot(); });
    f.run([&] { return sb->snapshot(); });
    REQUIRE(fs::exists(only_dir(f) / "snapshots"));
    if (round == 0) f.run([&] { return f.backend->dispose(f.key, std::nullopt, std::nullopt); });
    if (round == 1) f.run([&] { return f.backend->dispose_scope("tenant", "conv-1"); });
    if (round == 2) f.run([&] { return f.backend->reap(0s, std::nullopt); });
    CHECK(f.sandbox_dirs() == 0);
    std::size_t left = 0;
    for (auto it = fs::recursive_directory_iterator(f.root); it != fs::recursive_directory_iterator(); ++it)
      left += it->path().filename() == "snapshots";
    CHECK(left == 0);
  }
}

TEST_CASE("SNAP-9: pause freezes the guests in the sandbox's freezer cgroup, refuses exec, and resume thaws") {
  Fixture f;
  if (!f.backend->declarations().capabilities.contains(Capability::Pause)) {
    // Not declared is an honest answer on a host without a freezer; the facts say why.
    for (const auto& [k, v] : f.backend->facts())
      if (k == "pause") CHECK(v == "not offered");
    return;
  }
  auto spec_fields = f.spec().fields();
  spec_fields.requires_capabilities.insert(Capability::Pause);
  auto sb = f.acquire(f.key, SandboxSpec(std::move(spec_fields)));
  f.run([&] { return start_background(sb, Command("exec sleep 600")); });
  const fs::path dir = only_dir(f);
  const std::set<pid_t> guests = guests_of(dir / "root");
  REQUIRE_FALSE(guests.empty());
  f.run([&] { return sb->pause(); });
  CHECK(sb->paused());
  std::string cgroup;
  std::getline(std::ifstream(dir / "freezer"), cgroup);
  REQUIRE_FALSE(cgroup.empty());
  const bool v2 = fs::exists(fs::path(cgroup) / "cgroup.freeze");
  std::string state;
  std::ifstream(fs::path(cgroup) / (v2 ? "cgroup.events" : "freezer.state")) >> state;
  if (!v2) CHECK(state == "FROZEN");
  std::set<pid_t> members;
  std::ifstream procs(fs::path(cgroup) / "cgroup.procs");
  for (long p = 0; procs >> p;) members.insert(static_cast<pid_t>(p));
  // Every guest alive now is inside (a short-lived helper seen before the pause may have
  // exited since; a frozen guest cannot start another).
  const std::set<pid_t> frozen_guests = guests_of(dir / "root");
  CHECK_FALSE(frozen_guests.empty());
  for (pid_t g : frozen_guests) CHECK(members.count(g) == 1);
  CHECK_THROWS_AS(f.exec(*sb, "true"), SandboxPaused);
  f.run([&] { return sb->resume(); });
  CHECK_FALSE(sb->paused());
  if (!v2) {
    std::ifstream(fs::path(cgroup) / "freezer.state") >> state;
    CHECK(state == "THAWED");
  }
  CHECK(f.exec(*sb, "true").exit_code == 0);
  // Disposed while paused: the frozen guests are killed and the freezer cgroup removed.
  f.run([&] { return sb->pause(); });
  f.run([&] { return f.backend->dispose(f.key, std::nullopt, std::nullopt); });
  CHECK(all_gone(guests));
  CHECK_FALSE(fs::exists(cgroup));
}

namespace {

std::vector<std::string> ids_of(const std::vector<conformance::ProbeResult>& results, conformance::Outcome outcome) {
  std::vector<std::string> out;
  for (const auto& r : results)
    if (r.outcome == outcome) out.push_back(r.id);
  return out;
}

std::vector<conformance::ProbeResult> snapshot_suite(Fixture& f) {
  const SandboxSpec spec = snapshot_spec(f);
  auto sb = f.acquire(f.key, spec);
  conformance::PosixGuestSubject subject(f.run, sb, f.backend->declarations().capabilities, Egress::Closed);
  const conformance::SnapshotForkTarget fork{f.backend.get(), &spec};
  return conformance::run_snapshot(subject, fork);
}

}  // namespace

TEST_CASE("SNAPSHOT suite: green on the process backend, every probe run (SN-1…SN-6), nothing left after purge") {
  Fixture f;
  const auto results = snapshot_suite(f);
  for (const auto& r : results) INFO(r.id + ": " + r.message);
  CHECK(ids_of(results, conformance::Outcome::Fail).empty());
  CHECK(ids_of(results, conformance::Outcome::Skip).empty());
  CHECK(ids_of(results, conformance::Outcome::Pass).size() == conformance::probes(conformance::Suite::Snapshot).size());
  // SN-6 disposed its fork; the purge takes the subject, and no snapshot is left.
  CHECK(f.sandbox_dirs() == 1);
  f.run([&] { return f.backend->dispose_scope("tenant", "conv-1"); });
  CHECK(f.sandbox_dirs() == 0);
}

TEST_CASE("SNAPSHOT suite: each probe is shown able to fail by the broken double (test_only_broken_snapshots)") {
  Fixture f([](process::ProcessBackendConfig& c) { c.test_only_broken_snapshots = true; });
  const auto results = snapshot_suite(f);
  for (const auto& r : results) INFO(r.id + ": " + r.message);
  CHECK(ids_of(results, conformance::Outcome::Fail) ==
        std::vector<std::string>{"SN-1", "SN-2", "SN-3", "SN-4", "SN-5", "SN-6"});
}

TEST_CASE("OBS-13: snapshot, restore, release, pause and resume are observed, a failure with its error type") {
  Fixture f;
  auto sb = f.acquire(f.key, snapshot_spec(f));
  std::vector<SnapshotEvent> seen;
  std::vector<std::string> lines;
  auto observers = std::make_shared<const ObserverSet>(std::vector<std::shared_ptr<SandboxObserver>>{
      make_observer([&](const SandboxEvent& e) {
        if (const auto* s = std::get_if<SnapshotEvent>(&e)) {
          seen.push_back(*s);
          lines.push_back(event_to_json(e));
        }
      })});
  sb->attach_observers(observers, f.key);
  const SnapshotInfo snap = f.run([&] { return sb->snapshot(); });
  f.run([&] { return sb->restore(snap.id); });
  CHECK_THROWS_AS(f.run([&] { return sb->restore("snap-0000000000000000"); }), SandboxSnapshotNotFound);
  f.run([&] { return sb->release_snapshot(snap.id); });
  const bool pauses = f.backend->declarations().capabilities.contains(Capability::Pause);
  if (pauses) {
    f.run([&] { return sb->pause(); });
    f.run([&] { return sb->pause(); });  // already paused: no operation, no event
    f.run([&] { return sb->resume(); });
  }
  REQUIRE(seen.size() == (pauses ? 6u : 4u));
  CHECK(seen[0].operation == SnapshotOperation::Snapshot);
  CHECK(seen[0].snapshot_id == snap.id);
  CHECK(seen[0].size_bytes == snap.size_bytes);
  CHECK(seen[1].operation == SnapshotOperation::Restore);
  CHECK(seen[1].snapshot_id == snap.id);
  CHECK(seen[1].error_type.empty());
  CHECK(seen[2].operation == SnapshotOperation::Restore);
  CHECK(seen[2].error_type == "SandboxSnapshotNotFound");
  CHECK(seen[3].operation == SnapshotOperation::Release);
  if (pauses) {
    CHECK(seen[4].operation == SnapshotOperation::Pause);
    CHECK(seen[5].operation == SnapshotOperation::Resume);
  }
  CHECK(seen[0].context.key == f.key);
  CHECK(lines[1].find("\"event\":\"snapshot\"") != std::string::npos);
  CHECK(lines[1].find("\"operation\":\"restore\"") != std::string::npos);
}
