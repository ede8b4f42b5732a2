#pragma once
// What the host boundary of a process sandbox is made of, established (and verified by a
// confined run) once at construction: docs/backends/process.md "The boundary".
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cgroup_limits.hpp"
#include "freezer.hpp"
#include "fd.hpp"
#include "guest_tree.hpp"
#include "maf/sandbox/process/process_backend.hpp"

namespace maf::sandbox::process {

/// What the host boundary is made of, established once at construction
/// (docs/backends/process.md "The boundary").
struct Boundary {
  /// False only for the test-only double (`test_only_without_host_boundary`).
  bool enforced = true;
  /// Set when the host is root: bubblewrap runs as this unprivileged identity, so the guest
  /// never maps onto host uid 0; the guest tree is owned by it. Unset: the caller's own uid.
  std::optional<HostIdentity> run_as;
  /// The compiled seccomp program (empty iff !enforced).
  std::string seccomp_program;
  /// The default bounds on processes and memory this host allows (set by the backend).
  CgroupLimits cgroups;

  // What every command's bubblewrap line shares, worked out once here rather than per
  // command (issue 55): the read-only binds that exist, the /proc closure this kernel
  // needs, and the seccomp program in a sealed memfd each command reopens read-only.
  std::vector<MountView> views;
  std::vector<std::string> proc_closure;
  std::shared_ptr<const Fd> sealed_seccomp;
  /// PAUSE (docs/snapshots.md SNAP-9): the freezer detected at construction; absent, PAUSE
  /// is not declared.
  std::optional<Freezer> freezer;
};

/// Builds the boundary for this host and proves it with one confined run: the guest's uid
/// maps onto no host uid 0 and its seccomp mode is "filter". Throws
/// SandboxBoundaryUnavailable naming what is missing; ValueError for the test-only double
/// without its unsafe flag.
Boundary establish_boundary(const ProcessBackendConfig& config);

/// Creates `config.root` if needed and checks it can hold sandboxes for this user and, when
/// the host is root, be reached by the identity bubblewrap runs as. Throws SandboxStateRootUnusable.
void check_root(const ProcessBackendConfig& config, const Boundary& boundary);

}  // namespace maf::sandbox::process
