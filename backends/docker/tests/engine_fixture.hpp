#pragma once
// Shared helpers for the tests that run against a real Docker engine (label `docker`).
// They assume scripts/test.d/50-docker started an engine and built the test images; a test
// that finds no engine fails — it is never skipped.

#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/support/shell.hpp"
#include "maf/sandbox/sync.hpp"

namespace docker_test {

inline const std::string kImage = "maf-sandbox-test/busybox:1";
inline const std::string kNonRootImage = "maf-sandbox-test/busybox-nonroot:1";
inline const std::string kNoPasswdImage = "maf-sandbox-test/busybox-nopasswd:1";
inline const std::string kNoShImage = "maf-sandbox-test/busybox-nosh:1";

/// The client the tests (and the backend under test) use; MAF_SANDBOX_DOCKER overrides.
inline std::string docker_path() {
  const char* env = std::getenv("MAF_SANDBOX_DOCKER");
  return env && *env ? env : "docker";
}

/// Runs the docker CLI out of band (to observe what the backend did); returns stdout.
inline std::string docker_cli(const std::vector<std::string>& args, int* exit_code = nullptr) {
  std::vector<std::string> argv{docker_path()};
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

inline std::string random_hex(int bytes = 8) {
  static std::mt19937_64 rng{std::random_device{}()};
  std::ostringstream s;
  s << std::hex;
  for (int i = 0; i < bytes; ++i) s << ((rng() & 0xf0) >> 4) << (rng() & 0x0f);
  return s.str();
}

/// The transport under test: MAF_DOCKER_TRANSPORT = "cli" (also when unset) or "api". ctest
/// registers every engine test once per transport (tests/CMakeLists.txt).
inline std::string transport_name() {
  const char* env = std::getenv("MAF_DOCKER_TRANSPORT");
  const std::string name = env && *env ? env : "cli";
  INFO("MAF_DOCKER_TRANSPORT must be cli or api");
  REQUIRE((name == "cli" || name == "api"));
  return name;
}

inline maf::sandbox::docker::DockerConfig test_config() {
  maf::sandbox::docker::DockerConfig c;
  c.docker_path = docker_path();
  // Named, never the default: each engine test runs once per transport on purpose.
  c.transport = transport_name() == "api" ? maf::sandbox::docker::DockerTransportKind::Api
                                          : maf::sandbox::docker::DockerTransportKind::Cli;
  return c;
}

/// One fresh scope per test; every sandbox in it is purged by label when the test ends.
struct Scope {
  maf::sandbox::BlockingRunner run;
  std::shared_ptr<maf::sandbox::docker::DockerSandboxBackend> backend;
  std::string scope = "e2e-" + random_hex();
  std::string thread = "thread-1";

  /// `transport`: the backend's transport (default: the one `config` names), e.g. a test
  /// double wrapping the real one.
  explicit Scope(maf::sandbox::docker::DockerConfig config = test_config(),
                 std::shared_ptr<maf::sandbox::docker::DockerTransport> transport = nullptr) {
    int code = -1;
    docker_cli({"version", "--format", "{{.Server.Version}}"}, &code);
    INFO("no Docker engine answers; run scripts/docker-engine start (scripts/test.d/50-docker does)");
    REQUIRE(code == 0);
    backend = run([&] { return maf::sandbox::docker::DockerSandboxBackend::create(config, transport); });
  }
  ~Scope() {
    try {
      run([&] { return backend->dispose_scope(scope, thread); });
    } catch (...) {
    }
  }

  maf::sandbox::SandboxKey key(const std::string& agent = "agent-1", const std::string& call = "") const {
    return maf::sandbox::SandboxKey{scope, thread, agent, call};
  }

  std::shared_ptr<maf::sandbox::Sandbox> acquire(maf::sandbox::SandboxSpec spec, const std::string& agent = "agent-1",
                                                 const std::string& call = "") {
    return run([&] { return backend->acquire(key(agent, call), spec); });
  }

  maf::sandbox::ExecResult sh(maf::sandbox::Sandbox& sb, const std::string& line) {
    return run([&] { return sb.exec(line); });
  }
};

inline maf::sandbox::SandboxSpec spec_for(const std::string& image, maf::sandbox::CapabilitySet caps,
                                          const std::string& kind = "shell") {
  maf::sandbox::SandboxSpec::Fields f;
  f.kind = kind;
  f.image = image;
  f.requires_capabilities = caps;
  return maf::sandbox::SandboxSpec(std::move(f));
}

inline const maf::sandbox::CapabilitySet kAllCaps{
    maf::sandbox::Capability::Exec, maf::sandbox::Capability::FilesIn, maf::sandbox::Capability::FilesOut,
    maf::sandbox::Capability::FilesDelete};

}  // namespace docker_test
