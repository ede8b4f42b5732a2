// SNAPSHOT (docs/conformance.md "SNAPSHOT", docs/snapshots.md): a restore brings back exactly
// what the snapshot kept — contents, deletions, modes, links as links — and nothing made
// since; a released snapshot is gone; a fork diverges from its parent without touching it.
// Presence and content are judged by the guest (exec), never by the surface under test.
#include <array>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kSnapshot{Capability::Snapshot};
constexpr auto kRestoreTimeout = std::chrono::seconds(60);

SnapshotInfo take(ProbeContext& c) {
  return c.subject.runner()([&] { return c.subject.sandbox().snapshot(); });
}

void restore(ProbeContext& c, const std::string& id) {
  c.subject.runner()([&] { return c.subject.sandbox().restore(id, kRestoreTimeout); });
}

void guest(ProbeContext& c, const std::string& what, const std::string& shell, std::string wd = {}) {
  const auto r = exec(c, Command(shell), std::move(wd));
  if (r.exit_code != 0) fail(what + " failed in the guest: " + describe(r));
}

std::string guest_out(ProbeContext& c, const std::string& shell) {
  const auto r = exec(c, Command(shell));
  if (r.exit_code != 0) fail("'" + shell + "' failed in the guest: " + describe(r));
  return r.stdout_text();
}

void release(ProbeContext& c, const std::string& id) {
  c.subject.runner()([&] { return c.subject.sandbox().release_snapshot(id); });
}

void contents_come_back(ProbeContext& c) {
  guest(c, "writing the kept state", "mkdir -p sn1 && echo kept > sn1/edited && echo kept > sn1/same");
  const SnapshotInfo snap = take(c);
  guest(c, "changing it", "echo changed > sn1/edited && echo new > sn1/added && mkdir sn1/new-dir");
  restore(c, snap.id);
  std::vector<std::string> problems;
  if (guest_out(c, "cat sn1/edited") != "kept\n") problems.push_back("sn1/edited does not hold what was kept");
  if (guest_out(c, "cat sn1/same") != "kept\n") problems.push_back("sn1/same changed");
  if (present(c, "sn1/added")) problems.push_back("sn1/added, made after the snapshot, survived the restore");
  if (present(c, "sn1/new-dir")) problems.push_back("sn1/new-dir, made after the snapshot, survived the restore");
  release(c, snap.id);
  if (!problems.empty()) fail(join(problems));
}

void deletions_come_back(ProbeContext& c) {
  guest(c, "writing the kept state", "mkdir -p sn2/tree/deep && echo leaf > sn2/tree/deep/leaf && echo f > sn2/file");
  const SnapshotInfo snap = take(c);
  guest(c, "deleting it", "rm -r sn2/tree && rm sn2/file");
  restore(c, snap.id);
  std::vector<std::string> problems;
  if (!is_file(c, "sn2/file")) problems.push_back("the deleted sn2/file did not come back");
  if (!is_file(c, "sn2/tree/deep/leaf")) problems.push_back("the deleted tree sn2/tree/deep/leaf did not come back");
  release(c, snap.id);
  if (!problems.empty()) fail(join(problems));
}

void modes_come_back(ProbeContext& c) {
  guest(c, "writing the kept state",
        "mkdir -p sn3/dir && echo x > sn3/script && chmod 0751 sn3/script && chmod 0700 sn3/dir");
  const SnapshotInfo snap = take(c);
  guest(c, "changing the modes", "chmod 0644 sn3/script && chmod 0755 sn3/dir");
  restore(c, snap.id);
  const std::string modes = guest_out(c, "stat -c %a sn3/script sn3/dir");
  release(c, snap.id);
  if (modes != "751\n700\n") fail("modes after the restore are " + quoted(modes) + ", kept were 751 and 700");
}

void links_come_back_as_links(ProbeContext& c) {
  c.subject.plant_file(c.paths.in_outside("sn4-target.txt"), "outside");
  guest(c, "writing the kept state", "mkdir -p sn4 && echo in > sn4/in && ln -s in sn4/link");
  const SnapshotInfo snap = take(c);
  guest(c, "retargeting the link", "rm sn4/link && ln -s " + c.paths.in_outside("sn4-target.txt") + " sn4/link");
  restore(c, snap.id);
  std::vector<std::string> problems;
  if (guest_out(c, "readlink sn4/link") != "in\n") problems.push_back("sn4/link does not point where it did (in)");
  if (guest_out(c, "cat sn4/in") != "in\n") problems.push_back("sn4/in does not hold what was kept");
  if (!is_file(c, c.paths.beyond("sn4-target.txt")))
    problems.push_back("the file the later link pointed at (outside the working directory) was removed");
  release(c, snap.id);
  if (!problems.empty()) fail(join(problems));
}

void released_is_gone(ProbeContext& c) {
  const SnapshotInfo snap = take(c);
  release(c, snap.id);
  try {
    restore(c, snap.id);
  } catch (const SandboxSnapshotNotFound&) {
    return;
  }
  fail("snapshot " + snap.id + " was restored after it was released");
}

void fork_diverges(ProbeContext& c) {
  if (!c.fork || !c.fork->backend || !c.fork->spec)
    throw ProbeNotApplicable("no backend to fork through was given (run_snapshot gives one)");
  guest(c, "writing the kept state", "mkdir -p sn6 && echo base > sn6/shared");
  const SnapshotInfo snap = take(c);
  guest(c, "writing after the snapshot", "echo parent > sn6/parent-only");
  SandboxBackend& backend = *c.fork->backend;
  const SandboxKey key{"conformance-fork", c.subject.sandbox().instance_id(), "snapshot-fork", ""};
  auto source = std::shared_ptr<Sandbox>(&c.subject.sandbox(), [](Sandbox*) {});
  const SandboxSpec spec = *c.fork->spec;
  std::vector<std::string> problems;
  auto dispose_fork = [&] {
    if (auto failure = c.subject.runner()([&] { return backend.dispose(key, std::nullopt, std::nullopt); }))
      problems.push_back("disposing the fork failed: " + failure->to_string());
  };
  try {
    auto child = c.subject.runner()([&] { return backend.fork(source, snap.id, key, spec); });
    auto in_child = [&](const std::string& shell) {
      return c.subject.runner()([&] { return child->exec(Command(shell), c.paths.work, c.subject.exec_timeout()); });
    };
    if (child->instance_id() == c.subject.sandbox().instance_id()) problems.push_back("the fork is its parent");
    if (in_child("cat sn6/shared").stdout_text() != "base\n") problems.push_back("the fork does not start as kept");
    if (in_child("test -e sn6/parent-only").exit_code == 0)
      problems.push_back("the fork sees sn6/parent-only, written after the snapshot");
    if (in_child("echo child > sn6/shared && echo c > sn6/child-only").exit_code != 0)
      problems.push_back("the fork could not write");
    if (guest_out(c, "cat sn6/shared") != "base\n") problems.push_back("a write in the fork changed the parent's sn6/shared");
    if (present(c, "sn6/child-only")) problems.push_back("the parent sees sn6/child-only, written in the fork");
    guest(c, "writing in the parent", "echo parent > sn6/shared");
    if (in_child("cat sn6/shared").stdout_text() != "child\n") problems.push_back("a write in the parent changed the fork");
  } catch (...) {
    dispose_fork();
    release(c, snap.id);
    throw;
  }
  dispose_fork();
  release(c, snap.id);
  if (!problems.empty()) fail(join(problems));
}

const std::array kProbes{
    Probe{Suite::Snapshot, "SN-1", "restore-brings-back-contents-and-drops-later-files",
          "a restore that kept a later file or lost an edit is not the state the host asked back", kSnapshot,
          &contents_come_back},
    Probe{Suite::Snapshot, "SN-2", "restore-brings-back-deletions",
          "a deleted file or tree must come back; a restore that only undoes writes loses work", kSnapshot,
          &deletions_come_back},
    Probe{Suite::Snapshot, "SN-3", "restore-brings-back-modes",
          "an executable that comes back without its mode is not the state kept", kSnapshot, &modes_come_back},
    Probe{Suite::Snapshot, "SN-4", "restore-brings-back-links-as-links",
          "a link comes back as the same link, and what a later link pointed at is left alone", kSnapshot,
          &links_come_back_as_links},
    Probe{Suite::Snapshot, "SN-5", "a-released-snapshot-is-gone",
          "a snapshot the host released must not be restorable (it is owned, and counted in the budget)", kSnapshot,
          &released_is_gone},
    Probe{Suite::Snapshot, "SN-6", "a-fork-diverges-without-touching-its-parent",
          "two fixes tried from one state must not see each other's writes", kSnapshot, &fork_diverges},
};

}  // namespace

std::span<const Probe> snapshot_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
