// One host replica, as a process of its own, for test_docker_replicas (issue 54). Not a test:
// the test starts several of these at once on one conversation and judges what they report
// and what the engine holds afterwards.
//
//   replica_worker race <scope> <thread-prefix> <rounds> <index> <processes> <barrier-dir>
//                       <out-dir> <closed|allowlist> [proxy-image]
//     For each round r: wait until every process reached r (files in <barrier-dir>), then on
//     the key (scope, <thread-prefix>-r, agent-1): acquire, write, exec, read, collect. One
//     line per round ("ok r" or "error r: <what>") on stdout; exit 0 iff every round was ok.
//   replica_worker freeze-and-hang <scope> <thread>
//     Acquire the key, take the container's freeze as a file operation does, print "frozen",
//     and hang inside it until killed (a host killed mid-freeze).
//
// The transport is MAF_DOCKER_TRANSPORT's (cli or api), as in every engine test.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>

#include "freeze.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/sync.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::docker;

namespace {

const std::string kImage = "maf-sandbox-test/busybox:1";

DockerConfig config_for(const std::string& proxy_image) {
  DockerConfig c;
  const char* client = std::getenv("MAF_SANDBOX_DOCKER");
  c.docker_path = client && *client ? client : "docker";
  const char* transport = std::getenv("MAF_DOCKER_TRANSPORT");
  c.transport = transport && std::string(transport) == "api" ? DockerTransportKind::Api : DockerTransportKind::Cli;
  if (!proxy_image.empty()) {
    c.egress_proxy_image = proxy_image;
    c.egress_inhibit_ipv4_fallback = true;  // D-32: this engine may predate 28
  }
  return c;
}

SandboxSpec spec_for(bool allowlist) {
  SandboxSpec::Fields f;
  f.kind = "shell";
  f.image = kImage;
  f.requires_capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::FilesOut};
  f.outputs_named_at_call_time = true;
  if (allowlist) {
    f.egress = Egress::Allowlist;
    f.egress_allow.emplace_back("allowed.test");
  }
  return SandboxSpec(std::move(f));
}

void barrier(const std::filesystem::path& dir, int round, int index, int processes) {
  std::ofstream(dir / (std::to_string(round) + "." + std::to_string(index))).put('x');
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  for (;;) {
    int arrived = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind(std::to_string(round) + ".", 0) == 0) ++arrived;
    if (arrived >= processes) return;
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("barrier of round " + std::to_string(round) + " never filled");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

int race(int argc, char** argv) {
  if (argc < 10) return 2;
  const std::string scope = argv[2], prefix = argv[3];
  const int rounds = std::atoi(argv[4]), index = std::atoi(argv[5]), processes = std::atoi(argv[6]);
  const std::filesystem::path barrier_dir = argv[7], out_dir = argv[8];
  const bool allowlist = std::string(argv[9]) == "allowlist";
  const std::string proxy_image = argc > 10 ? argv[10] : "";
  BlockingRunner run;
  auto backend = run([&] { return DockerSandboxBackend::create(config_for(proxy_image)); });
  const SandboxSpec spec = spec_for(allowlist);
  int failures = 0;
  for (int r = 0; r < rounds; ++r) {
    try {
      barrier(barrier_dir, r, index, processes);
      const SandboxKey key{scope, prefix + "-" + std::to_string(r), "agent-1", ""};
      auto sandbox = run([&] { return backend->acquire(key, spec); });
      const std::string mine = "replica " + std::to_string(index) + " round " + std::to_string(r) + "\n";
      const std::string in = "in-" + std::to_string(index) + ".txt", out = "out-" + std::to_string(index) + ".txt";
      run([&] { return sandbox->write_file(in, mine); });
      auto result = run([&] { return sandbox->exec("cat " + in + " > " + out + " && echo done"); });
      if (result.exit_code != 0 || result.stdout_bytes != "done\n")
        throw std::runtime_error("exec ended " + std::to_string(result.exit_code) + ": " + result.stdout_bytes +
                                 result.stderr_bytes);
      if (const auto back = run([&] { return sandbox->read_file(out); }); back != mine)
        throw std::runtime_error("read back '" + back + "'");
      const auto landing = out_dir / ("r" + std::to_string(r) + "-p" + std::to_string(index));
      std::filesystem::create_directories(landing);
      auto sink = make_file_system_sink(landing);
      auto landed = run([&] { return collect_outputs(*sandbox, spec, sink, {DeclaredOutput{.path = out}}); });
      std::ifstream file(landing / out);
      std::stringstream collected;
      collected << file.rdbuf();
      if (landed.size() != 1 || collected.str() != mine) throw std::runtime_error("collected '" + collected.str() + "'");
      std::cout << "ok " << r << std::endl;
    } catch (const std::exception& e) {
      ++failures;
      std::string what = e.what();
      for (auto& c : what)
        if (c == '\n') c = ' ';
      std::cout << "error " << r << ": " << what << std::endl;
    }
  }
  return failures == 0 ? 0 : 1;
}

int freeze_and_hang(int argc, char** argv) {
  if (argc < 4) return 2;
  BlockingRunner run;
  auto backend = run([&] { return DockerSandboxBackend::create(config_for("")); });
  const SandboxKey key{argv[2], argv[3], "agent-1", ""};
  run([&] { return backend->acquire(key, spec_for(false)); });
  const std::string container = DockerSandboxBackend::container_name(key, "shell");
  auto& transport = backend->transport();
  auto slot = run([&] { return transport.endpoint(); });
  auto freeze = maf::sandbox::docker::detail::freeze_slot(slot, container);
  const std::function<boost::asio::awaitable<void>()> body = []() -> boost::asio::awaitable<void> {
    std::cout << "frozen" << std::endl;
    std::this_thread::sleep_for(std::chrono::minutes(10));  // killed long before
    co_return;
  };
  run([&] { return maf::sandbox::docker::detail::run_frozen(transport, *freeze, container, body); });
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "race") return race(argc, argv);
    if (mode == "freeze-and-hang") return freeze_and_hang(argc, argv);
    std::cerr << "usage: replica_worker race|freeze-and-hang …\n";
    return 2;
  } catch (const std::exception& e) {
    std::cout << "error setup: " << e.what() << std::endl;
    return 1;
  }
}
