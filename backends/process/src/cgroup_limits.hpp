#pragma once
// The bounds on a process sandbox's processes, memory and CPU: one cgroup per sandbox (per
// controller), nested under the cgroup of the host process that first runs a command in it,
// so the host's own accounting still covers its guests. Detected and probed at construction
// — cgroup v1 (`/sys/fs/cgroup/{pids,memory,cpu}`) or v2 (unified `/sys/fs/cgroup`) — and used
// only where this process may create cgroups and write their limits; what cannot be bounded
// is not declared (docs/limits.md LIM-3) and is logged once (docs/backends/process.md
// "Resources").
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "maf/sandbox/resource_limits.hpp"

namespace maf::sandbox::process {

class CgroupLimits {
public:
  /// Detects what this host lets the backend bound: each controller's base is created and a
  /// probe cgroup made in it, its limit file written and removed again. The defaults are the
  /// configuration's; 0 means "no default bound" (a spec may still ask one).
  static CgroupLimits detect(const std::filesystem::path& cgroup_root, std::uint64_t pids_limit,
                             std::uint64_t memory_limit_bytes);

  /// The bounds the detected tree can enforce (what the backend declares).
  ResourceBoundSet enforceable() const noexcept;
  /// "pids (cgroup v1), memory (cgroup v1), cpu (cgroup v1)" / "nothing", for logs and messages.
  std::string describe() const;
  /// One line per controller that cannot be used, with why ("cpu: cannot write cpu.max").
  const std::vector<std::string>& unusable() const noexcept { return unusable_; }

  /// Creates (idempotent) the cgroups named `name` under every usable controller and writes
  /// the limits — the spec's where it asks one, else the configuration's (LIM-5: spec over
  /// config) — and returns their directories. Throws OSError naming the file.
  std::vector<std::string> prepare(const std::string& name, const ResourceLimits& asked) const;
  /// The directories sandbox cgroups are made in, one per usable controller (for the
  /// inventory NL-1 compares: process_engine_inventory).
  std::vector<std::string> bases() const;

private:
  struct Controller {
    std::string resource;  // "pids", "memory" or "cpu"
    std::string base;      // the directory sandbox cgroups are made in
    std::uint64_t default_limit = 0;
    bool v2 = false;
  };
  /// The (file, value) writes that set `c`'s bound in one cgroup.
  std::vector<std::pair<std::string, std::string>> limit_writes(const Controller& c, const ResourceLimits& asked) const;
  std::vector<Controller> controllers_;
  std::vector<std::string> unusable_;
};

/// What the kernel counted in a sandbox's cgroups (LIM-6): processes killed by the memory
/// bound (v1 `memory.oom_control` oom_kill, v2 `memory.events` oom_kill) and forks refused at
/// the process bound (`pids.events` max). Missing files count 0.
struct CgroupEvents {
  std::uint64_t oom_kills = 0;
  std::uint64_t fork_refusals = 0;
  friend bool operator==(const CgroupEvents&, const CgroupEvents&) = default;
};
CgroupEvents read_cgroup_events(const std::vector<std::string>& dirs);

/// One counter file of LIM-6 and the key read in it.
struct CgroupEventFile {
  std::string path;
  std::string key;
  bool oom = false;  ///< counts memory kills (else refused forks)
};
/// The counter files that exist in `dirs` (worked out once per sandbox: issue 55), and
/// what they count now — each file one open and one read.
std::vector<CgroupEventFile> cgroup_event_files(const std::vector<std::string>& dirs);
CgroupEvents read_cgroup_events(const std::vector<CgroupEventFile>& files);

/// This process's cgroup path for a v1 controller, or for v2 ("" controller); "" when absent.
std::string own_cgroup(const std::string& controller);

/// The `cgroup.procs` files a command joins before it execs: one per directory.
std::vector<std::string> cgroup_procs_files(const std::vector<std::string>& dirs);

/// Kills every process in `dirs` and removes them (bounded retries while the killed
/// processes exit). Returns what could not be removed, for a warning; never throws.
std::vector<std::string> remove_cgroups(const std::vector<std::string>& dirs);

}  // namespace maf::sandbox::process
