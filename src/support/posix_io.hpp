#pragma once
// The POSIX pieces under the child-process runner (subprocess.cpp): an owned descriptor,
// close-on-exec pipes, the child's environment block, and a write that cannot raise SIGPIPE
// in the host. Private to the core.
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "maf/sandbox/support/subprocess.hpp"

namespace maf::sandbox::support::detail {

/// An owned descriptor; closes on destruction unless released to an asio object.
class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

private:
  int fd_ = -1;
};

struct PipeEnds {
  UniqueFd read, write;
};

/// "'argv0'", as the runner's messages name a program.
std::string describe(const std::vector<std::string>& argv);

/// A close-on-exec pipe; SubprocessSpawnError naming the program when none can be made.
PipeEnds make_pipe(const std::vector<std::string>& argv);

void set_nonblocking(int fd);

/// The environment block the child gets, as owned "K=V" strings.
std::vector<std::string> build_environment(EnvMode mode, const std::map<std::string, std::string>& env);

/// argv/envp pointers into `strings`, null-terminated; valid while `strings` is unchanged.
std::vector<char*> pointers(std::vector<std::string>& strings);

/// write(2) without letting a reader-less pipe raise SIGPIPE in the host: the signal is
/// blocked in this thread for the call and, if the write raised it, consumed — unless one
/// was already pending, which belongs to someone else.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size);

}  // namespace maf::sandbox::support::detail
