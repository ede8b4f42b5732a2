#pragma once
// Host-wide locks between processes of one user (issue 54, docs/backends/docker.md "Replicas
// on one conversation"): a file per resource under a private directory, held with flock(2)
// — released by the kernel when its holder dies, so a live holder is never mistaken for a
// dead one on this host. The holder writes its pid into the file and unlinks it on release:
// a lock taken over a file that still names a holder says that holder died holding it.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace maf::sandbox::docker::detail {

class HostLock {
public:
  /// Takes the lock named `name` (any bytes: hashed into the file name) without waiting;
  /// nullopt while another open file description holds it. A directory or file that cannot
  /// be made or opened is an OSError naming its path.
  static std::optional<HostLock> try_take(const std::string& name);
  /// The same lock shared: any number of shared holders at once, none while it is held
  /// exclusively. A shared holder writes no record and unlinks nothing.
  static std::optional<HostLock> try_take_shared(const std::string& name);

  HostLock(HostLock&& other) noexcept;
  HostLock& operator=(HostLock&&) = delete;
  HostLock(const HostLock&) = delete;
  ~HostLock();

  /// The file named a holder when this lock was taken: that process died holding it.
  bool previous_holder_died() const noexcept { return previous_holder_died_; }
  const std::string& path() const noexcept { return path_; }
  /// Let go without unlinking: the file keeps naming this process, so the next taker reads
  /// it as a holder that died holding (a freeze whose unpause failed is left to recovery).
  void release_keeping_record() noexcept;

  /// The private directory the lock files live in (`/tmp/maf-sandbox-<euid>/locks`), made
  /// on first use and refused unless it is a real directory of this user's, mode 0700.
  static std::string directory();

private:
  HostLock(int fd, std::string path, bool died, bool shared)
      : fd_(fd), path_(std::move(path)), previous_holder_died_(died), shared_(shared) {}
  static std::optional<HostLock> take(const std::string& name, bool shared);
  int fd_ = -1;
  std::string path_;
  bool previous_holder_died_ = false;
  bool shared_ = false;
};

/// HostLock::try_take asked every few milliseconds until it is held; past `deadline` an
/// OSError saying `what` was not started because another process on this host held it.
boost::asio::awaitable<HostLock> wait_for_host_lock(std::string name, std::chrono::steady_clock::time_point deadline,
                                                    std::string what, bool shared = false);

}  // namespace maf::sandbox::docker::detail
