#pragma once
// Snapshots a process sandbox holds (docs/snapshots.md SNAP-4…SNAP-8): each a copy of the
// guest's private root at `<sandbox_dir>/snapshots/<id>/tree` with a `meta.json` beside it
// (when it was taken, when it expires, its bytes). Inside the sandbox's own directory, so
// the sandbox's disposal, its conversation's purge and reap remove them with it — no
// snapshot outlives its sandbox — and outside the guest's root, so no guest sees or changes
// one. The fidelity is `filesystem`: the private root is everything the guest can write
// (the system directories are read-only binds), and no process is kept.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "maf/sandbox/snapshot.hpp"

namespace maf::sandbox::process {

/// What the process backend's snapshots keep (SNAP-3): the whole writable tree, no process.
inline constexpr SnapshotFidelity kProcessSnapshotFidelity = SnapshotFidelity::Filesystem;

/// The snapshots held in `sandbox_dir`, after removing those past their expiry (SNAP-6).
std::vector<SnapshotInfo> held_snapshots(const std::filesystem::path& sandbox_dir);

/// `<sandbox_dir>/snapshots/<id>/tree` of a held, unexpired snapshot; SandboxSnapshotNotFound
/// otherwise (an id that is not one this backend made is refused the same way).
std::filesystem::path snapshot_tree(const std::filesystem::path& sandbox_dir, const std::string& id);

/// Take a snapshot of `<sandbox_dir>/root` within `budget_bytes` for all snapshots held
/// together (SandboxSnapshotBudgetExceeded past it, nothing kept), restorable for `ttl`.
SnapshotInfo take_guest_snapshot(const std::filesystem::path& sandbox_dir, std::uint64_t budget_bytes,
                                 std::chrono::seconds ttl);

/// Remove one snapshot; SandboxSnapshotNotFound when it is not held.
void release_guest_snapshot(const std::filesystem::path& sandbox_dir, const std::string& id);

}  // namespace maf::sandbox::process
