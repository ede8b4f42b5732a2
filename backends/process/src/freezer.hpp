#pragma once
// PAUSE on the process backend (docs/snapshots.md SNAP-9): every guest process of a sandbox
// frozen through a cgroup freezer, detected at construction — the v1 `freezer` hierarchy
// (`freezer.state`) or a v2 cgroup's `cgroup.freeze`; where neither can be made and written,
// PAUSE is not declared.
//
// A sandbox's guests are found as disposal finds them (their root is the sandbox's private
// root) and moved into the sandbox's freezer cgroup, which is then frozen; the scan repeats
// until every guest is inside, so a process forked during the move is caught too (a child of
// a process already inside is born inside). The cgroup is recorded in `<sandbox_dir>/freezer`
// so whichever process disposes of the sandbox thaws and removes it (release_freezer).
#include <filesystem>
#include <optional>
#include <string>

namespace maf::sandbox::process {

class Freezer {
public:
  /// Probes `cgroup_root`: v1 `<root>/freezer` under this process's own freezer cgroup, else a
  /// pure v2 tree (`<root>/cgroup.controllers`) under its own v2 cgroup. A probe cgroup is made,
  /// frozen, thawed and removed; absent when any step fails (`why` says which).
  static std::optional<Freezer> detect(const std::filesystem::path& cgroup_root, std::string* why = nullptr);

  /// "freezer (cgroup v1)" / "cgroup.freeze (cgroup v2)", for facts and messages.
  std::string describe() const;

  /// Freeze every guest process of the sandbox at `sandbox_dir` (root `<sandbox_dir>/root`).
  /// Throws OSError naming the file that refused.
  void freeze(const std::string& sandbox_dir) const;
  /// Thaw what freeze() froze (nothing recorded: nothing to do).
  void thaw(const std::string& sandbox_dir) const;

private:
  bool v2_ = false;
  std::string base_;  // the directory sandbox freezer cgroups are made in
};

/// Thaw and remove the freezer cgroup recorded in `sandbox_dir` (disposal, after its guests
/// were sent SIGKILL: a v1-frozen process dies only once thawed). Never throws.
void release_freezer(const std::filesystem::path& sandbox_dir) noexcept;

}  // namespace maf::sandbox::process
