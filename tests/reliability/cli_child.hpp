#pragma once
// The `maf-sandbox` command as a child process the reliability tests can SIGKILL: a host
// killed mid-acquire is exactly that, and the fresh process that cleans up after it is another.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace reliability {

/// Starts MAF_TEST_CLI with `args`, the build tree's plugins first on the search path; its
/// output goes to /dev/null (the tests judge by exit codes and by what is left behind).
inline pid_t spawn_cli(const std::vector<std::string>& args) {
  ::setenv("MAF_SANDBOX_PLUGIN_PATH", MAF_TEST_PLUGIN_DIR, 1);
  std::vector<std::string> argv{MAF_TEST_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw std::runtime_error(std::string("cannot start ") + MAF_TEST_CLI);
  return pid;
}

/// Waits for a child: its exit code, or minus the signal that ended it.
inline int reap_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1000;
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1000;
}

/// Polls `seen` every millisecond until it answers non-empty; "" after `bound` (the caller
/// then fails: whatever it waited for never happened).
inline std::string wait_for(const std::function<std::string()>& seen,
                            std::chrono::milliseconds bound = std::chrono::seconds(60)) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < give_up) {
    if (std::string s = seen(); !s.empty()) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return "";
}

}  // namespace reliability
