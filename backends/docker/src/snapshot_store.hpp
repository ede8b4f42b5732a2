#pragma once
// The Docker backend's snapshots (issue 49; docs/backends/docker.md "Snapshots and pause"):
// each the tar stream of the sandbox's work tree as the engine's archive endpoint gave it,
// held by this process in an unlinked temporary file — on disk, not in memory, and gone with
// the process whatever way it ends, so a killed host leaves nothing for reap to find.
// Kept per container name and container ID: a container recreated under the same name
// never sees the snapshots of the one it replaced. Pruned when the container goes (dispose,
// scope purge, reap, abandon, a ttl expiry: DockerMemory::forget), at expiry, and on release.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/snapshot.hpp"

namespace maf::sandbox::docker::detail {

/// What Docker snapshots keep (SNAP-3): the work tree — the storage base's files, modes,
/// links and owners — and no process. The rest of the container's writable layer is not
/// kept (the measured cost of a whole-filesystem copy: docs/backends/docker.md).
inline constexpr SnapshotFidelity kDockerSnapshotFidelity = SnapshotFidelity::WorkTree;

/// One kept work tree: its bytes, or `absent` when the storage base did not exist.
struct KeptTree {
  bool absent = false;
  std::string tar;
};

class DockerSnapshots {
public:
  void configure(std::uint64_t budget_bytes, std::chrono::seconds ttl);
  /// Bytes still free in the budget, all this process's snapshots counted, expired ones pruned.
  std::uint64_t room();
  std::uint64_t budget() const noexcept { return budget_; }
  /// Keep `tree` as a new snapshot of (`container`, `container_id`); SandboxSnapshotBudgetExceeded
  /// past the budget (nothing kept). With `reset`, it replaces the container's acquire-time
  /// snapshot (RESET) instead, and is not listed by held().
  SnapshotInfo keep(const std::string& container, const std::string& container_id, const KeptTree& tree,
                    bool reset = false);
  /// The kept tree of snapshot `id`; SandboxSnapshotNotFound when not held (or expired, or
  /// of another container ID).
  KeptTree tree_of(const std::string& container, const std::string& container_id, const std::string& id);
  /// The acquire-time tree, when one was kept for this container ID.
  std::optional<KeptTree> reset_tree(const std::string& container, const std::string& container_id);
  void release(const std::string& container, const std::string& container_id, const std::string& id);
  std::vector<SnapshotInfo> held(const std::string& container, const std::string& container_id);
  /// The container is gone: every snapshot of it goes too.
  void forget(const std::string& container);

private:
  struct Held {
    SnapshotInfo info;
    std::string container_id;
    bool absent = false;
    std::shared_ptr<std::FILE> file;  ///< tmpfile(): unlinked from the start
  };
  void prune_locked();
  std::uint64_t used_locked() const;
  KeptTree read_locked(const Held& h) const;

  std::mutex mutex_;
  std::uint64_t budget_ = std::uint64_t{1} << 30;
  std::chrono::seconds ttl_{24 * 3600};
  std::map<std::string, std::map<std::string, Held>> by_container_;  ///< name -> id -> held
};

}  // namespace maf::sandbox::docker::detail
