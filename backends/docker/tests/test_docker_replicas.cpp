// Issue 54: host replicas on one conversation, on a real engine (label `docker`, both
// transports). Several processes (replica_worker) race acquire + write + exec + read +
// collect on one key; what is asserted is the outcome — every call succeeded, one container
// per (key, kind) (with ALLOWLIST: one proxy, one network), nothing left after dispose —
// never how long anything took. Also: a freeze left by a host killed inside it is recovered,
// and two backend instances in one process race one key.
//
// MAF_REPLICA_ROUNDS overrides every case's number of rounds (the stage's defaults keep its
// added time short; docs/backends/docker.md "Replicas on one conversation" has a longer run).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine_fixture.hpp"
#include "maf/sandbox/support/labels.hpp"

using namespace maf::sandbox;
using namespace docker_test;

namespace {

std::string egress_proxy_image() {
  const char* env = std::getenv("MAF_SANDBOX_EGRESS_PROXY_IMAGE");
  return env && *env ? env : "maf-sandbox-egress-proxy:local";
}

int rounds_or(int fallback) {
  const char* env = std::getenv("MAF_REPLICA_ROUNDS");
  return env && *env ? std::max(1, std::atoi(env)) : fallback;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// A replica_worker with its stdout in `out`.
pid_t spawn_worker(const std::vector<std::string>& args, const std::filesystem::path& out) {
  std::vector<std::string> argv{MAF_DOCKER_REPLICA_WORKER};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::FILE* f = std::fopen(out.c_str(), "w");
    if (!f || ::dup2(::fileno(f), 1) < 0) ::_exit(127);
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    ::execv(raw[0], raw.data());
    ::_exit(127);
  }
  return pid;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::string label_filter(std::string_view label, const std::string& value) {
  return "label=" + std::string(label) + "=" + support::label_value(value);
}

struct Census {
  int workloads = 0, proxies = 0, networks = 0;
};

/// What the engine holds for (scope, thread): workloads, proxies, networks.
Census census(const std::string& scope, const std::optional<std::string>& thread) {
  std::vector<std::string> filters{"--filter", label_filter(support::kLabelScope, scope)};
  if (thread) filters.insert(filters.end(), {"--filter", label_filter(support::kLabelThread, *thread)});
  std::vector<std::string> ps{"ps", "-a"};
  ps.insert(ps.end(), filters.begin(), filters.end());
  ps.insert(ps.end(), {"--format", "role={{.Label \"maf-sandbox.role\"}}"});
  Census c;
  for (const auto& line : lines_of(docker_cli(ps))) (line == "role=proxy" ? c.proxies : c.workloads)++;
  std::vector<std::string> nets{"network", "ls", "-q"};
  nets.insert(nets.end(), filters.begin(), filters.end());
  c.networks = static_cast<int>(lines_of(docker_cli(nets)).size());
  return c;
}

/// `processes` replicas, `rounds` rounds, one fresh key per round; checked and disposed.
void race(int processes, int rounds, bool allowlist) {
  docker::DockerConfig config = test_config();
  if (allowlist) {
    config.egress_proxy_image = egress_proxy_image();
    config.egress_inhibit_ipv4_fallback = true;
  }
  Scope s(config);
  const auto dir = std::filesystem::temp_directory_path() / ("maf-replicas-" + random_hex());
  std::filesystem::create_directories(dir / "barrier");
  std::vector<pid_t> pids;
  for (int i = 0; i < processes; ++i) {
    std::vector<std::string> args{"race", s.scope, "t", std::to_string(rounds), std::to_string(i),
                                  std::to_string(processes), (dir / "barrier").string(), (dir / "landed").string(),
                                  allowlist ? "allowlist" : "closed"};
    if (allowlist) args.push_back(egress_proxy_image());
    pids.push_back(spawn_worker(args, dir / ("worker-" + std::to_string(i) + ".out")));
  }
  for (pid_t pid : pids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
  }
  int ok = 0;
  std::string errors;
  for (int i = 0; i < processes; ++i)
    for (const auto& line : lines_of(read_all(dir / ("worker-" + std::to_string(i) + ".out")))) {
      if (line.rfind("ok ", 0) == 0) ++ok;
      else errors += "replica " + std::to_string(i) + ": " + line + "\n";
    }
  const int tries = processes * rounds;
  WARN(std::to_string(processes) + " replicas on " + transport_name() + (allowlist ? ", allowlist" : ", closed") +
       ": " + std::to_string(ok) + " of " + std::to_string(tries) + " tries succeeded");
  INFO(errors);
  CHECK(errors.empty());
  CHECK(ok == tries);
  for (int r = 0; r < rounds; ++r) {
    const std::string thread = "t-" + std::to_string(r);
    const Census c = census(s.scope, thread);
    INFO("round " << r);
    CHECK(c.workloads == 1);
    CHECK(c.proxies == (allowlist ? 1 : 0));
    CHECK(c.networks == (allowlist ? 1 : 0));
    s.run([&] { return s.backend->dispose_scope(s.scope, thread); });
  }
  const Census left = census(s.scope, std::nullopt);
  CHECK(left.workloads == 0);
  CHECK(left.proxies == 0);
  CHECK(left.networks == 0);
  std::filesystem::remove_all(dir);
}

bool paused(const std::string& container) {
  return docker_cli({"container", "inspect", "--format", "{{.State.Paused}}", container}) == "true";
}

/// Starts a replica that acquires (scope, thread), freezes the container and hangs inside the
/// freeze; returns its pid once the container is paused.
pid_t freeze_and_hang(const Scope& s, const std::filesystem::path& out) {
  const pid_t pid = spawn_worker({"freeze-and-hang", s.scope, s.thread}, out);
  for (int i = 0; i < 1200 && read_all(out).find("frozen") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  INFO(read_all(out));
  REQUIRE(read_all(out).find("frozen") != std::string::npos);
  return pid;
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
}

}  // namespace

TEST_CASE("issue 54 D-10 D-21: 2 replica processes race acquire, write, exec, read, collect on one key: no error, one container, nothing left after dispose") {
  race(2, rounds_or(4), false);
}

TEST_CASE("issue 54 D-10 D-21 D-22: 8 replica processes race acquire, write, exec, read, collect on one key: no error, one container, nothing left after dispose") {
  race(8, rounds_or(2), false);
}

TEST_CASE("issue 54 D-31: 8 replica processes race one ALLOWLIST key: no error, one workload, one proxy, one network, nothing left after dispose") {
  race(8, rounds_or(1), true);
}

TEST_CASE("issue 54 D-11 D-21: a freeze left by a host killed inside it is recovered by the next acquire and by a file call of a live sandbox") {
  Scope s;
  const auto spec = spec_for(kImage, kAllCaps);
  auto live = s.acquire(spec);  // this process's own sandbox on the key, acquired before the kill
  const std::string container = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  const auto dir = std::filesystem::temp_directory_path() / ("maf-replicas-" + random_hex());
  std::filesystem::create_directories(dir);

  // At acquire: a fresh backend (another host process's view) finds it paused by the dead host.
  kill_and_reap(freeze_and_hang(s, dir / "first.out"));
  REQUIRE(paused(container));
  auto other = s.run([&] { return docker::DockerSandboxBackend::create(test_config()); });
  auto adopted = s.run([&] { return other->acquire(s.key(), spec); });
  CHECK_FALSE(paused(container));
  CHECK(adopted->instance_id() == live->instance_id());

  // At a file call: the live sandbox's freeze finds it paused by the dead host.
  kill_and_reap(freeze_and_hang(s, dir / "second.out"));
  REQUIRE(paused(container));
  s.run([&] { return live->write_file("after.txt", "after the kill"); });
  CHECK(s.run([&] { return live->read_file("after.txt"); }) == "after the kill");
  CHECK_FALSE(paused(container));
  CHECK(s.sh(*live, "cat after.txt").stdout_bytes == "after the kill");
  std::filesystem::remove_all(dir);
}

TEST_CASE("issue 54 D-10: two backend instances in one process acquire one key at once: both succeed on one container") {
  Scope s;
  const auto spec = spec_for(kImage, kAllCaps);
  auto second = s.run([&] { return docker::DockerSandboxBackend::create(test_config()); });
  const int rounds = rounds_or(2);
  for (int r = 0; r < rounds; ++r) {
    const SandboxKey key{s.scope, s.thread, "agent-" + std::to_string(r), ""};
    boost::asio::io_context io;
    auto one = [&](std::shared_ptr<docker::DockerSandboxBackend> backend, std::string name)
        -> boost::asio::awaitable<std::string> {
      auto sandbox = co_await backend->acquire(key, spec);
      co_await sandbox->write_file(name, name);
      auto result = co_await sandbox->exec("cat " + name);
      const std::string back = co_await sandbox->read_file(name);
      co_return sandbox->instance_id() + "|" + result.stdout_bytes + "|" + back;
    };
    auto a = boost::asio::co_spawn(io, one(s.backend, "a.txt"), boost::asio::use_future);
    auto b = boost::asio::co_spawn(io, one(second, "b.txt"), boost::asio::use_future);
    std::thread helper([&] { io.run(); });
    io.run();
    helper.join();
    const std::string ra = a.get(), rb = b.get();
    CHECK(ra.substr(ra.find('|')) == "|a.txt|a.txt");
    CHECK(rb.substr(rb.find('|')) == "|b.txt|b.txt");
    CHECK(ra.substr(0, ra.find('|')) == rb.substr(0, rb.find('|')));  // one container
  }
  const Census c = census(s.scope, s.thread);
  CHECK(c.workloads == rounds);  // one per key (an agent per round)
}
