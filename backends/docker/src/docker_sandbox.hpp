#pragma once
// One acquired Docker container as a maf::sandbox::Sandbox (D-12…D-23). The public
// Sandbox methods (sandbox.hpp) already confined the path and walk the ancestors through
// do_lstat; this class supplies the tar-plane stat, read and write, exec and remove, and
// holds the freeze around every tar-plane operation.

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "freeze.hpp"
#include "memory.hpp"
#include "snapshot_store.hpp"
#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/transport.hpp"
#include "maf/sandbox/live_egress.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/support/tar.hpp"

namespace maf::sandbox::docker::detail {

/// The tar header of one guest path, unconfined and no-follow (only the final component is
/// described; the engine resolves the rest daemon-side, hence the ancestor walk). Absent
/// when the engine says nothing is there. Retries once with a 64 KiB prefix on need.
boost::asio::awaitable<std::optional<support::TarEntry>> tar_stat(DockerTransport& transport,
                                                                  const std::string& container,
                                                                  const std::string& path);

/// Kind (and a file's size) of one guest path, no-follow like tar_stat: the transport's
/// body-less stat where it has one (the Engine API's HEAD, ~1 ms against ~100 ms for a tar
/// stream), the tar plane otherwise and for every answer the stat cannot classify, absence
/// included — except a body-less 404 that `container_id` (when given) shows to be the
/// path's: that container still being there settles it as absent. Absent when nothing is there.
boost::asio::awaitable<std::optional<GuestStat>> probe(DockerTransport& transport, const std::string& container,
                                                       const std::string& container_id, const std::string& path);

struct DockerSandboxParts {
  std::shared_ptr<DockerTransport> transport;
  std::shared_ptr<FreezeSlot> freeze;
  std::string container;
  std::string kind;
  std::string container_id;
  std::string storage_base;
  CapabilitySet capabilities;
  long long uid = 0;
  long long gid = 0;
  bool cap_drop_all = false;
  std::size_t max_exec_output_bytes = 0;
  std::chrono::milliseconds command_timeout{60'000};
  /// The spec bounds memory: each exec is followed by a read of the container's own memory
  /// cgroup's oom_kill counter, so a kill by the bound is reported (docs/limits.md LIM-6).
  bool watch_oom_kills = false;
  /// For do_abandon (EXE-2): the backend's one teardown plan needs the configuration (the
  /// proxy's drain) and the key (its attribution).
  std::shared_ptr<const DockerConfig> config;
  SandboxKey key;
  /// The backend's memory (memory.hpp): the work directory's walk is recorded there as the
  /// image's when `fresh_image` is set, and an abandoned container is forgotten.
  std::shared_ptr<DockerMemory> memory;
  /// The image ID when the acquire that made this sandbox created its container, else empty.
  std::string fresh_image;
  /// EGU-8: why this sandbox cannot change its egress live; empty when it can (behind a
  /// proxy with the control channel, brokering no credential).
  std::string live_egress_refusal = "it runs behind no egress proxy";
  /// The backend's observers: an applied update is a NetworkDecisionEvent POLICY-UPDATED.
  std::shared_ptr<ObserverHub> hub;
  /// SNAPSHOT is declared (config `snapshots`): the acquire-time work tree is kept for RESET
  /// when the storage base is prepared (docker_snapshots.cpp).
  bool keeps_reset_tree = false;
};

class DockerSandbox final : public Sandbox, public LiveEgress {
public:
  explicit DockerSandbox(DockerSandboxParts parts);

  const std::string& container_name() const noexcept { return p_.container; }
  /// The unconfined, no-follow tar-header stat, unfrozen: for tests that pin the engine's
  /// daemon-side resolution (DX-6's premise). Not part of the Sandbox contract.
  boost::asio::awaitable<std::optional<GuestStat>> unconfined_stat_for_testing(std::string absolute_path);

  // LiveEgress (live_egress.cpp): the update goes to the proxy's control channel.
  std::optional<std::string> live_egress_refusal() const override;
  boost::asio::awaitable<EgressUpdateReport> apply_egress(SandboxSpec spec) override;

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override;
  boost::asio::awaitable<void> do_abandon() override;
  boost::asio::awaitable<StreamOutcome> do_exec_stream(const ExecRequest& request, ExecOutputSink& sink) override;
  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_write_file(const std::string& absolute_path, const std::string& content) override;
  boost::asio::awaitable<std::string> do_read_file(const std::string& absolute_path, std::int64_t max_bytes) override;
  boost::asio::awaitable<std::vector<GuestDirEntry>> do_list_dir(const std::string& absolute_path) override;
  boost::asio::awaitable<void> do_remove(const std::string& absolute_path, bool recursive) override;
  boost::asio::awaitable<void> do_file_operation(FileOperation operation,
                                                 std::function<boost::asio::awaitable<void>()> body) override;
  boost::asio::awaitable<bool> do_file_batch(std::function<boost::asio::awaitable<void>()> body) override;
  /// ACQ-4 (work_dir.hpp prepare_storage_base): a complete walk is recorded; a missing
  /// suffix is made under the freeze, after a re-walk from the top.
  boost::asio::awaitable<void> do_prepare_storage_base(const StorageBaseWalk& walk) override;
  // Snapshots and pause (issue 49; docker_snapshots.cpp, docs/backends/docker.md "Snapshots
  // and pause"): the work tree through the tar plane, the pause through the freeze.
  boost::asio::awaitable<SnapshotInfo> do_snapshot() override;
  boost::asio::awaitable<void> do_restore(const std::string& snapshot_id, std::chrono::milliseconds timeout,
                                          std::chrono::steady_clock::time_point deadline) override;
  boost::asio::awaitable<void> do_release_snapshot(const std::string& snapshot_id) override;
  boost::asio::awaitable<std::vector<SnapshotInfo>> do_snapshots() override;
  boost::asio::awaitable<void> do_reset(std::chrono::milliseconds timeout,
                                        std::chrono::steady_clock::time_point deadline) override;
  boost::asio::awaitable<void> do_pause() override;
  boost::asio::awaitable<void> do_resume() override;

public:
  /// Fork (DockerSandboxBackend::do_fork): the tree snapshot `id` of this sandbox kept;
  /// SandboxSnapshotNotFound when it holds none by that id.
  KeptTree kept_tree(const std::string& id);
  /// Make the work tree exactly `tree`: every guest process stopped, the base removed, the
  /// tree put back under the freeze (restore, reset, a fork's start).
  boost::asio::awaitable<void> put_work_tree(const KeptTree& tree, std::chrono::steady_clock::time_point deadline);
  /// Keep the work tree as it is now as this sandbox's RESET tree (after the base is ready).
  boost::asio::awaitable<void> keep_reset_tree();

private:
  /// The work tree's tar stream, read under the freeze, at most `room` bytes (else the budget
  /// refusal names the sizes).
  boost::asio::awaitable<KeptTree> read_work_tree(std::uint64_t room);
  /// The container's oom_kill counter as its own cgroup files tell it (v1
  /// memory.oom_control, v2 memory.events); absent when neither answers.
  boost::asio::awaitable<std::optional<std::uint64_t>> oom_kills();
  /// LIM-6 around one command: the counter's baseline before it, what it gained after.
  boost::asio::awaitable<void> oom_baseline();
  boost::asio::awaitable<void> oom_after(ResourceBoundSet& limits_hit);
  /// A command that ended 137 (or "is not running") may mean the container was stopped
  /// under it: OSError when it was, after a bounded settle (see do_exec).
  boost::asio::awaitable<void> refuse_lost_container(int exit_code, bool not_running_text);
  /// Stop a streamed program in the guest (its whole group; guest_stream.hpp) before the
  /// stream's ending is reported; OSError when something of it survives in a live container.
  boost::asio::awaitable<void> stop_streamed(const std::string& token, const std::optional<std::string>& pgid);

  DockerSandboxParts p_;
  std::mutex oom_mutex_;
  std::optional<std::uint64_t> oom_seen_;  ///< the counter after this object's last exec
};

}  // namespace maf::sandbox::docker::detail
