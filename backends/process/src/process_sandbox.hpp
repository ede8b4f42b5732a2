#pragma once
// One process sandbox: a private root on the host, commands run in it under bubblewrap.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bwrap.hpp"
#include "guest_tree.hpp"
#include "host_boundary.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/support/subprocess.hpp"

namespace maf::sandbox::process {

class ProcessSandbox final : public Sandbox {
public:
  ProcessSandbox(std::shared_ptr<const ProcessBackendConfig> config, std::shared_ptr<const Boundary> boundary,
                 std::string kind, CapabilitySet capabilities,
                 std::string storage_base, std::string instance_id, std::string sandbox_dir,
                 ResourceLimits resources = {}, std::optional<GuestEgress> egress = std::nullopt);

  const std::string& sandbox_dir() const noexcept { return sandbox_dir_; }
  const GuestTree& tree() const noexcept { return tree_; }
  /// Set for an ALLOWLIST sandbox: every command runs behind the relay to its proxy.
  const std::optional<GuestEgress>& egress() const noexcept { return egress_; }
  /// SNAP-8: copy snapshot `id`'s tree to host path `to` (a fork's new root), under this
  /// sandbox's snapshot lock; SandboxSnapshotNotFound when it is not held (snapshots.cpp).
  void copy_snapshot_to(const std::string& id, const std::string& to);

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override;
  /// STR-2: the bubblewrap process group is killed on every ending but the program's own exit.
  boost::asio::awaitable<StreamOutcome> do_exec_stream(const ExecRequest& request, ExecOutputSink& sink) override;
  boost::asio::awaitable<ExecReport> do_run_code(const std::string& code, std::chrono::milliseconds timeout,
                                                 std::chrono::steady_clock::time_point deadline) override;
  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_write_file(const std::string& absolute_path, const std::string& content) override;
  boost::asio::awaitable<std::string> do_read_file(const std::string& absolute_path, std::int64_t max_bytes) override;
  boost::asio::awaitable<std::vector<GuestDirEntry>> do_list_dir(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_remove(const std::string& absolute_path, bool recursive) override;
  /// ACQ-4: the base's missing components, made through the guest tree (no-follow, as the
  /// guest's principal), on every acquire that finds them missing — warm reuse included.
  boost::asio::awaitable<void> do_prepare_storage_base(const StorageBaseWalk& walk) override;
  /// RESET: stop every guest process of this sandbox, then put the creation-time snapshot
  /// back in place of the guest's root (guest_snapshot.hpp).
  boost::asio::awaitable<void> do_reset(std::chrono::milliseconds timeout,
                                        std::chrono::steady_clock::time_point deadline) override;

  /// Snapshots at `<sandbox_dir>/snapshots/<id>/` and pause through the cgroup freezer
  /// (docs/snapshots.md; defined in snapshots.cpp).
  boost::asio::awaitable<SnapshotInfo> do_snapshot() override;
  boost::asio::awaitable<void> do_restore(const std::string& snapshot_id, std::chrono::milliseconds timeout,
                                          std::chrono::steady_clock::time_point deadline) override;
  boost::asio::awaitable<void> do_release_snapshot(const std::string& snapshot_id) override;
  boost::asio::awaitable<std::vector<SnapshotInfo>> do_snapshots() override;
  boost::asio::awaitable<void> do_pause() override;
  boost::asio::awaitable<void> do_resume() override;

private:
  /// One command's launch under bubblewrap, prepared; what its run is judged against.
  /// The cgroups this sandbox's commands run in, made and recorded once per sandbox object
  /// (issue 55: not per command), and the files a command's run is judged by.
  struct Joined {
    std::vector<std::string> dirs;
    std::vector<std::string> procs_files;   ///< each dir's cgroup.procs
    std::vector<CgroupEventFile> event_files;  ///< the LIM-6 counters these controllers keep
  };
  struct Confined {
    std::unique_ptr<const Launch> launch;  ///< owns the descriptors `options.keep_fds` names
    support::SubprocessOptions options;
    std::shared_ptr<const Joined> cgroups;
    CgroupEvents before;
    /// LIM-6: the bounds the kernel counted this run reaching.
    ResourceBoundSet limits_hit() const;
  };
  static std::vector<std::string> guest_argv(const ExecRequest& request);
  Confined prepare_confined(const std::vector<std::string>& command, const std::string& working_directory,
                            std::optional<std::string> stdin_bytes, std::chrono::steady_clock::time_point deadline,
                            const std::map<std::string, std::string>& environment = {});
  /// OSError for bubblewrap's own set-up failures, which are not the program's status (C-39).
  void refuse_setup_failure(int exit_code, const std::string& stderr_head) const;
  boost::asio::awaitable<ExecReport> run_confined(std::vector<std::string> command, std::string working_directory,
                                                  std::optional<std::string> stdin_bytes,
                                                  std::chrono::steady_clock::time_point deadline,
                                                  std::map<std::string, std::string> environment = {});

  /// The cgroups a command of this sandbox runs in (created on first use, recorded).
  std::shared_ptr<const Joined> join_cgroups();

  std::shared_ptr<const ProcessBackendConfig> config_;
  std::shared_ptr<const Boundary> boundary_;
  std::string sandbox_dir_;
  /// The bounds the sandbox was created with (docs/limits.md LIM-5: part of its identity).
  ResourceLimits resources_;
  GuestTree tree_;
  std::optional<GuestEgress> egress_;
  std::mutex reset_mutex_;  ///< one restore at a time per sandbox object
  std::mutex join_mutex_;
  std::shared_ptr<const Joined> joined_;  ///< set by the first command (join_cgroups)
};

/// The cgroups a sandbox's commands ran in, recorded in `<sandbox_dir>/cgroups` so whichever
/// process disposes of it (a replica, `maf-sandbox dispose-scope`) removes them.
void record_cgroups(const std::string& sandbox_dir, const std::vector<std::string>& dirs);
std::vector<std::string> recorded_cgroups(const std::string& sandbox_dir);

/// Records "now" as the sandbox's last use (`<sandbox_dir>/last_used`'s mtime), which the
/// idle timeout is measured from (docs/limits.md LIM-7).
void touch_last_used(const std::string& sandbox_dir);

/// SIGKILL every process whose root directory is `root_dir` (the guests of one sandbox,
/// whichever host process started them). Returns how many were signalled.
int kill_guest_processes(const std::string& root_dir);

}  // namespace maf::sandbox::process
