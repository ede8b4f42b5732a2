#pragma once
// The runner's second way to start a child (subprocess.cpp uses posix_spawnp otherwise): a
// vfork-style clone whose child joins cgroups between fork and exec (issue 55), so the
// program — and everything it starts — is inside them from its first instruction, with no
// helper process on the path. Private to the core.
#include <sys/types.h>

#include <string>
#include <vector>

namespace maf::sandbox::support::detail {

/// Everything the child needs, prepared by the parent: between clone and exec the child
/// makes system calls only (no allocation, no lock, no libc wrapper a sanitizer intercepts).
struct PreExecPlan {
  std::vector<std::string> argv;         ///< argv[0] searched in the parent's PATH when it has no '/'
  std::vector<std::string> environment;  ///< "K=V", exactly
  int stdin_fd = -1;                     ///< -1: /dev/null
  int stdout_fd = -1;
  int stderr_fd = -1;
  std::string cwd;                       ///< empty: the parent's
  std::vector<int> keep_fds;             ///< inherited under the same numbers
  std::vector<std::string> join_cgroup_procs;  ///< `cgroup.procs` files the child writes `0` into, in order
};

/// Starts the child (in a process group of its own, default signal dispositions, empty mask)
/// and returns its pid once it has exec'd. SubprocessSpawnError naming the program and, for
/// a cgroup it could not join, the file — then nothing of the program ran and the child is
/// reaped.
pid_t spawn_with_pre_exec(const PreExecPlan& plan);

}  // namespace maf::sandbox::support::detail
