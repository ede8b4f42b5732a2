#pragma once
/// @file process/process_backend.hpp
/// The process backend (`maf-sandbox-process`): the embedded default that needs no engine.
///
/// Each sandbox is a private directory on the host that becomes the guest's root; each
/// command runs as a child confined with bubblewrap: private mount, pid, ipc, uts, cgroup
/// and network namespaces, a user namespace mapping the guest to an unprivileged uid, `/usr`
/// and a few `/etc` files read-only, no capabilities, `--die-with-parent`. The host's home,
/// `/root`, `/tmp` and the docker socket are simply not in the guest's tree.
///
/// Declarations, honest and tested (docs/backends/process.md):
///  - isolation `os_process`: a shared kernel and no cgroup limits, whatever namespaces add;
///  - egress `{closed}` only when a probe at construction shows a confined child cannot
///    reach a listener on the host's loopback; otherwise no mode at all, so the router refuses
///    closed-egress specs instead of running them open;
///  - capabilities EXEC, FILES_IN, FILES_OUT, FILES_LIST, FILES_DELETE, plus RUN_CODE when an
///    interpreter is configured; os_families `{posix}`; isolation scopes {conversation, call}.
///
/// State lives on disk under `root` (one directory per sandbox with a `meta.json`), so
/// `dispose_scope` and `reap` from a second process find sandboxes the first created.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "maf/sandbox/backend.hpp"

namespace maf::sandbox::process {

/// A host path bound read-only into every guest.
struct ReadOnlyBind {
  std::string host;
  std::string guest;
};

struct ProcessBackendConfig {
  /// Where sandboxes live on the host. Shared by every process that should see them.
  std::filesystem::path root = "/var/tmp/maf-sandbox-process";
  std::string bwrap_path = "bwrap";
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
};

/// Parses the plugin's JSON configuration; unknown keys and wrong types are refused with
/// ValueError naming the key. Keys: root, bwrap_path, extra_ro_binds ([{host, guest}]),
/// run_code_interpreter ([argv]), internal_timeout_seconds, max_stdout_bytes,
/// max_stderr_bytes, guest_uid, guest_gid.
ProcessBackendConfig process_config_from_json(const nlohmann::json& config);

/// Builds the backend; probes the network namespace now (a local bwrap run, no engine).
std::shared_ptr<SandboxBackend> make_process_backend(ProcessBackendConfig config = {});

}  // namespace maf::sandbox::process
