#include "docker_call.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace wslc_shim {
namespace {

std::string docker_program() {
  const char* env = std::getenv("WSLC_SHIM_DOCKER");
  return env && *env ? env : "docker";
}

std::vector<char*> c_argv(std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (auto& a : argv) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

std::string slurp(FILE* f) {
  std::string out;
  std::rewind(f);
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

}  // namespace

DockerResult run_docker(const std::vector<std::string>& args, bool inherit_stdin) {
  std::vector<std::string> argv{docker_program()};
  argv.insert(argv.end(), args.begin(), args.end());
  FILE* out = std::tmpfile();
  FILE* err = std::tmpfile();
  if (!out || !err) {
    std::fprintf(stderr, "wslc-shim: tmpfile: %s\n", std::strerror(errno));
    std::exit(1);
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!inherit_stdin) {
      const int devnull = ::open("/dev/null", O_RDONLY);
      ::dup2(devnull, 0);
    }
    ::dup2(fileno(out), 1);
    ::dup2(fileno(err), 2);
    auto cargv = c_argv(argv);
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "wslc-shim: cannot run %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  DockerResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  std::fclose(out);
  std::fclose(err);
  return r;
}

void exec_docker(const std::vector<std::string>& args) {
  std::vector<std::string> argv{docker_program()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::fflush(nullptr);
  auto cargv = c_argv(argv);
  ::execvp(cargv[0], cargv.data());
  std::fprintf(stderr, "wslc-shim: cannot run %s: %s\n", cargv[0], std::strerror(errno));
  std::exit(127);
}

}  // namespace wslc_shim
