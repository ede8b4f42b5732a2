#include "guest_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fd.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/paths.hpp"

namespace maf::sandbox::process {
namespace {

[[noreturn]] void fail(int err, const std::string& what, const std::string& guest_path) {
  const std::string detail = what + " '" + guest_path + "': " + std::strerror(err);
  switch (err) {
    case ELOOP:
    case EXDEV:
      throw ValueError("guest path '" + guest_path + "' passes through a symbolic link or leaves the sandbox; refusing (" +
                       what + ")");
    case ENOENT: throw FileNotFoundError(detail);
    case ENOTDIR: throw NotADirectoryError(detail);
    case EISDIR: throw IsADirectoryError(detail);
    case EACCES:
    case EPERM:
    case EROFS: throw PermissionError(detail);
    default: throw OSError(detail);
  }
}

/// openat2 beneath `dirfd`, never following a link (magic links included).
int open_beneath(int dirfd, const std::string& relative, std::uint64_t flags, mode_t mode = 0) {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const char* p = relative.empty() ? "." : relative.c_str();
  return static_cast<int>(::syscall(SYS_openat2, dirfd, p, &how, sizeof how));
}

Fd open_dir(const std::string& path) {
  Fd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw OSError("cannot open sandbox directory '" + path + "': " + std::strerror(errno));
  return fd;
}

GuestStat to_stat(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return {EntryKind::File, static_cast<std::int64_t>(st.st_size)};
  if (S_ISDIR(st.st_mode)) return {EntryKind::Directory, static_cast<std::int64_t>(st.st_size)};
  if (S_ISLNK(st.st_mode)) return {EntryKind::Symlink, std::nullopt};
  return {EntryKind::Other, std::nullopt};
}

std::pair<std::string, std::string> split_parent(const std::string& relative) {
  const auto slash = relative.rfind('/');
  if (slash == std::string::npos) return {"", relative};
  return {relative.substr(0, slash), relative.substr(slash + 1)};
}

void remove_at(int parent_fd, const std::string& name, const std::string& guest_path) {
  struct stat st {};
  if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return;
    fail(errno, "stat", guest_path);
  }
  if (S_ISDIR(st.st_mode)) {
    Fd dir(::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) fail(errno, "open directory", guest_path);
    DIR* stream = ::fdopendir(dir.release());
    if (!stream) fail(errno, "list directory", guest_path);
    std::vector<std::string> children;
    while (dirent* e = ::readdir(stream)) {
      const std::string child = e->d_name;
      if (child != "." && child != "..") children.push_back(child);
    }
    const int fd = ::dirfd(stream);
    for (const auto& child : children) remove_at(fd, child, guest_path + "/" + child);
    ::closedir(stream);
    if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) fail(errno, "remove", guest_path);
  } else if (::unlinkat(parent_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
    fail(errno, "remove", guest_path);
  }
}

}  // namespace

GuestTree::GuestTree(std::string root_dir, std::vector<MountView> read_only, std::vector<std::string> virtual_dirs,
                     std::optional<HostIdentity> owner)
    : root_dir_(std::move(root_dir)),
      read_only_(std::move(read_only)),
      virtual_dirs_(std::move(virtual_dirs)),
      owner_(owner) {}

GuestTree::Located GuestTree::locate(const std::string& guest_path) const {
  const std::string p = normalize_guest_path(guest_path);
  if (p.empty() || p[0] != '/') throw ValueError("guest path '" + guest_path + "' is not absolute");
  for (const auto& v : virtual_dirs_) {
    if (auto rel = guest_path_relative_to(p, v)) return Located{"", *rel, false, true, rel->empty()};
  }
  for (const auto& m : read_only_) {
    if (auto rel = guest_path_relative_to(p, m.guest)) return Located{m.host, *rel, false, false, rel->empty()};
  }
  return Located{root_dir_, p == "/" ? std::string() : p.substr(1), true, false, p == "/"};
}

std::optional<GuestStat> GuestTree::lstat(const std::string& guest_path) const {
  const Located at = locate(guest_path);
  if (at.virtual_fs) {
    if (at.mount_root) return GuestStat{EntryKind::Directory, std::nullopt};
    throw OSError("guest path '" + guest_path + "' lies in a kernel filesystem the host side does not reach");
  }
  struct stat st {};
  if (at.mount_root && !at.writable) {
    // A bind's mount point shows its source, which the mount resolved once.
    if (::stat(at.base.c_str(), &st) != 0) return std::nullopt;
    return to_stat(st);
  }
  Fd base = open_dir(at.base);
  if (at.relative.empty()) {
    if (::fstat(base.get(), &st) != 0) fail(errno, "stat", guest_path);
    return to_stat(st);
  }
  const auto [parent, leaf] = split_parent(at.relative);
  Fd dir(open_beneath(base.get(), parent, O_PATH | O_DIRECTORY));
  if (!dir) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    fail(errno, "stat", guest_path);
  }
  if (::fstatat(dir.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::nullopt;
    fail(errno, "stat", guest_path);
  }
  return to_stat(st);
}

void GuestTree::ensure_directory(const std::string& guest_path) const {
  const Located at = locate(guest_path);
  if (!at.writable) throw PermissionError("guest directory '" + guest_path + "' is on a read-only mount");
  Fd cur(::open(at.base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!cur) fail(errno, "open sandbox root", guest_path);
  std::string walked;
  std::size_t i = 0;
  const std::string& rel = at.relative;
  while (i < rel.size()) {
    std::size_t j = rel.find('/', i);
    if (j == std::string::npos) j = rel.size();
    const std::string comp = rel.substr(i, j - i);
    walked += "/" + comp;
    i = j + 1;
    if (comp.empty()) continue;
    const bool created = ::mkdirat(cur.get(), comp.c_str(), 0755) == 0;
    if (!created && errno != EEXIST) fail(errno, "create directory", walked);
    Fd next(::openat(cur.get(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      if (errno == ELOOP || errno == ENOTDIR) {
        struct stat st {};
        if (::fstatat(cur.get(), comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
          throw ValueError("guest path component '" + walked + "' is a symbolic link; refusing to follow it");
        throw NotADirectoryError("guest path component '" + walked + "' is not a directory");
      }
      fail(errno, "open directory", walked);
    }
    // Through the descriptor just opened, never the name: a swapped-in link is not followed.
    if (created && owner_ && ::fchown(next.get(), owner_->uid, owner_->gid) != 0) fail(errno, "chown", walked);
    cur = std::move(next);
  }
}

void GuestTree::write_file(const std::string& guest_path, std::string_view content) const {
  const Located at = locate(guest_path);
  if (!at.writable) throw PermissionError("guest path '" + guest_path + "' is on a read-only mount");
  const auto [parent, leaf] = split_parent(at.relative);
  if (leaf.empty()) throw ValueError("guest path '" + guest_path + "' names no file");
  ensure_directory(guest_dirname(normalize_guest_path(guest_path)));
  Fd base = open_dir(at.base);
  Fd dir(open_beneath(base.get(), parent, O_PATH | O_DIRECTORY));
  if (!dir) fail(errno, "open parent of", guest_path);
  // O_NOFOLLOW: a link swapped in at the leaf since the NVI's check fails with ELOOP.
  Fd file(::openat(dir.get(), leaf.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!file) fail(errno, "write", guest_path);
  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw OSError("guest path '" + guest_path + "' is not a regular file; refusing to write");
  if (owner_ && ::fchown(file.get(), owner_->uid, owner_->gid) != 0) fail(errno, "chown", guest_path);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(file.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno, "write", guest_path);
    }
    done += static_cast<std::size_t>(n);
  }
}

std::string GuestTree::read_file(const std::string& guest_path, std::int64_t max_bytes) const {
  const Located at = locate(guest_path);
  if (at.virtual_fs) throw OSError("guest path '" + guest_path + "' lies in a kernel filesystem the host side does not read");
  Fd file;
  if (at.mount_root && !at.writable) {
    file = Fd(::open(at.base.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  } else {
    Fd base = open_dir(at.base);
    // O_NONBLOCK so a FIFO swapped in cannot hang the host; S_ISREG is checked below.
    file = Fd(open_beneath(base.get(), at.relative, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  }
  if (!file) fail(errno, "read", guest_path);
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) fail(errno, "stat", guest_path);
  if (!S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw IsADirectoryError("guest path '" + guest_path + "' is a directory");
    throw OSError("guest path '" + guest_path + "' is not a regular file");
  }
  std::string out;
  const std::size_t limit = static_cast<std::size_t>(max_bytes) + 1;
  char buf[65536];
  while (out.size() < limit) {
    const std::size_t want = std::min(sizeof buf, limit - out.size());
    const ssize_t n = ::read(file.get(), buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno, "read", guest_path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::vector<GuestDirEntry> GuestTree::list_dir(const std::string& guest_path) const {
  const Located at = locate(guest_path);
  if (at.virtual_fs) throw OSError("guest path '" + guest_path + "' lies in a kernel filesystem the host side does not list");
  Fd base = open_dir(at.base);
  Fd dir(open_beneath(base.get(), at.relative, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  if (!dir) fail(errno, "list", guest_path);
  const int fd = dir.get();
  DIR* stream = ::fdopendir(::dup(fd));
  if (!stream) fail(errno, "list", guest_path);
  std::vector<GuestDirEntry> out;
  while (dirent* e = ::readdir(stream)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // vanished meanwhile
    out.push_back(GuestDirEntry{name, to_stat(st)});
  }
  ::closedir(stream);
  return out;
}

void GuestTree::remove(const std::string& guest_path, bool recursive) const {
  const Located at = locate(guest_path);
  if (!at.writable || at.relative.empty())
    throw PermissionError("guest path '" + guest_path + "' is on a read-only mount or is the root");
  const auto [parent, leaf] = split_parent(at.relative);
  Fd base = open_dir(at.base);
  Fd dir(open_beneath(base.get(), parent, O_RDONLY | O_DIRECTORY));
  if (!dir) {
    if (errno == ENOENT) return;
    fail(errno, "open parent of", guest_path);
  }
  struct stat st {};
  if (::fstatat(dir.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return;
    fail(errno, "stat", guest_path);
  }
  if (S_ISDIR(st.st_mode) && !recursive)
    throw OSError("guest path '" + guest_path + "' is a directory; pass recursive=true to remove it");
  remove_at(dir.get(), leaf, guest_path);
}

void remove_host_tree(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  const std::string leaf = path.substr(slash + 1);
  Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    if (errno == ENOENT) return;
    throw OSError("cannot open '" + parent + "': " + std::strerror(errno));
  }
  remove_at(dir.get(), leaf, path);
}

}  // namespace maf::sandbox::process
