#pragma once
// The default bound on a process sandbox's processes and memory: one cgroup per sandbox
// (per controller), nested under the cgroup of the host process that first runs a command
// in it, so the host's own accounting still covers its guests. Detected at construction —
// cgroup v1 (`/sys/fs/cgroup/pids`, `/sys/fs/cgroup/memory`) or v2 (unified
// `/sys/fs/cgroup`) — and used only where this process may create cgroups; what cannot be
// bounded is logged once and documented (docs/backends/process.md "Resources").
#include <cstdint>
#include <string>
#include <vector>

namespace maf::sandbox::process {

class CgroupLimits {
public:
  /// Detects what this host lets the backend bound. 0 means "no limit" for that resource.
  static CgroupLimits detect(std::uint64_t pids_limit, std::uint64_t memory_limit_bytes);

  bool bounds_pids() const noexcept;
  bool bounds_memory() const noexcept;
  /// "pids (cgroup v1), memory (cgroup v1)" / "nothing", for logs and messages.
  std::string describe() const;

  /// Creates (idempotent) the cgroups named `name` under every usable controller and writes
  /// the limits; returns their directories. Throws OSError.
  std::vector<std::string> prepare(const std::string& name) const;
  /// The directories sandbox cgroups are made in, one per usable controller (for the
  /// inventory NL-1 compares: process_engine_inventory).
  std::vector<std::string> bases() const;

private:
  struct Controller {
    std::string resource;  // "pids" or "memory"
    std::string base;      // the directory sandbox cgroups are made in
    std::string limit_file;
    std::uint64_t limit = 0;
    bool v2 = false;
  };
  std::vector<Controller> controllers_;
};

/// The `cgroup.procs` files a command joins before it execs: one per directory.
std::vector<std::string> cgroup_procs_files(const std::vector<std::string>& dirs);

/// Kills every process in `dirs` and removes them (bounded retries while the killed
/// processes exit). Returns what could not be removed, for a warning; never throws.
std::vector<std::string> remove_cgroups(const std::vector<std::string>& dirs);

}  // namespace maf::sandbox::process
