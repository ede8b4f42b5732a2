// Offline: the argv and environment the CLI transport gives the client, recorded by a fake
// `docker` (a shell script) instead of an engine — D-1, D-2, D-3, D-9, D-29.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/sync.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::docker;
namespace fs = std::filesystem;

namespace {

// Answers just enough for one cold acquire of an EXEC spec; records every call, one line
// per call with arguments separated by \x1f, and the DOCKER_HOST each call saw.
constexpr const char* kFakeDocker = R"FAKE(#!/bin/sh
d="$FAKE_DOCKER_DIR"
(IFS="$(printf '\037')"; printf '%s\n' "$*") >> "$d/argv"
printf '%s\n' "${DOCKER_HOST-unset}" >> "$d/env"
if [ "$1" = context ]; then
  echo '{"Name":"default","Endpoints":{"docker":{"Host":"unix:///fake.sock"}}}'; exit 0
fi
shift 2
case "$1" in
  version) echo linux ;;
  container)
    if [ ! -f "$d/created" ]; then echo "Error: No such container: $5" >&2; exit 1; fi
    case "$4" in
      *State*) echo '"0000000000000000000000000000000000000000000000000000000000000001" {"Status":"running","Running":true,"Paused":false}' ;;
      *User*) echo '""' ;;
    esac ;;
  image) exit 0 ;;
  run) touch "$d/created"; echo 0000000000000000000000000000000000000000000000000000000000000001 ;;
  cp)
    if [ "$2" = - ]; then cat >/dev/null; exit 0; fi
    echo "Error: No such container:path: $2" >&2; exit 1 ;;
  *) exit 0 ;;
esac
)FAKE";

struct FakeDocker {
  fs::path dir;
  FakeDocker() {
    char tmpl[] = "/tmp/maf-fake-docker-XXXXXX";
    dir = ::mkdtemp(tmpl);
    std::ofstream(dir / "docker") << kFakeDocker;
    fs::permissions(dir / "docker", fs::perms::owner_all);
    ::setenv("FAKE_DOCKER_DIR", dir.c_str(), 1);
  }
  ~FakeDocker() { fs::remove_all(dir); }
  std::vector<std::vector<std::string>> calls() const {
    std::vector<std::vector<std::string>> out;
    std::ifstream in(dir / "argv");
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> args;
      std::stringstream ss(line);
      for (std::string a; std::getline(ss, a, '\x1f');) args.push_back(a);
      out.push_back(args);
    }
    return out;
  }
  std::vector<std::string> envs() const {
    std::vector<std::string> out;
    std::ifstream in(dir / "env");
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
};

std::vector<std::string> run_argv(DockerConfig config) {
  FakeDocker fake;
  config.docker_path = (fake.dir / "docker").string();
  config.transport = DockerTransportKind::Cli;  // the CLI argv is under test, whatever auto would bind
  BlockingRunner run;
  DockerSandboxBackend backend(config);
  SandboxSpec spec({.kind = "k", .image = "img:1", .requires_capabilities = {Capability::Exec}});
  run([&] { return backend.acquire(SandboxKey{"s", "t", "a", ""}, spec); });
  auto calls = fake.calls();
  // D-29: exactly one context inspect, first; every later call pinned to the context and
  // to the resolved endpoint.
  REQUIRE(!calls.empty());
  CHECK(calls[0][0] == "context");
  const auto envs = fake.envs();
  for (std::size_t i = 1; i < calls.size(); ++i) {
    CHECK(calls[i][0] == "--context");
    CHECK(calls[i][1] == "default");
    CHECK(calls[i][2] != "context");
    CHECK(envs[i] == "unix:///fake.sock");
  }
  // D-9: the image is inspected; no pull happens for a present image.
  for (const auto& c : calls) CHECK_FALSE((c.size() > 3 && c[2] == "image" && c[3] == "pull"));
  for (const auto& c : calls)
    if (c.size() > 2 && c[2] == "run") return {c.begin() + 2, c.end()};
  FAIL("no run call recorded");
  return {};
}

bool has_pair(const std::vector<std::string>& argv, const std::string& flag, const std::string& value) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag && argv[i + 1] == value) return true;
  return false;
}

}  // namespace

TEST_CASE("D-1 D-2 D-3 D-29 issue-22: the run argv, default config (NET_RAW dropped)") {
  auto argv = run_argv(DockerConfig{});
  CHECK(has_pair(argv, "--security-opt", "no-new-privileges"));
  CHECK(has_pair(argv, "--pids-limit", "512"));
  CHECK(has_pair(argv, "--network", "none"));
  CHECK(has_pair(argv, "--pull", "never"));
  CHECK(has_pair(argv, "--label", "maf-sandbox.scope=s"));
  CHECK(has_pair(argv, "--label", "maf-sandbox.kind=k"));
  CHECK(std::vector<std::string>(argv.end() - 3, argv.end()) == std::vector<std::string>{"img:1", "sleep", "infinity"});
  for (const std::string forbidden : {"-v", "--volume", "--mount", "--tmpfs", "--volumes-from", "--privileged",
                                      "--cap-add", "--device", "--pid", "--ipc", "-p", "--publish", "--userns",
                                      "--user", "--entrypoint", "--memory", "--cpus", "--sysctl"})
    CHECK(std::find(argv.begin(), argv.end(), forbidden) == argv.end());
  for (const auto& a : argv) CHECK(a.find("docker.sock") == std::string::npos);
  // Issue 22: NET_RAW is the one capability dropped by default (no raw frames from a guest).
  CHECK(has_pair(argv, "--cap-drop", "NET_RAW"));
  CHECK(std::count(argv.begin(), argv.end(), "--cap-drop") == 1);
}

TEST_CASE("D-3: cap_drop_all, memory and cpus appear exactly when configured") {
  DockerConfig c;
  c.cap_drop_all = true;
  c.memory = "2g";
  c.cpus = 1.0;
  c.pids_limit = 77;
  auto argv = run_argv(c);
  CHECK(has_pair(argv, "--cap-drop", "ALL"));
  CHECK(std::count(argv.begin(), argv.end(), "--cap-drop") == 1);  // ALL covers NET_RAW
  CHECK(has_pair(argv, "--memory", "2g"));
  CHECK(has_pair(argv, "--cpus", "1.0"));
  CHECK(has_pair(argv, "--pids-limit", "77"));
}
