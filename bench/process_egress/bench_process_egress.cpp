// Issue 47 item 6 (bench/RESULTS.md "Process backend ALLOWLIST"): what ALLOWLIST costs on the
// process backend. Rows, each alternated with its floor in one process:
//  - acquire + dispose of an ALLOWLIST sandbox (proxy started, awaited, ended) beside the
//    same for CLOSED (the goal: at most +30 ms);
//  - exec `true` behind the relay beside exec `true` in a CLOSED sandbox;
//  - a 1 KiB GET by curl in the guest through the relay and proxy beside the same curl run
//    on the host straight at the upstream (the floor a proxy-less network would give);
//  - with $MAF_BENCH_DOCKER_PROXY_IMAGE set (and the docker plugin on MAF_SANDBOX_PLUGIN_PATH):
//    the same GET through the process backend's proxy beside it through Docker's proxy
//    container (a Docker ALLOWLIST sandbox of maf-sandbox-test/clients:3, the upstream the
//    same python3 http.server in a container on the proxy's outbound network);
// and the proxy's resident memory per sandbox. The upstream is python3's http.server on the
// host's loopback, reached by a pinned name.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "egress_proxy.hpp"
#include "harness.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/registry.hpp"
#include "maf/sandbox/sync.hpp"

using namespace maf::sandbox;
using namespace maf_bench;
namespace fs = std::filesystem;

namespace {

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  require(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
              ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0,
          "no free port");
  ::close(s);
  return ntohs(a.sin_port);
}

}  // namespace

int main() {
  const int runs = std::getenv("MAF_BENCH_RUNS") ? std::atoi(std::getenv("MAF_BENCH_RUNS")) : 15;
  const fs::path dir = fs::temp_directory_path() / ("maf-bench-egress-" + std::to_string(::getpid()));
  fs::create_directories(dir / "www");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  std::ofstream(dir / "www" / "1k") << std::string(1024, 'x');
  const int port = free_port();
  pid_t server = 0;
  {
    const std::string p = std::to_string(port), www = (dir / "www").string();
    std::vector<char*> argv{const_cast<char*>("python3"), const_cast<char*>("-m"), const_cast<char*>("http.server"),
                            const_cast<char*>(p.c_str()), const_cast<char*>("--bind"), const_cast<char*>("127.0.0.1"),
                            const_cast<char*>("--directory"), const_cast<char*>(www.c_str()), nullptr};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    require(::posix_spawnp(&server, "python3", &fa, nullptr, argv.data(), environ) == 0, "cannot start python3");
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < 200 && spawn_and_wait("curl", {"-fsS", "-o", "/dev/null", "http://127.0.0.1:" + p + "/1k"}) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  process::ProcessBackendConfig config;
  config.root = dir / "root";
  config.egress_proxy_path = MAF_BENCH_EGRESS_PROXY;
  config.egress_relay_path = MAF_BENCH_EGRESS_RELAY;
  config.egress_proxy_args = {"--resolve", "bench.test=127.0.0.1"};
  auto backend = process::make_process_backend(config);
  require(backend->declarations().egress_modes.contains(Egress::Allowlist), "allowlist is not declared");
  BlockingRunner run;
  const SandboxSpec closed({.kind = "bench", .requires_capabilities = {Capability::Exec}, .egress = Egress::Closed});
  const SandboxSpec allow({.kind = "bench",
                           .egress_allow = {std::string("bench.test:") + std::to_string(port)},
                           .requires_capabilities = {Capability::Exec},
                           .egress = Egress::Allowlist});
  int n = 0;
  auto cycle = [&](const SandboxSpec& spec) {
    const SandboxKey key{"bench", "t" + std::to_string(++n), "a", ""};
    return timed([&] {
      auto sb = run([&] { return backend->acquire(key, spec); });
      sb.reset();
      run([&] { return backend->dispose(key, std::nullopt, std::nullopt); });
    });
  };
  Table table;
  table.measure("acquire + dispose, allowlist", "the same, closed", runs, [&] { return cycle(allow); },
                [&] { return cycle(closed); });

  const SandboxKey ka{"bench", "held-allow", "a", ""}, kc{"bench", "held-closed", "a", ""};
  auto a = run([&] { return backend->acquire(ka, allow); });
  auto c = run([&] { return backend->acquire(kc, closed); });
  auto exec = [&](std::shared_ptr<Sandbox>& sb, Command cmd) {
    return timed([&] {
      const auto r = run([&] { return sb->exec(cmd, ".", std::chrono::seconds(30)); });
      require(r.exit_code == 0, "exec failed: " + r.stderr_text());
    });
  };
  table.measure("exec `true`, allowlist (relay)", "exec `true`, closed", runs, [&] { return exec(a, Command("true")); },
                [&] { return exec(c, Command("true")); });
  const std::string url = "http://bench.test:" + std::to_string(port) + "/1k";
  table.measure("1 KiB GET in the guest via the proxy", "exec `true` + the same GET from the host", runs,
                [&] { return exec(a, Command(std::vector<std::string>{"curl", "-fsS", "-o", "/dev/null", url})); },
                [&] {
                  const double t = exec(a, Command("true"));
                  return t + timed([&] {
                           spawn_and_wait("curl", {"-fsS", "-o", "/dev/null", "http://127.0.0.1:" + std::to_string(port) + "/1k"});
                         });
                });
  // Issue 47 item 6's "vs Docker's proxy" row (optional: it needs the engine and the image).
  std::function<void()> docker_cleanup;
  if (const char* image = std::getenv("MAF_BENCH_DOCKER_PROXY_IMAGE")) {
    const std::string tag = std::to_string(::getpid()), net = "maf-bench-egress-net-" + tag,
                      up = "maf-bench-egress-up-" + tag;
    docker_cleanup = [=] {
      spawn_and_wait("docker", {"rm", "-f", up});
      spawn_and_wait("docker", {"network", "rm", net});
    };
    require(spawn_and_wait("docker", {"network", "create", net}) == 0, "docker network create");
    require(spawn_and_wait("docker", {"run", "-d", "--name", up, "--network", net, "-v", (dir / "www").string() + ":/www:ro",
                                      "maf-sandbox-test/clients:3", "python3", "-m", "http.server", "8000",
                                      "--directory", "/www"}) == 0,
            "docker run of the upstream");
    std::string ip;
    {
      FILE* p = ::popen(("docker inspect -f '{{(index .NetworkSettings.Networks \"" + net + "\").IPAddress}}' " + up).c_str(), "r");
      char buf[128] = {};
      if (p && std::fgets(buf, sizeof buf, p)) ip = buf;
      if (p) ::pclose(p);
      while (!ip.empty() && (ip.back() == '\n' || ip.back() == ' ')) ip.pop_back();
    }
    require(!ip.empty(), "no address for the Docker upstream");
    const nlohmann::json dconf{{"egress_proxy_image", image},
                               {"outbound_network", net},
                               {"egress_proxy_args", {"--resolve", "bench.test=" + ip}},
                               {"egress_inhibit_ipv4_fallback", true}};
    auto docker = PluginRegistry::global().create("docker", dconf);
    const SandboxSpec dspec({.kind = "bench",
                             .image = "maf-sandbox-test/clients:3",
                             .egress_allow = {std::string("bench.test:8000")},
                             .requires_capabilities = {Capability::Exec},
                             .egress = Egress::Allowlist});
    const SandboxKey kd{"bench", "held-docker", "a", ""};
    auto d = run([&] { return docker->acquire(kd, dspec); });
    const Command get_docker(std::vector<std::string>{"curl", "-fsS", "-o", "/dev/null", "http://bench.test:8000/1k"});
    for (int i = 0; i < 50 && run([&] { return d->exec(get_docker, ".", std::chrono::seconds(30)); }).exit_code != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the upstream's readiness
    table.measure("1 KiB GET via the proxy, process vs Docker", "the same GET in a Docker sandbox via its proxy", runs,
                  [&] { return exec(a, Command(std::vector<std::string>{"curl", "-fsS", "-o", "/dev/null", url})); },
                  [&] { return exec(d, get_docker); });
    d.reset();
    run([&] { return docker->dispose(kd, std::nullopt, std::nullopt); });
  }
  table.print(runs);
  if (docker_cleanup) docker_cleanup();
  // The proxy's resident memory, after the GETs.
  for (const auto& conv : fs::directory_iterator(config.root))
    for (const auto& sb : fs::directory_iterator(conv.path())) {
      std::ifstream pidfile(process::egress_dir(sb.path().string()) + "/proxy.pid");
      long pid = 0;
      if (!(pidfile >> pid)) continue;
      std::ifstream status("/proc/" + std::to_string(pid) + "/status");
      for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS", 0) == 0 || line.rfind("VmHWM", 0) == 0) std::printf("\nproxy %s", line.c_str());
    }
  std::printf("\n");
  a.reset();
  c.reset();
  run([&] { return backend->reap(std::chrono::seconds(0), std::nullopt); });
  ::kill(server, SIGKILL);
  ::waitpid(server, nullptr, 0);
  fs::remove_all(dir);
  return 0;
}
