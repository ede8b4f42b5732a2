#include "guest_snapshot.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "fd.hpp"
#include "guest_tree.hpp"
#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::process {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw OSError(said(what + " '" + path + "': " + std::strerror(errno)));
}

/// Owner, mode and times of the entry just created at `name` in `dir` (links: owner and
/// times only — Linux has no mode on a link). Owners only as root: elsewhere every entry
/// already belongs to the one user this process runs as.
void copy_attributes(int dir, const std::string& name, const struct stat& st, const std::string& shown) {
  const bool link = S_ISLNK(st.st_mode);
  if (::geteuid() == 0 && ::fchownat(dir, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) != 0)
    fail("cannot set the owner of", shown);
  if (!link && ::fchmodat(dir, name.c_str(), st.st_mode & 07777, 0) != 0) fail("cannot set the mode of", shown);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  if (::utimensat(dir, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) fail("cannot set the times of", shown);
}

void copy_file_contents(int from_dir, int to_dir, const std::string& name, const std::string& shown) {
  Fd in(::openat(from_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!in) fail("cannot open", shown);
  Fd out(::openat(to_dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out) fail("cannot create", shown);
  // The kernel copies (and shares extents where the filesystem can reflink); a filesystem
  // that cannot, or a pair it cannot copy between, falls back to read/write below.
  // Measured on ext4 (docs/snapshots.md "Choosing the copy"): 100 MiB in ~75 ms.
  for (;;) {
    const ssize_t n = ::copy_file_range(in.get(), nullptr, out.get(), nullptr, std::size_t{1} << 30, 0);
    if (n == 0) return;
    if (n < 0) {
      if (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) break;
      fail("cannot copy", shown);
    }
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0) fail("cannot read", shown);
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.get(), buf + done, static_cast<std::size_t>(n - done));
      if (w < 0) fail("cannot write", shown);
      done += w;
    }
  }
}

/// Copy the children of `from_dir` into `to_dir`, depth first. A directory's own mode is set
/// after its children, so a read-only (0555) directory is still filled.
void copy_children(int from_dir, int to_dir, const std::string& shown, std::int64_t* bytes) {
  Fd listing(::openat(from_dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!listing) fail("cannot list", shown);
  DIR* stream = ::fdopendir(listing.release());
  if (!stream) fail("cannot list", shown);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(stream)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(stream);
  for (const auto& name : names) {
    const std::string path = shown + "/" + name;
    struct stat st {};
    if (::fstatat(from_dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) fail("cannot stat", path);
    if (S_ISDIR(st.st_mode)) {
      if (::mkdirat(to_dir, name.c_str(), 0700) != 0) fail("cannot create", path);
      Fd sub_from(::openat(from_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      Fd sub_to(::openat(to_dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub_from || !sub_to) fail("cannot open", path);
      copy_children(sub_from.get(), sub_to.get(), path, bytes);
    } else if (S_ISREG(st.st_mode)) {
      copy_file_contents(from_dir, to_dir, name, path);
      if (bytes) *bytes += st.st_size;
    } else if (S_ISLNK(st.st_mode)) {
      std::vector<char> target(static_cast<std::size_t>(st.st_size) + 1);
      const ssize_t n = ::readlinkat(from_dir, name.c_str(), target.data(), target.size());
      if (n < 0 || static_cast<std::size_t>(n) >= target.size()) fail("cannot read the link", path);
      if (::symlinkat(std::string(target.data(), static_cast<std::size_t>(n)).c_str(), to_dir, name.c_str()) != 0)
        fail("cannot create the link", path);
    } else if (S_ISFIFO(st.st_mode)) {
      if (::mkfifoat(to_dir, name.c_str(), 0600) != 0) fail("cannot create the FIFO", path);
    } else if (bytes) {
      continue;  // a used tree's socket or device: not kept (copy_guest_tree)
    } else {
      throw OSError(said("'") + path + "' is neither a directory, a file, a link nor a FIFO; "
                    "a snapshot does not copy sockets or devices");
    }
    copy_attributes(to_dir, name, st, path);
  }
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) out += digits[rng() % 16];
  return out;
}

std::int64_t copy_tree(const std::string& from, const std::string& to, std::int64_t* bytes) {
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0) fail("cannot stat", from);
  if (!S_ISDIR(st.st_mode)) throw OSError(said("'") + from + "' is not a directory to copy");
  if (::mkdir(to.c_str(), 0700) != 0) fail("cannot create", to);
  Fd from_dir(::open(from.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  Fd to_dir(::open(to.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!from_dir || !to_dir) fail("cannot open", from_dir ? to : from);
  copy_children(from_dir.get(), to_dir.get(), from, bytes);
  // The top directory's own attributes, through its parent like every other entry.
  const auto slash = to.rfind('/');
  const std::string parent = slash == 0 ? "/" : to.substr(0, slash);
  Fd parent_dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent_dir) fail("cannot open", parent);
  copy_attributes(parent_dir.get(), to.substr(slash + 1), st, to);
  return bytes ? *bytes : 0;
}

}  // namespace

void copy_host_tree(const std::string& from, const std::string& to) { (void)copy_tree(from, to, nullptr); }

std::int64_t copy_guest_tree(const std::string& from, const std::string& to) {
  std::int64_t bytes = 0;
  return copy_tree(from, to, &bytes);
}

std::string snapshot_dir(const std::string& sandbox_dir) { return sandbox_dir + "/snapshot"; }

void take_snapshot(const std::string& sandbox_dir) { copy_host_tree(sandbox_dir + "/root", snapshot_dir(sandbox_dir)); }

void restore_snapshot(const std::string& sandbox_dir) {
  const std::string snapshot = snapshot_dir(sandbox_dir);
  struct stat st {};
  if (::lstat(snapshot.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw OSError(said("sandbox '") + sandbox_dir +
                  "' has no snapshot to reset to (it was created before the backend kept one); dispose it instead");
  restore_tree(sandbox_dir, snapshot);
}

void restore_tree(const std::string& sandbox_dir, const std::string& snapshot) {
  const std::string root = sandbox_dir + "/root";
  const std::string staging = sandbox_dir + "/.reset-" + random_suffix();
  const std::string old = sandbox_dir + "/.replaced-" + random_suffix();
  try {
    copy_host_tree(snapshot, staging);
  } catch (...) {
    remove_host_tree(staging);
    throw;
  }
  // Two renames, not one exchange: the window between them has no root at all, so a command
  // started in it fails to start instead of running in a half-restored tree.
  if (::rename(root.c_str(), old.c_str()) != 0) {
    const int err = errno;
    remove_host_tree(staging);
    errno = err;
    fail("cannot move the guest root aside in", sandbox_dir);
  }
  if (::rename(staging.c_str(), root.c_str()) != 0) {
    const int err = errno;
    (void)::rename(old.c_str(), root.c_str());
    remove_host_tree(staging);
    errno = err;
    fail("cannot put the restored root in place in", sandbox_dir);
  }
  remove_host_tree(old);
}

}  // namespace maf::sandbox::process
