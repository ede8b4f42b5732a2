#pragma once
// How the wslc shim reaches the Docker engine: the `docker` CLI ($WSLC_SHIM_DOCKER, default
// `docker`), either captured (stdout and stderr through temp files, so neither can block
// the other) or by replacing the shim outright (exec, logs, build), so bytes, exit status
// and kill semantics are Docker's own (wslc.md S-4).

#include <string>
#include <vector>

namespace wslc_shim {

struct DockerResult {
  int exit_code = 0;
  std::string out;
  std::string err;
};

/// Runs `docker args…` to completion. With `inherit_stdin` the child reads the shim's
/// stdin (the tar of `cp -`); otherwise /dev/null.
DockerResult run_docker(const std::vector<std::string>& args, bool inherit_stdin = false);

/// Replaces the shim with `docker args…`; returns only by exiting 127 on failure.
[[noreturn]] void exec_docker(const std::vector<std::string>& args);

}  // namespace wslc_shim
