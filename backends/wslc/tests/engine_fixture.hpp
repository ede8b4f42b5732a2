#pragma once
// Shared helpers for the wslc engine tests (label `wslc`): the backend drives the shim
// (MAF_WSLC_SHIM, built from ../shim), which drives the local Docker engine. They assume
// scripts/test.d/52-wslc started an engine and built the images; a test that finds no
// engine fails — it is never skipped.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "maf/sandbox/support/shell.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/wslc/backend.hpp"

namespace wslc_test {

inline const std::string kImage = "maf-sandbox-test/wslc-busybox:1";

/// Runs the docker CLI out of band (to observe or disturb what the backend did).
inline std::string docker_cli(const std::vector<std::string>& args, int* exit_code = nullptr) {
  const char* env = std::getenv("MAF_SANDBOX_DOCKER");
  std::vector<std::string> argv{env && *env ? env : "docker"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string line = maf::sandbox::support::shell_join(argv) + " 2>/dev/null";
  FILE* pipe = ::popen(line.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

/// The egress proxy image scripts/egress-proxy-image builds (MAF_SANDBOX_EGRESS_PROXY_IMAGE
/// overrides the tag); the egress tests build pinned images FROM it through the shim.
inline std::string base_proxy_image() {
  const char* env = std::getenv("MAF_SANDBOX_EGRESS_PROXY_IMAGE");
  return env && *env ? env : "maf-sandbox-egress-proxy:local";
}

/// Runs `argv` through the shell, stdout and stderr captured together (kept for a failure
/// message, never printed otherwise), trimmed.
inline std::string run_out(const std::vector<std::string>& argv, int* exit_code) {
  FILE* pipe = ::popen((maf::sandbox::support::shell_join(argv) + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

inline bool container_exists(const std::string& name) {
  int code = -1;
  docker_cli({"container", "inspect", "--format", "{{.Id}}", name}, &code);
  return code == 0;
}

inline std::string random_hex(int bytes = 6) {
  static std::mt19937_64 rng{std::random_device{}()};
  std::ostringstream s;
  s << std::hex;
  for (int i = 0; i < bytes; ++i) s << ((rng() & 0xf0) >> 4) << (rng() & 0x0f);
  return s.str();
}

inline maf::sandbox::wslc::WslcConfig shim_config() {
  maf::sandbox::wslc::WslcConfig c;
  c.wslc_path = MAF_WSLC_SHIM;
  return c;
}

inline maf::sandbox::SandboxSpec spec_for(maf::sandbox::CapabilitySet caps, const std::string& kind = "shell") {
  maf::sandbox::SandboxSpec::Fields f;
  f.kind = kind;
  f.image = kImage;
  f.requires_capabilities = caps;
  return maf::sandbox::SandboxSpec(std::move(f));
}

inline const maf::sandbox::CapabilitySet kCaps{maf::sandbox::Capability::Exec, maf::sandbox::Capability::FilesIn};

/// One fresh shim session, scope and invocation log per test; the scope is purged by label
/// when the test ends (S-2, S-11).
struct Engine {
  maf::sandbox::BlockingRunner run;
  std::shared_ptr<maf::sandbox::wslc::WslcSandboxBackend> backend;
  std::string scope = "wslc-e2e-" + random_hex();
  std::string thread = "thread-1";
  std::string log_path;

  explicit Engine(maf::sandbox::wslc::WslcConfig config = shim_config()) {
    int code = -1;
    docker_cli({"version", "--format", "{{.Server.Version}}"}, &code);
    INFO("no Docker engine answers; run scripts/docker-engine start (scripts/test.d/52-wslc does)");
    REQUIRE(code == 0);
    log_path = "/tmp/maf-wslc-shim-" + random_hex() + ".log";
    ::setenv("WSLC_SHIM_SESSION", ("session-" + scope).c_str(), 1);
    ::setenv("WSLC_SHIM_LOG", log_path.c_str(), 1);
    backend = std::make_shared<maf::sandbox::wslc::WslcSandboxBackend>(std::move(config));
  }
  ~Engine() {
    try {
      run([&] { return backend->dispose_scope(scope, thread); });
    } catch (...) {
    }
    std::remove(log_path.c_str());
  }

  maf::sandbox::SandboxKey key(const std::string& agent = "agent-1", const std::string& call = "") const {
    return maf::sandbox::SandboxKey{scope, thread, agent, call};
  }
  std::shared_ptr<maf::sandbox::Sandbox> acquire(maf::sandbox::SandboxSpec spec, const std::string& agent = "agent-1") {
    return run([&] { return backend->acquire(key(agent), spec); });
  }
  maf::sandbox::ExecResult sh(maf::sandbox::Sandbox& sb, const std::string& line) {
    return run([&] { return sb.exec(maf::sandbox::Command(line)); });
  }
  std::string name(const std::string& kind = "shell", const std::string& agent = "agent-1") const {
    return maf::sandbox::wslc::WslcSandboxBackend::container_name(key(agent), kind, maf::sandbox::kDefaultWorkDir);
  }

  /// S-11: the shim's invocation log so far.
  std::vector<nlohmann::json> calls() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_path);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  /// S-1: the backend never sent anything the shim does not accept.
  int unsupported_calls() const {
    int n = 0;
    for (const auto& c : calls()) n += c.value("unsupported", false) ? 1 : 0;
    return n;
  }
  void clear_log() const { std::ofstream(log_path, std::ios::trunc); }
};

}  // namespace wslc_test
