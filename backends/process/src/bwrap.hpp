#pragma once
// The bubblewrap command line of a process sandbox, built in one place so every command —
// workload exec, run_code and the network probe — gets the same confinement.
#include <chrono>
#include <string>
#include <vector>

#include "guest_tree.hpp"
#include "maf/sandbox/process/process_backend.hpp"

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

/// argv for running `command` (argv form) inside the sandbox rooted at `root_dir`.
std::vector<std::string> bwrap_argv(const ProcessBackendConfig& config, const std::string& root_dir,
                                    const std::string& working_directory, const std::string& home,
                                    const std::vector<std::string>& command);

/// True when a confined child cannot connect to a listener on the host's loopback: the
/// network namespace is in force. Any failure to run the probe reads as false.
bool probe_network_namespace(const ProcessBackendConfig& config);

}  // namespace maf::sandbox::process
