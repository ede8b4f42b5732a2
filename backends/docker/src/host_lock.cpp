// Host-wide locks between processes (host_lock.hpp).
#include "host_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/sleep.hpp"

namespace maf::sandbox::docker::detail {

namespace {

std::string errno_text() { return std::strerror(errno); }

void ensure_private_directory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw OSError("backend 'docker': cannot make the host lock directory '" + dir + "': " + errno_text());
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    throw OSError("backend 'docker': cannot stat the host lock directory '" + dir + "': " + errno_text());
  // Another user's directory (or a link to one) could hold our locks hostage or make us
  // write where they choose: refused, never used.
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    throw OSError("backend 'docker': the host lock directory '" + dir +
                  "' is not a directory of this user's with mode 0700; remove it or fix its owner and mode");
}

}  // namespace

std::string HostLock::directory() {
  const std::string top = "/tmp/maf-sandbox-" + std::to_string(::geteuid());
  ensure_private_directory(top);
  const std::string dir = top + "/locks";
  ensure_private_directory(dir);
  return dir;
}

std::optional<HostLock> HostLock::try_take(const std::string& name) { return take(name, false); }

std::optional<HostLock> HostLock::try_take_shared(const std::string& name) { return take(name, true); }

std::optional<HostLock> HostLock::take(const std::string& name, bool shared) {
  const std::string path = directory() + "/" + support::sha256_hex(name).substr(0, 32) + ".lock";
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw OSError("backend 'docker': cannot open the host lock '" + path + "': " + errno_text());
    if (::flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) return std::nullopt;
      errno = err;
      throw OSError("backend 'docker': cannot lock '" + path + "': " + errno_text());
    }
    // The holder before us unlinks the file before it lets go: a lock on a file no longer
    // at the path (or replaced) locks nothing anyone else will see; take the path's own.
    struct stat held {}, at_path {};
    if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &at_path) != 0 || held.st_ino != at_path.st_ino ||
        held.st_dev != at_path.st_dev) {
      ::close(fd);
      continue;
    }
    if (shared) return HostLock(fd, path, false, true);
    const bool died = held.st_size > 0;
    const std::string record = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
      const std::string why = errno_text();
      ::unlink(path.c_str());
      ::close(fd);
      throw OSError("backend 'docker': cannot write the host lock '" + path + "': " + why);
    }
    return HostLock(fd, path, died, false);
  }
}

boost::asio::awaitable<HostLock> wait_for_host_lock(std::string name, std::chrono::steady_clock::time_point deadline,
                                                    std::string what, bool shared) {
  for (;;) {
    if (auto lock = shared ? HostLock::try_take_shared(name) : HostLock::try_take(name)) co_return std::move(*lock);
    if (std::chrono::steady_clock::now() >= deadline)
      throw OSError("backend 'docker': another process on this host held the lock of " + what +
                    " until the wait's bound; it was not started");
    co_await support::sleep_for(std::chrono::milliseconds(5));
  }
}

HostLock::HostLock(HostLock&& other) noexcept
    : fd_(other.fd_),
      path_(std::move(other.path_)),
      previous_holder_died_(other.previous_holder_died_),
      shared_(other.shared_) {
  other.fd_ = -1;
}

void HostLock::release_keeping_record() noexcept {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
}

HostLock::~HostLock() {
  if (fd_ < 0) return;
  // Unlink first, then release: a waiter that opened this file finds it gone and retries.
  if (!shared_) {
    ::unlink(path_.c_str());
  } else if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    // The last shared holder removes the file it may have made — unless it names a holder
    // that died (the record a later taker must read).
    struct stat held {}, at_path {};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &at_path) == 0 && held.st_ino == at_path.st_ino &&
        held.st_dev == at_path.st_dev && held.st_size == 0)
      ::unlink(path_.c_str());
  }
  ::close(fd_);
}

}  // namespace maf::sandbox::docker::detail
