#pragma once
// The bubblewrap command line of a process sandbox, built in one place so every command —
// workload exec, run_code and the network probe — gets the same confinement.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "guest_tree.hpp"
#include "host_boundary.hpp"
#include "maf/sandbox/egress_proxy/launch.hpp"
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

/// An ALLOWLIST sandbox's way out, as its commands see it (docs/backends/process.md
/// "Egress"): the relay binary and the proxy's unix socket (host paths, bound read-only at
/// kGuestRelay and kGuestProxySocket), and — when the proxy terminates TLS — the sandbox
/// CA and the bundle holding it (host paths, bound read-only at kGuestCaFile/kGuestCaBundle).
struct GuestEgress {
  std::string relay;
  std::string socket;
  std::string ca_file{};    ///< empty: no termination
  std::string ca_bundle{};
  /// Brokered credentials' placeholder variables (name, placeholder): not secret — the
  /// proxy swaps them for the values only toward their bound hosts (CRED-6).
  std::vector<std::pair<std::string, std::string>> env{};
};

/// Where the guest finds its egress pieces, and the loopback port the relay listens on.
inline constexpr const char* kGuestRelay = "/run/maf-sandbox/egress-relay";
inline constexpr const char* kGuestProxySocket = "/run/maf-sandbox/egress.sock";
using egress_proxy::kGuestCaBundle;  // egress_proxy/launch.hpp: the paths every backend uses
using egress_proxy::kGuestCaFile;
inline constexpr int kGuestProxyPort = 3128;

/// Makes the mount points of GuestEgress's binds in a fresh private root (bubblewrap could
/// not create them under the root-owned /etc of a root host's guest).
void prepare_guest_egress_points(const GuestTree& tree);

/// The variables every command of an egress sandbox gets: HTTP_PROXY, HTTPS_PROXY and
/// their lower-case twins naming the relay, NO_PROXY/no_proxy empty; with a CA, also
/// SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO (the bundle) and
/// NODE_EXTRA_CA_CERTS (the CA alone), as the Docker backend sets them.
std::vector<std::pair<std::string, std::string>> guest_egress_env(const GuestEgress& egress);

/// One command's bubblewrap invocation: its argv and the descriptors it reads (the seccomp
/// program), which this object owns and closes when the run is over.
class Launch {
public:
  /// `command` (argv form) inside the sandbox rooted at `root_dir`, started inside the
  /// cgroups whose `cgroup.procs` files `join_cgroups` names (none: the caller's cgroups);
  /// with `egress`, behind the relay to its proxy; with `environment` added to or overriding
  /// the guest's base environment (ENV-4: through bubblewrap's `--args` descriptor, never on
  /// any command line and never in the environment of the host-side programs — setpriv,
  /// bwrap — that start the guest).
  Launch(const ProcessBackendConfig& config, const Boundary& boundary, const std::string& root_dir,
         const std::string& working_directory, const std::string& home, const std::vector<std::string>& command,
         const std::vector<std::string>& join_cgroups = {}, const GuestEgress* egress = nullptr,
         const std::map<std::string, std::string>& environment = {});
  ~Launch();
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  std::vector<std::string> argv;
  std::vector<int> keep_fds;
  /// The `cgroup.procs` files the runner's child joins before it execs `argv`
  /// (support::SubprocessOptions::join_cgroup_procs).
  std::vector<std::string> cgroup_procs;
};

/// Runs `command` confined in a throwaway tree under the temp directory (the backend's own
/// construction-time probes). Throws what run_subprocess throws.
support::SubprocessResult run_in_scratch(const ProcessBackendConfig& config, const Boundary& boundary,
                                         const std::vector<std::string>& command,
                                         const GuestEgress* egress = nullptr);

/// True when a confined child cannot connect to a listener on the host's loopback: the
/// network namespace is in force. Any failure to run the probe reads as false.
bool probe_network_namespace(const ProcessBackendConfig& config, const Boundary& boundary);

}  // namespace maf::sandbox::process
