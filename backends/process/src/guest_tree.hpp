#pragma once
// The host side of a process sandbox's filesystem: guest paths mapped onto the sandbox's
// private root directory (and read-only system binds), reached without following any link.
//
// Every walk goes through openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) from a directory
// descriptor, so a link the guest planted anywhere on the way is refused by the kernel, not
// by a check that could race. What remains racy is documented in docs/backends/process.md:
// between the NVI's ancestor walk and this call the guest can swap a *directory* for another
// directory; it cannot make the host follow a link.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/sandbox.hpp"

namespace maf::sandbox::process {

/// An unprivileged host uid/gid: the one a root host runs bubblewrap as, so the guest's
/// user namespace maps onto it, and so the owner of what the host side creates in the
/// guest's private root (the guest can then write there).
struct HostIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
};

/// A read-only bind as the guest sees it: `guest` (absolute) shows host `host`.
struct MountView {
  std::string guest;
  std::string host;
};

class GuestTree {
public:
  /// `root_dir`: the sandbox's private root on the host. `read_only`: binds over it.
  /// `virtual_dirs`: kernel filesystems (/proc, /dev) the host side never reaches into.
  /// `owner`: who owns what the host side creates; absent: the caller (see HostIdentity).
  GuestTree(std::string root_dir, std::vector<MountView> read_only, std::vector<std::string> virtual_dirs,
            std::optional<HostIdentity> owner = std::nullopt);

  std::optional<GuestStat> lstat(const std::string& guest_path) const;
  void write_file(const std::string& guest_path, std::string_view content) const;
  /// Reads at most `max_bytes + 1` bytes (so an over-cap file is detected, never truncated).
  std::string read_file(const std::string& guest_path, std::int64_t max_bytes) const;
  std::vector<GuestDirEntry> list_dir(const std::string& guest_path) const;
  void remove(const std::string& guest_path, bool recursive) const;
  /// mkdir -p of a directory in the private root, refusing links and non-directories.
  void ensure_directory(const std::string& guest_path) const;

  const std::string& root_dir() const noexcept { return root_dir_; }
  const std::optional<HostIdentity>& owner() const noexcept { return owner_; }

private:
  struct Located {
    std::string base;      // host directory the relative path is resolved beneath
    std::string relative;  // "" for the base itself
    bool writable = false;
    bool virtual_fs = false;
    bool mount_root = false;  // the guest path is exactly a bind's mount point
  };
  Located locate(const std::string& guest_path) const;

  std::string root_dir_;
  std::vector<MountView> read_only_;
  std::vector<std::string> virtual_dirs_;
  std::optional<HostIdentity> owner_;
};

/// Remove `path` (a directory tree) without following links; missing is fine.
void remove_host_tree(const std::string& path);

}  // namespace maf::sandbox::process
