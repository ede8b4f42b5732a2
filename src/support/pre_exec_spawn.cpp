// The pre-exec spawn (pre_exec_spawn.hpp). Built as glibc builds posix_spawn: a clone that
// shares the parent's memory and suspends it (CLONE_VM | CLONE_VFORK) until the child execs
// or exits, on a stack of its own, with every signal blocked in the parent across the clone
// so no handler of the host ever runs in the child. The child's steps are raw system calls:
// a libc wrapper may take a lock the parent held, and a sanitizer's interceptor may touch
// state the parent owns.
#include "support/pre_exec_spawn.hpp"

#include "maf/sandbox/support/subprocess.hpp"
#include "support/posix_io.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace maf::sandbox::support::detail {
namespace {

enum Step : int { kNone = 0, kCgroup, kStdio, kCwd, kExec };

/// What the child reads (prepared by the parent) and writes back (shared memory; the parent
/// reads it only after the child has exec'd or exited).
struct ChildArgs {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  const char* cwd = nullptr;
  const int* keep = nullptr;
  std::size_t keep_count = 0;
  const int* cgroups = nullptr;
  std::size_t cgroup_count = 0;
  volatile int failed_step = kNone;
  volatile int error = 0;
  volatile std::size_t failed_index = 0;
};

/// The kernel's own sigaction layout (rt_sigaction), for SIG_DFL: zeroes are enough.
struct KernelSigaction {
  void* handler;
  unsigned long flags;
  void* restorer;
  unsigned long mask;
};

[[noreturn]] __attribute__((no_sanitize("address", "thread", "undefined"))) void child_fail(ChildArgs& a, int step,
                                                                                           std::size_t index) {
  a.error = errno;
  a.failed_index = index;
  a.failed_step = step;
  ::syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

__attribute__((no_sanitize("address", "thread", "undefined"))) bool move_fd(int from, int to) {
  if (from == to) return ::syscall(SYS_fcntl, to, F_SETFD, 0) == 0;
  return ::syscall(SYS_dup3, from, to, 0) == to;
}

__attribute__((no_sanitize("address", "thread", "undefined"))) int child_main(void* arg) {
  ChildArgs& a = *static_cast<ChildArgs*>(arg);
  // Default dispositions for every signal (the host's handlers and ignores do not survive).
  const KernelSigaction dfl{};
  for (int s = 1; s < 65; ++s)
    if (s != SIGKILL && s != SIGSTOP) ::syscall(SYS_rt_sigaction, s, &dfl, nullptr, sizeof(unsigned long));
  ::syscall(SYS_setpgid, 0, 0);  // a group of its own: a stop reaches what it starts
  // Cgroups first, while the child is still the host's identity and before it opens anything.
  for (std::size_t i = 0; i < a.cgroup_count; ++i)
    if (::syscall(SYS_write, a.cgroups[i], "0", 1) != 1) child_fail(a, kCgroup, i);
  int in = a.stdin_fd;
  if (in < 0) {
    in = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC));
    if (in < 0) child_fail(a, kStdio, 0);
  }
  if (!move_fd(in, STDIN_FILENO) || !move_fd(a.stdout_fd, STDOUT_FILENO) || !move_fd(a.stderr_fd, STDERR_FILENO))
    child_fail(a, kStdio, 0);
  if (a.cwd && ::syscall(SYS_chdir, a.cwd) != 0) child_fail(a, kCwd, 0);
  for (std::size_t i = 0; i < a.keep_count; ++i)
    if (::syscall(SYS_fcntl, a.keep[i], F_SETFD, 0) != 0) child_fail(a, kStdio, 0);
  const unsigned long none = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof none);
  ::syscall(SYS_execve, a.path, a.argv, a.envp);
  child_fail(a, kExec, 0);
}

/// argv[0] as posix_spawnp finds it: searched in the *parent's* PATH when it has no '/'.
std::string resolve(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* env = std::getenv("PATH");
  const std::string path = env ? env : "/bin:/usr/bin";
  for (std::size_t start = 0;;) {
    const std::size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) return {};
    start = end + 1;
  }
}

/// A stack for the child, freed when the clone has returned (the child has exec'd or exited).
class ChildStack {
public:
  static constexpr std::size_t kSize = 64 * 1024;
  ChildStack() : base_(::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0)) {}
  ~ChildStack() {
    if (base_ != MAP_FAILED) ::munmap(base_, kSize);
  }
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  bool ok() const { return base_ != MAP_FAILED; }
  void* top() const { return static_cast<char*>(base_) + kSize; }

private:
  void* base_;
};

}  // namespace

pid_t spawn_with_pre_exec(const PreExecPlan& plan) {
  const std::string who = "subprocess " + describe(plan.argv);
  // Opened here, so a missing or closed file is named before anything starts.
  std::vector<UniqueFd> cgroup_files;
  std::vector<int> cgroup_fds;
  for (const std::string& file : plan.join_cgroup_procs) {
    UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
    if (fd.get() < 0) {
      const int e = errno;
      throw SubprocessSpawnError(who + " could not join the cgroup of '" + file + "': " + std::strerror(e), e);
    }
    cgroup_fds.push_back(fd.get());
    cgroup_files.push_back(std::move(fd));
  }
  const std::string path = resolve(plan.argv.at(0));
  if (path.empty()) throw SubprocessSpawnError(who + " could not be started: " + std::strerror(ENOENT), ENOENT);
  std::vector<std::string> argv_storage = plan.argv;
  std::vector<std::string> env_storage = plan.environment;
  const auto argv = pointers(argv_storage);
  const auto envp = pointers(env_storage);

  ChildArgs a;
  a.path = path.c_str();
  a.argv = argv.data();
  a.envp = envp.data();
  a.stdin_fd = plan.stdin_fd;
  a.stdout_fd = plan.stdout_fd;
  a.stderr_fd = plan.stderr_fd;
  a.cwd = plan.cwd.empty() ? nullptr : plan.cwd.c_str();
  a.keep = plan.keep_fds.data();
  a.keep_count = plan.keep_fds.size();
  a.cgroups = cgroup_fds.data();
  a.cgroup_count = cgroup_fds.size();

  ChildStack stack;
  if (!stack.ok()) {
    const int e = errno;
    throw SubprocessSpawnError(who + " could not be started: " + std::strerror(e), e);
  }
  sigset_t all, previous;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &previous);
  const pid_t pid = ::clone(child_main, stack.top(), CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
  const int clone_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) throw SubprocessSpawnError(who + " could not be started: " + std::strerror(clone_error), clone_error);
  if (a.failed_step == kNone) return pid;

  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  const int e = a.error;
  std::string message = who;
  if (a.failed_step == kCgroup)
    message += " could not join the cgroup of '" + plan.join_cgroup_procs[a.failed_index] + "'";
  else
    message += " could not be started";
  message += std::string(": ") + std::strerror(e);
  if (a.failed_step == kCwd) message += " (cwd '" + plan.cwd + "')";
  throw SubprocessSpawnError(message, e);
}

}  // namespace maf::sandbox::support::detail
