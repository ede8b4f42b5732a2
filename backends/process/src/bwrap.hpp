#pragma once
// The bubblewrap command line of a process sandbox, built in one place so every command —
// workload exec, run_code and the network probe — gets the same confinement.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "guest_tree.hpp"
#include "host_boundary.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/support/subprocess.hpp"

namespace maf::sandbox::process {

/// The /etc files a guest sees (read-only): enough for names, libc and TLS roots, nothing
/// secret (no shadow, no host keys).
const std::vector<std::string>& guest_etc_files();

/// Read-only views every guest gets: /usr, the /etc files that exist, extra binds.
std::vector<MountView> guest_read_only_views(const ProcessBackendConfig& config);

/// Kernel filesystems mounted fresh in every guest.
std::vector<std::string> guest_virtual_dirs();

/// Creates the mount points and /bin, /lib… links in a fresh private root.
void prepare_guest_root(const GuestTree& tree, const ProcessBackendConfig& config);

/// The kernel interfaces under /proc that the guest sees read-only, and those masked
/// (files by /dev/null, directories by an empty tmpfs) — where the host kernel has them.
const std::vector<std::string>& proc_read_only_paths();
const std::vector<std::string>& proc_masked_paths();

/// bubblewrap's /proc options closing the paths above that this kernel has (stat'ed here,
/// once per backend: Boundary::proc_closure).
std::vector<std::string> proc_closure_args();

/// One command's bubblewrap invocation: its argv and the descriptors it reads (the seccomp
/// program), which this object owns and closes when the run is over.
class Launch {
public:
  /// `command` (argv form) inside the sandbox rooted at `root_dir`, started inside the
  /// cgroups whose `cgroup.procs` files `join_cgroups` names (none: the caller's cgroups),
  /// with `environment` added to or overriding the guest's base environment (ENV-4: through
  /// bubblewrap's `--args` descriptor, never on any command line and never in the
  /// environment of the host-side programs — sh, setpriv, bwrap — that start the guest).
  Launch(const ProcessBackendConfig& config, const Boundary& boundary, const std::string& root_dir,
         const std::string& working_directory, const std::string& home, const std::vector<std::string>& command,
         const std::vector<std::string>& join_cgroups = {},
         const std::map<std::string, std::string>& environment = {});
  ~Launch();
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  std::vector<std::string> argv;
  std::vector<int> keep_fds;
};

/// What a Launch's cgroup step prints (then exit 125) when it cannot join a cgroup.
inline constexpr std::string_view kCgroupJoinFailure = "maf-sandbox-cgroup: ";

/// Runs `command` confined in a throwaway tree under the temp directory (the backend's own
/// construction-time probes). Throws what run_subprocess throws.
support::SubprocessResult run_in_scratch(const ProcessBackendConfig& config, const Boundary& boundary,
                                         const std::vector<std::string>& command);

/// True when a confined child cannot connect to a listener on the host's loopback: the
/// network namespace is in force. Any failure to run the probe reads as false.
bool probe_network_namespace(const ProcessBackendConfig& config, const Boundary& boundary);

}  // namespace maf::sandbox::process
