// The POSIX pieces under the child-process runner (posix_io.hpp).
#include "support/posix_io.hpp"

#include <fcntl.h>
#include <signal.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "maf/sandbox/errors.hpp"

extern char** environ;

namespace maf::sandbox::support::detail {

std::string describe(const std::vector<std::string>& argv) { return "'" + argv.front() + "'"; }

PipeEnds make_pipe(const std::vector<std::string>& argv) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    const int e = errno;
    throw SubprocessSpawnError("subprocess " + describe(argv) + ": pipe2 failed: " + std::strerror(e), e);
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::vector<std::string> build_environment(EnvMode mode, const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  if (mode == EnvMode::inherit) {
    for (char** e = environ; e && *e; ++e) {
      std::string_view entry(*e);
      const auto eq = entry.find('=');
      const std::string name(entry.substr(0, eq));
      if (!env.count(name)) out.emplace_back(entry);
    }
  }
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_only, old_mask, pending;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
  sigpending(&pending);
  const bool already_pending = sigismember(&pending, SIGPIPE) == 1;
  const ssize_t n = ::write(fd, data, size);
  const int saved = errno;
  if (n < 0 && saved == EPIPE && !already_pending) {
    const timespec zero{};
    while (sigtimedwait(&pipe_only, nullptr, &zero) == -1 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = saved;
  return n;
}

}  // namespace maf::sandbox::support::detail
