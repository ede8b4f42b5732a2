// CLEANUP (docs/conformance.md "CLEANUP"): the two cleanup rungs below disposal, attacked
// through the public surface (docs/tools.md "The cleanup ladder"). RECLAIM probes (RC-n, need `reclaim`) remove a
// call's directory and must take nothing else — not a sibling call's directory, not what a
// planted link points at; RESET probes (RS-n, need `snapshot`) must put the acquire-time tree
// back. Presence is judged by the guest (exec `test`), never by the surface under test.
// DISPOSE is NL-1 (fingerprint.hpp): what it must leave is judged on the engine, not here.
#include <array>

#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kReclaim{Capability::Reclaim};
constexpr CapabilitySet kSnapshot{Capability::Snapshot};
constexpr auto kCleanupTimeout = std::chrono::seconds(60);

void plant(ProbeContext& c, const std::string& relative, std::string_view bytes = "x") {
  c.subject.plant_file(c.paths.in_work(relative), bytes);
}

void reclaim(ProbeContext& c, const std::string& absolute_directory, std::string working_directory = {}) {
  if (working_directory.empty()) working_directory = c.paths.work;
  c.subject.runner()(
      [&] { return c.subject.sandbox().reclaim(absolute_directory, working_directory, kCleanupTimeout); });
}

void reset(ProbeContext& c) {
  c.subject.runner()([&] { return c.subject.sandbox().reset(kCleanupTimeout); });
}

/// A guest-side setup step; a non-zero exit is the probe's failure (nothing was attacked).
void guest(ProbeContext& c, const std::string& what, const std::string& shell, std::string wd = {}) {
  const auto r = exec(c, Command(shell), std::move(wd));
  if (r.exit_code != 0) fail(what + " failed in the guest: " + describe(r));
}

void created_directory_is_gone(ProbeContext& c) {
  plant(c, "reclaim-me/note.txt");
  plant(c, "reclaim-sibling/note.txt");  // another call's directory, still in use
  plant(c, "reclaim-bystander.txt");
  reclaim(c, c.paths.in_work("reclaim-me"));
  std::vector<std::string> problems;
  if (present(c, "reclaim-me")) problems.push_back("reclaim-me is still there");
  if (!is_file(c, "reclaim-sibling/note.txt")) problems.push_back("the sibling call's reclaim-sibling/note.txt was removed");
  if (!is_file(c, "reclaim-bystander.txt")) problems.push_back("reclaim-bystander.txt was removed");
  if (!problems.empty()) fail(join(problems));
}

void nested_content_goes(ProbeContext& c) {
  plant(c, "reclaim-tree/deep/nested/leaf.txt");
  plant(c, "reclaim-tree/top.txt");
  reclaim(c, c.paths.in_work("reclaim-tree"));
  std::vector<std::string> problems;
  if (present(c, "reclaim-tree/deep/nested/leaf.txt")) problems.push_back("the deep leaf survived");
  if (present(c, "reclaim-tree")) problems.push_back("reclaim-tree survived");
  if (!problems.empty()) fail(join(problems));
}

void interior_link_not_followed(ProbeContext& c) {
  c.subject.plant_file(c.paths.in_outside("reclaim-target.txt"), "target");
  c.subject.plant_file(c.paths.in_outside("reclaim-target-dir/keep.txt"), "keep");
  plant(c, "reclaim-linked/leaf.txt");
  c.subject.plant_symlink(c.paths.in_work("reclaim-linked/file-link"), c.paths.in_outside("reclaim-target.txt"));
  c.subject.plant_symlink(c.paths.in_work("reclaim-linked/dir-link"), c.paths.in_outside("reclaim-target-dir"));
  reclaim(c, c.paths.in_work("reclaim-linked"));
  std::vector<std::string> problems;
  if (present(c, "reclaim-linked")) problems.push_back("reclaim-linked survived");
  if (!is_file(c, c.paths.beyond("reclaim-target.txt")))
    problems.push_back("the file an interior link pointed at was deleted (the link was followed)");
  if (!is_file(c, c.paths.beyond("reclaim-target-dir/keep.txt")))
    problems.push_back("the directory an interior link pointed at was emptied (the link was followed)");
  if (!problems.empty()) fail(join(problems));
}

void missing_is_success(ProbeContext& c) {
  plant(c, "reclaim-twice/note.txt");
  reclaim(c, c.paths.in_work("reclaim-twice"));
  try {
    reclaim(c, c.paths.in_work("reclaim-twice"));
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    fail("reclaiming a missing directory raised " + type_name(e) + " (" + e.what() +
         "); a cleanup that runs after every call would report a leak where there is none");
  }
  if (present(c, "reclaim-twice")) fail("reclaim-twice is still there after two reclaims");
}

void absent_working_directory(ProbeContext& c) {
  const std::string wd = c.paths.in_work("absent-work");
  try {
    reclaim(c, wd + "/call-a1b2c3", wd);
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    fail("reclaim with a working directory that does not exist raised " + type_name(e) + " (" + e.what() +
         "); it runs from '/', so a call that never wrote must still clean up");
  }
}

void linked_call_directory_not_followed(ProbeContext& c) {
  c.subject.plant_file(c.paths.in_outside("reclaim-aimed/keep.txt"), "keep");
  c.subject.plant_symlink(c.paths.in_work("reclaim-aimed-link"), c.paths.in_outside("reclaim-aimed"));
  reclaim(c, c.paths.in_work("reclaim-aimed-link"));
  std::vector<std::string> problems;
  if (present(c, "reclaim-aimed-link")) problems.push_back("the link named as the call directory is still there");
  if (!is_file(c, c.paths.beyond("reclaim-aimed/keep.txt")))
    problems.push_back("what the link pointed at (outside the working directory) was deleted");
  if (!problems.empty()) fail(join(problems));
}

void read_only_content_removed(ProbeContext& c) {
  // The guest makes its own tree read-only; it could undo that itself, so RECLAIM must too.
  guest(c, "building a read-only tree",
        "mkdir -p reclaim-ro/sub && echo x > reclaim-ro/sub/file && chmod 0444 reclaim-ro/sub/file && "
        "chmod 0555 reclaim-ro/sub && chmod 0555 reclaim-ro");
  reclaim(c, c.paths.in_work("reclaim-ro"));
  if (present(c, "reclaim-ro")) fail("reclaim-ro (made read-only by the guest) is still there");
}

void refusals_hold(ProbeContext& c) {
  plant(c, "reclaim-ground.txt");
  std::vector<std::string> problems;
  const std::pair<std::string, std::string> refused[] = {
      {"reclaim-relative", c.paths.work}, {"/", "/"}, {"/tmp", "/"}, {c.paths.work, c.paths.work}};
  for (const auto& [directory, wd] : refused)
    if (auto p = refusal_problem<ValueError>("reclaim '" + directory + "' (working directory '" + wd + "')",
                                             kConfinement, [&] { reclaim(c, directory, wd); }))
      problems.push_back(*p);
  if (!is_file(c, "reclaim-ground.txt")) problems.push_back("reclaim-ground.txt is gone (the working directory was removed)");
  if (!problems.empty()) fail(join(problems));
}

void written_after_acquire_is_gone(ProbeContext& c) {
  plant(c, "reset-new.txt");
  plant(c, "reset-new/deep/leaf.txt");
  reset(c);
  std::vector<std::string> problems;
  if (present(c, "reset-new.txt")) problems.push_back("reset-new.txt survived the reset");
  if (present(c, "reset-new")) problems.push_back("reset-new/ survived the reset");
  if (!problems.empty()) fail(join(problems));
}

std::string mode_of(ProbeContext& c, const std::string& path) {
  const auto r = exec(c, std::vector<std::string>{"stat", "-c", "%a", path}, "/");
  if (r.exit_code != 0) fail("the guest could not report the mode of '" + path + "': " + describe(r));
  std::string mode = r.stdout_text();
  while (!mode.empty() && (mode.back() == '\n' || mode.back() == ' ')) mode.pop_back();
  return mode;
}

void changed_entry_is_back(ProbeContext& c) {
  const std::string before = mode_of(c, c.paths.work);
  const std::string changed = before == "700" ? "755" : "700";
  guest(c, "chmod of the working directory", "chmod " + changed + " " + c.paths.work, "/");
  if (mode_of(c, c.paths.work) != changed) fail("the guest's chmod did not take; nothing was attacked");
  reset(c);
  const std::string after = mode_of(c, c.paths.work);
  if (after != before) fail("the working directory's mode is " + after + " after the reset, not " + before);
}

void deleted_entry_is_back(ProbeContext& c) {
  guest(c, "removing the working directory", "rm -rf -- " + c.paths.work, "/");
  if (present(c, c.paths.work, "/")) fail("the guest could not remove the working directory; nothing was attacked");
  reset(c);
  const auto r = exec(c, std::vector<std::string>{"test", "-d", c.paths.work}, "/");
  if (r.exit_code != 0) fail("the working directory is not back after the reset: " + describe(r));
}

void serves_after_reset(ProbeContext& c) {
  reset(c);
  write(c, "after-reset.txt", "still served");
  const auto r = exec(c, std::vector<std::string>{"cat", "after-reset.txt"});
  if (r.exit_code != 0 || r.stdout_bytes != "still served")
    fail("after a reset the sandbox does not serve a write and an exec: " + describe(r));
}

constexpr std::array<Probe, 12> kProbes{{
    {Suite::Cleanup, "RC-1", "a-created-directory-is-gone",
     "RECLAIM removes the call's directory and nothing else: a sibling call's directory stays", kReclaim,
     created_directory_is_gone},
    {Suite::Cleanup, "RC-2", "nested-content-goes-with-it", "a partial removal leaves the call's data for the next call",
     kReclaim, nested_content_goes},
    {Suite::Cleanup, "RC-3", "a-link-inside-is-unlinked-not-followed",
     "a guest-planted link inside the call directory must not aim the removal outside it", kReclaim,
     interior_link_not_followed},
    {Suite::Cleanup, "RC-4", "a-missing-directory-is-success",
     "cleanup runs after every call; a directory never created (or already gone) is success (docs/tools.md \"The cleanup ladder\")", kReclaim,
     missing_is_success},
    {Suite::Cleanup, "RC-5", "an-absent-working-directory-still-succeeds",
     "reclaim runs from '/' (docs/tools.md \"The cleanup ladder\"): a call that never wrote has no working directory to enter", kReclaim,
     absent_working_directory},
    {Suite::Cleanup, "RC-6", "a-linked-call-directory-is-unlinked-not-followed",
     "a guest that swaps its call directory for a link must lose the link, not what it points at", kReclaim,
     linked_call_directory_not_followed},
    {Suite::Cleanup, "RC-7", "read-only-content-is-still-removed",
     "a guest can make its own files read-only; what it could undo must not survive the reclaim", kReclaim,
     read_only_content_removed},
    {Suite::Cleanup, "RC-8", "root-near-relative-and-working-directory-targets-are-refused",
     "docs/tools.md \"The cleanup ladder\": not absolute, fewer than two components or the working directory itself is ValueError, before "
     "anything is removed",
     kReclaim, refusals_hold},
    {Suite::Cleanup, "RS-1", "a-file-written-after-acquire-is-gone",
     "RESET restores the acquire-time tree: what a call wrote must not reach the next", kSnapshot,
     written_after_acquire_is_gone},
    {Suite::Cleanup, "RS-2", "a-changed-entry-is-back",
     "a reset that only deletes new files leaves a call's changes to existing ones", kSnapshot, changed_entry_is_back},
    {Suite::Cleanup, "RS-3", "a-deleted-entry-is-back",
     "a reset that only deletes leaves what a call removed missing for the next", kSnapshot, deleted_entry_is_back},
    {Suite::Cleanup, "RS-4", "the-sandbox-serves-after-a-reset",
     "a reset that leaves the sandbox unusable is a disposal by another name", kSnapshot, serves_after_reset},
}};

}  // namespace

std::span<const Probe> cleanup_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
