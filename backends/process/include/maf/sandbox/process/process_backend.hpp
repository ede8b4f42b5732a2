#pragma once
/// @file process/process_backend.hpp
/// The process backend (`maf-sandbox-process`): the embedded default that needs no engine.
///
/// Each sandbox is a private directory on the host that becomes the guest's root; each
/// command runs as a child confined with bubblewrap: private mount, pid, ipc, uts, cgroup
/// and network namespaces, a user namespace mapping the guest onto an unprivileged *host*
/// uid (when the host is root, bubblewrap itself runs as `host_uid`, so the guest is never
/// host root), `/usr` and a few `/etc` files read-only, `/proc/sys` and the other kernel
/// tunables read-only, `/proc/kcore` and the like masked, a seccomp filter, no capabilities,
/// `--die-with-parent`. The host's home, `/root`, `/tmp` and the engine sockets are simply
/// not in the guest's tree.
///
/// A host that cannot give all of that (no unprivileged user namespaces, no seccomp) gets
/// SandboxBoundaryUnavailable at construction, never a weaker boundary under the same name.
///
/// Declarations, honest and tested (docs/backends/process.md):
///  - isolation `os_process`: a shared kernel, whatever namespaces, seccomp and the default
///    cgroup bounds on processes and memory add;
///  - egress `{closed}` only when a probe at construction shows a confined child cannot
///    reach a listener on the host's loopback; otherwise no mode at all, so the router refuses
///    closed-egress specs instead of running them open; `allowlist` besides only when a
///    second probe shows a confined child reaching an allowed listener through a real
///    egress proxy and refused a denied one (the proxy runs on the host, one per sandbox);
///  - capabilities EXEC, FILES_IN, FILES_OUT, FILES_LIST, FILES_DELETE, plus RUN_CODE when an
///    interpreter is configured; os_families `{posix}`; isolation scopes {conversation, call}.
///
/// State lives on disk under `root` (one directory per sandbox with a `meta.json`), so
/// `dispose_scope` and `reap` from a second process find sandboxes the first created.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/pool.hpp"

namespace maf::sandbox::process {


/// A host path bound read-only into every guest.
struct ReadOnlyBind {
  std::string host;
  std::string guest;
};

/// The default `root`: one directory per host user, `/var/tmp/maf-sandbox-process-<euid>`,
/// so users never share (or squat on) each other's state.
std::filesystem::path default_process_root();

struct ProcessBackendConfig {
  /// Where sandboxes live on the host. Shared by every process of this user that should see
  /// them. Must be owned by this user and not writable by group or others.
  std::filesystem::path root = default_process_root();
  std::string bwrap_path = "bwrap";
  /// util-linux's setpriv: how a root host drops to `host_uid` before bubblewrap starts.
  std::string setpriv_path = "setpriv";
  /// The unprivileged host identity guests map onto when the host is root (ignored
  /// otherwise: then they map onto the caller's own uid). The default is above every range
  /// Debian, systemd (dynamic users, nspawn containers) and subuid allocation hand out, so
  /// no account or service shares it; `nobody` is not used because NFS and daemons do.
  unsigned host_uid = 2000000000;
  unsigned host_gid = 2000000000;
  /// Extra read-only binds (e.g. a toolchain under /opt).
  std::vector<ReadOnlyBind> extra_ro_binds{};
  /// argv of the run_code interpreter; the program arrives on stdin (e.g. {"python3", "-"}).
  /// Empty: RUN_CODE is not declared.
  std::vector<std::string> run_code_interpreter{};
  /// Bound on the backend's own commands (the network probe); exec/run_code use the
  /// caller's timeout.
  std::chrono::milliseconds internal_timeout{std::chrono::seconds(20)};
  /// Output caps per exec stream; past a cap the command is killed and the call refused
  /// with SandboxTransferCapExceeded.
  std::size_t max_stdout_bytes = std::size_t{16} << 20;
  std::size_t max_stderr_bytes = std::size_t{4} << 20;
  /// The guest's uid/gid inside its user namespace.
  unsigned guest_uid = 1000;
  unsigned guest_gid = 1000;

  /// Default bound on each sandbox's processes (its cgroup's pids.max; Docker's default
  /// too) and memory (memory.max / memory.limit_in_bytes), applied wherever this host lets
  /// the backend create cgroups (docs/backends/process.md "Resources"). 0: no limit.
  std::uint64_t pids_limit = 512;
  std::uint64_t memory_limit_bytes = std::uint64_t{1} << 30;
  /// Bounds (memory, cpus, processes) the host requires this backend to enforce: when the
  /// detected cgroup tree cannot, construction throws SandboxBoundaryUnavailable naming the
  /// controllers and why (docs/limits.md LIM-8). Empty: declare what the tree allows.
  ResourceBoundSet required_resource_bounds{};
  /// Where the cgroup tree is mounted; a test points it elsewhere to show an unusable tree.
  std::filesystem::path cgroup_root = "/sys/fs/cgroup";
  /// TEST-ONLY broken double of the LIMITS suite: memory, cpus and processes are declared
  /// but a spec's bounds are not applied (only the defaults above). Never set it outside a test.
  bool test_only_unapplied_resource_bounds = false;

  /// TEST-ONLY broken double: when true, the host boundary is not built (no drop from
  /// root, /proc as mounted, no seccomp) while the declarations stay the same — so the
  /// HOST_INTEGRITY probes can be shown to fail. Refused at construction unless
  /// `test_only_allow_unsafe` is also true. Never set it outside a test.
  bool test_only_without_host_boundary = false;
  bool test_only_allow_unsafe = false;

  /// ALLOWLIST egress (docs/backends/process.md "Egress", issue 47): the proxy and the
  /// guest-side relay programs. Empty: found beside the plugin (installed there) or in a
  /// build tree's `bin/` next to its `plugins/`.
  std::string egress_proxy_path{};
  std::string egress_relay_path{};
  /// Extra arguments for every sandbox's proxy, e.g. `--resolve host=ip` pins (the proxy
  /// refuses non-global addresses unless pinned).
  std::vector<std::string> egress_proxy_args{};
  /// The trust store (PEM file) a proxy verifies terminated hosts' upstreams against
  /// (method/path rules); unset: the host's Debian bundle.
  std::optional<std::string> egress_upstream_ca_file{};
  /// SNAP-7 (docs/snapshots.md): the most bytes one sandbox's snapshots may hold together;
  /// a snapshot that would pass it is refused (SandboxSnapshotBudgetExceeded), nothing kept.
  std::uint64_t snapshot_budget_bytes = std::uint64_t{1} << 30;
  /// SNAP-6: how long a snapshot stays restorable from the moment it was taken.
  std::chrono::seconds snapshot_ttl{std::chrono::hours(24)};
  /// TEST-ONLY broken double of the SNAPSHOT suite, SNAPSHOT still declared: restore puts
  /// back nothing (it only stops the guest's processes), release keeps the snapshot, and
  /// fork hands back its parent — so each SN probe can be shown to fail. Never set it
  /// outside a test.
  bool test_only_broken_snapshots = false;
  /// Warm pools (docs/pools.md): each filled at construction, refilled in the background
  /// after a claim, drained when the backend goes. A spec the backend cannot serve is refused
  /// at construction (ValueError naming the pool's kind).
  std::vector<PoolConfig> pools{};
  /// TEST-ONLY broken double of the POOL suite: a claim hands the pooled directory out in
  /// place (no move, no new record), so a later claim gets it again — each PL probe can be
  /// shown to fail. Never set it outside a test.
  bool test_only_broken_pools = false;
};

/// Parses the plugin's JSON configuration; unknown keys and wrong types are refused with
/// ValueError naming the key. Keys: root, bwrap_path, extra_ro_binds ([{host, guest}]),
/// run_code_interpreter ([argv]), internal_timeout_seconds, max_stdout_bytes,
/// max_stderr_bytes, guest_uid, guest_gid, setpriv_path, host_uid, host_gid, pids_limit,
/// memory_limit_bytes, required_resource_bounds, cgroup_root, test_only_unapplied_resource_bounds,
/// test_only_without_host_boundary, test_only_allow_unsafe, egress_proxy_path,
/// egress_relay_path, egress_proxy_args ([string]), egress_upstream_ca_file.
/// test_only_without_host_boundary, test_only_allow_unsafe, snapshot_budget_bytes,
/// snapshot_ttl_seconds, test_only_broken_snapshots, pools ([{spec, size, refill,
/// max_age_seconds}], spec as in a spec file).
ProcessBackendConfig parse_process_config(const nlohmann::json& config);

/// What sandboxes of `config` leave on this host, one line per item: `state:<entry>` for
/// every entry of `root` (sandbox directories, and the `.staging-`/`.trash-` directories an
/// interrupted acquire or disposal leaves) and `cgroup:<dir>` for every sandbox cgroup under
/// this process's `maf-sandbox-process` parents. The engine-side fingerprint of the
/// conformance suite's NL-1 (assert_nothing_left_behind): equal before and after a call that
/// acquired and disposed means nothing was left behind. Sorted; never follows a link.
std::vector<std::string> process_engine_inventory(const ProcessBackendConfig& config);

/// Builds the backend: checks `root` (SandboxStateRootUnusable: cannot be created, not a
/// directory, not owned by this user, writable by others, or — host root — not searchable
/// by `host_uid`), establishes the host boundary (SandboxBoundaryUnavailable) and probes the network namespace (a local bwrap run).
std::shared_ptr<SandboxBackend> make_process_backend(ProcessBackendConfig config = {});

}  // namespace maf::sandbox::process
