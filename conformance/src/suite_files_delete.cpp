// FILES_DELETE (FD-1…FD-10): remove removes exactly what it names — never a link's
// target, never outside, never the working directory. Each probe plants its own fixtures, so
// measure_files_delete_probes can run them without the gate (R8). Presence is judged by the
// guest (exec `test`), not by the surface under test.
#include <array>

#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kDelete{Capability::FilesDelete};

void plant(ProbeContext& c, const std::string& relative, std::string_view bytes = "x") {
  c.subject.plant_file(c.paths.in_work(relative), bytes);
}

void removal_removes(ProbeContext& c) {
  plant(c, "doomed.txt");
  plant(c, "bystander.txt");
  remove(c, "doomed.txt");
  std::vector<std::string> problems;
  if (present(c, "doomed.txt")) problems.push_back("doomed.txt is still there");
  if (!present(c, "bystander.txt")) problems.push_back("bystander.txt was removed too");
  if (!problems.empty()) fail(join(problems));
}

void missing_is_success(ProbeContext& c) {
  plant(c, "was-here.txt");
  remove(c, "was-here.txt");
  try {
    remove(c, "was-here.txt");
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    fail("removing a missing path raised " + type_name(e) + " (" + e.what() + "); a finally-cleanup would break");
  }
}

void link_never_followed(ProbeContext& c) {
  const auto target = c.paths.in_outside("target.txt");
  c.subject.plant_file(target, "target");
  std::vector<std::string> problems;
  for (auto [name, recursive] : {std::pair{"link-out", false}, std::pair{"link-out-recursive", true}}) {
    c.subject.plant_symlink(c.paths.in_work(name), target);
    const std::string flag = recursive ? " (recursive)" : "";
    try {
      remove(c, name, {}, recursive);
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      problems.push_back(std::string("remove ") + name + flag + " raised " + type_name(e) + " (" + e.what() + ")");
    }
    if (present(c, name)) problems.push_back(std::string(name) + " is still there" + flag);
    if (!is_file(c, c.paths.beyond("target.txt")))
      problems.push_back("the link's target was deleted" + flag + " (the link was followed)");
  }
  if (!problems.empty()) fail(join(problems));
}

void linked_parent_refused(ProbeContext& c) {
  const auto target = c.paths.in_outside("target.txt");
  c.subject.plant_file(target, "target");
  c.subject.plant_symlink(c.paths.link_dir, c.paths.outside);
  std::vector<std::string> problems;
  for (bool recursive : {false, true}) {
    if (auto p = refusal_problem<ValueError>(std::string("remove link-dir/target.txt") + (recursive ? " (recursive)" : ""),
                                             kConfinement, [&] { remove(c, "link-dir/target.txt", {}, recursive); }))
      problems.push_back(*p);
  }
  if (!is_file(c, c.paths.beyond("target.txt"))) problems.push_back("the target outside was deleted");
  if (!problems.empty()) fail(join(problems));
}

void directory_needs_recursive(ProbeContext& c) {
  plant(c, "dir/keeps.txt");
  std::vector<std::string> problems;
  if (auto p = refusal_problem<OSError>("remove dir", kIoRefusal, [&] { remove(c, "dir"); })) problems.push_back(*p);
  if (!present(c, "dir/keeps.txt")) problems.push_back("dir/keeps.txt is gone");
  if (!problems.empty()) fail(join(problems));
}

void empty_directory_needs_recursive(ProbeContext& c) {
  auto r = exec(c, std::vector<std::string>{"mkdir", "-p", "empty"});
  if (r.exit_code != 0) fail("mkdir -p empty failed: " + describe(r));
  std::vector<std::string> problems;
  if (auto p = refusal_problem<OSError>("remove empty", kIoRefusal, [&] { remove(c, "empty"); })) problems.push_back(*p);
  if (!present(c, "empty")) problems.push_back("the empty directory was removed without recursive");
  try {
    remove(c, "empty", {}, true);
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    problems.push_back("remove empty (recursive) raised " + type_name(e) + " (" + e.what() + ")");
  }
  if (present(c, "empty")) problems.push_back("remove empty (recursive) left it in place");
  if (!problems.empty()) fail(join(problems));
}

void recursive_removes_tree(ProbeContext& c) {
  plant(c, "tree/leaf.txt");
  plant(c, "next-to-tree.txt");
  remove(c, "tree", {}, true);
  std::vector<std::string> problems;
  if (present(c, "tree/leaf.txt")) problems.push_back("tree/leaf.txt survived");
  if (present(c, "tree")) problems.push_back("tree survived");
  if (!present(c, "next-to-tree.txt")) problems.push_back("next-to-tree.txt was removed too");
  if (!problems.empty()) fail(join(problems));
}

void interior_link_unlinked(ProbeContext& c) {
  const auto target = c.paths.in_outside("interior-target.txt");
  c.subject.plant_file(target, "interior");
  plant(c, "linked-tree/leaf.txt");
  c.subject.plant_symlink(c.paths.in_work("linked-tree/inside-link"), target);
  remove(c, "linked-tree", {}, true);
  std::vector<std::string> problems;
  if (present(c, "linked-tree")) problems.push_back("linked-tree survived");
  if (!is_file(c, c.paths.beyond("interior-target.txt")))
    problems.push_back("the interior link's target outside was deleted (the link was followed)");
  if (!problems.empty()) fail(join(problems));
}

void working_directory_refused(ProbeContext& c) {
  plant(c, "ground.txt");
  std::vector<std::string> problems;
  for (bool recursive : {false, true}) {
    if (auto p = refusal_problem<ValueError>(std::string("remove .") + (recursive ? " (recursive)" : ""), kConfinement,
                                             [&] { remove(c, ".", {}, recursive); }))
      problems.push_back(*p);
  }
  if (!present(c, "ground.txt")) problems.push_back("ground.txt is gone (the working directory was removed)");
  if (!problems.empty()) fail(join(problems));
}

void outside_refused(ProbeContext& c) {
  const auto target = c.paths.in_outside("target.txt");
  c.subject.plant_file(target, "target");
  const auto path = c.paths.beyond("target.txt");
  std::vector<std::string> problems;
  for (bool recursive : {false, true}) {
    if (auto p = refusal_problem<ValueError>("remove " + path + (recursive ? " (recursive)" : ""), kConfinement,
                                             [&] { remove(c, path, {}, recursive); }))
      problems.push_back(*p);
  }
  if (!is_file(c, path)) problems.push_back("the target outside was deleted");
  if (!problems.empty()) fail(join(problems));
}

constexpr std::array<Probe, 10> kProbes{{
    {Suite::FilesDelete, "FD-1", "a-removal-removes",
     "positive control, and a removal must not take its neighbours", kDelete, removal_removes},
    {Suite::FilesDelete, "FD-2", "a-missing-path-is-success",
     "cleanup runs in finally blocks; a second removal raising breaks them", kDelete, missing_is_success},
    {Suite::FilesDelete, "FD-3", "a-link-is-removed-never-followed",
     "removing a guest-planted link must unlink it, not delete what it points at", kDelete, link_never_followed},
    {Suite::FilesDelete, "FD-4", "a-path-through-a-linked-parent-is-refused",
     "a linked parent redirects the removal outside the working directory", kDelete, linked_parent_refused},
    {Suite::FilesDelete, "FD-5", "a-directory-needs-recursive",
     "removing a whole tree must be asked for explicitly", kDelete, directory_needs_recursive},
    {Suite::FilesDelete, "FD-6", "an-empty-directory-needs-recursive",
     "an implicit rmdir makes the flag mean nothing; and recursive must then really remove it", kDelete,
     empty_directory_needs_recursive},
    {Suite::FilesDelete, "FD-7", "recursive-removes-the-tree",
     "recursive removes the named tree, not less and not the whole working directory", kDelete,
     recursive_removes_tree},
    {Suite::FilesDelete, "FD-8", "a-link-inside-a-recursive-removal-is-unlinked-not-followed",
     "a recursive walk that follows an interior link deletes outside the working directory", kDelete,
     interior_link_unlinked},
    {Suite::FilesDelete, "FD-9", "the-working-directory-is-refused",
     "'.' names the working directory itself", kDelete, working_directory_refused},
    {Suite::FilesDelete, "FD-10", "a-path-outside-is-refused",
     "a relative path that climbs out must be refused before anything is removed", kDelete, outside_refused},
}};

}  // namespace

std::span<const Probe> files_delete_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
