#pragma once
// SNAPSHOT on the process backend: the guest's private root as it was when the sandbox was
// created (after acquire laid out its mount points and work base), kept beside it on the
// host, and copied back over the root on RESET (docs/backends/process.md "RESET").
//
// The snapshot lives at `<sandbox dir>/snapshot`, outside the guest's root, so no guest can
// see or change it; it was written by the host before any guest ran, so copying it back
// copies trusted content. The tree being replaced is the guest's: it is moved aside by one
// rename and removed with the same no-follow walk disposal uses.
#include <cstdint>
#include <string>

namespace maf::sandbox::process {

/// Copy the tree at host path `from` to `to` (which must not exist): directories, regular
/// files, links (as links, never followed) and FIFOs, with their permission bits, owners
/// (when this process may set them) and modification times. Anything else (a socket, a
/// device) is refused with OSError naming it: a snapshot of a fresh tree holds none.
void copy_host_tree(const std::string& from, const std::string& to);
/// The same for a tree a guest has used (Sandbox::snapshot, docs/snapshots.md SNAP-4):
/// sockets and devices — which a restore could not bring back alive — are left out instead of
/// refused. Returns the bytes of the regular files copied.
std::int64_t copy_guest_tree(const std::string& from, const std::string& to);

/// `<sandbox_dir>/snapshot` — where create() puts the copy of a fresh root.
std::string snapshot_dir(const std::string& sandbox_dir);

/// Take the snapshot of `<sandbox_dir>/root` (a fresh tree no guest has touched).
void take_snapshot(const std::string& sandbox_dir);

/// Replace `<sandbox_dir>/root` with a copy of the snapshot. The new tree is built in a
/// staging directory first and swapped in by rename, so a failure leaves the old root in
/// place; the caller has stopped the guest's processes. OSError when there is no snapshot
/// (a sandbox created before this backend kept one).
void restore_snapshot(const std::string& sandbox_dir);

/// The same from any host tree the host wrote (a snapshot taken later, docs/snapshots.md):
/// `<sandbox_dir>/root` replaced by a copy of `from_tree`, swapped in by rename.
void restore_tree(const std::string& sandbox_dir, const std::string& from_tree);

}  // namespace maf::sandbox::process
