// bench_host_tools [runs]: the cost of one host-tool dispatch over exec (docs/host-tools.md
// "Cost"), on the process backend and — when an engine answers — on Docker's Engine API
// transport, beside a floor of the same file operations one dispatch makes (one stat, one
// read of the request, two writes: the response and its .done marker) issued directly
// through the same sandbox.
//
// One dispatch's cost is measured as a difference, so the run's fixed costs (writing the
// launcher and clients, the start probe, the exec, reclaiming the run directory) cancel:
// (a program making N calls) − (the same program making none), over N. Both alternate within
// one process with the floor, so machine drift hits all alike. Each row is run at the
// default poll interval (20 ms) and at 1 ms, which gives the host's polling share; the guest
// client's own 20 ms wait for the answer is fixed in the client and is in both.
//
// Calls per dispatch: the sandbox's transfer events (reads and writes, OBS-5) and the
// supervisor's empty polls (each one stat), over the calls made.
// Prints markdown for bench/RESULTS.md ("host tools"); no assertion, numbers are recorded.
#include <unistd.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "../common/harness.hpp"
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/host_tools.hpp"
#include "maf/sandbox/host_tools_over_exec.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sync.hpp"

namespace {

namespace fs = std::filesystem;
using namespace maf::sandbox;
using maf_bench::median;
using maf_bench::timed;

constexpr int kCalls = 10;

/// Counts the sandbox's reads and writes (TransferEvents), the file operations a dispatch
/// makes besides its stats.
class TransferCounter final : public SandboxObserver {
public:
  void on_event(const SandboxEvent& event) override {
    if (std::holds_alternative<TransferEvent>(event)) ++transfers;
  }
  std::atomic<long> transfers{0};
};

struct Measured {
  std::string backend;
  double dispatch_ms = 0;       // default poll interval
  double dispatch_fast_ms = 0;  // 1 ms poll interval
  double floor_ms = 0;
  double transfers_per_call = 0;
  double stats_per_call = 0;  // 1 hit + the empty polls
  int runs = 0;
};

std::unique_ptr<HostToolRegistry> echo_registry() {
  auto r = std::make_unique<HostToolRegistry>();
  r->add({.name = "echo",
          .declaration = HostToolDeclaration(Integrity::Trusted, std::nullopt, Identity::App),
          .function = [](const nlohmann::json& a, const HostToolCallContext&) { return a; }});
  r->aggregate();
  return r;
}

Measured measure(const std::string& name, Sandbox& sb, const SandboxKey& key, int runs) {
  BlockingRunner run;
  auto counter = std::make_shared<TransferCounter>();
  sb.attach_observers(std::make_shared<const ObserverSet>(ObserverSet{{counter}}), key);
  auto registry = echo_registry();
  const std::string calls = "i=0; while [ $i -lt " + std::to_string(kCalls) +
                            " ]; do maf-host-tool echo '{\"n\":1}' >/dev/null || exit 3; i=$((i+1)); done";
  auto program = [&](const std::string& shell, std::chrono::milliseconds poll) {
    HostToolRun hr(*registry);
    const HostToolProgram p{.command = Command(shell), .poll_interval = poll};
    return run([&] { return run_with_host_tools(sb, hr, p); });
  };
  const std::string request = R"({"id":"0001","name":"echo","arguments":{"n":1}})";
  run([&] { return sb.write_file("floor.request.json", request, "."); });

  std::vector<double> per[2], floor;
  double transfers = 0, stats = 0;
  for (int i = 0; i < runs; ++i) {
    for (int p = 0; p < 2; ++p) {
      const auto poll = std::chrono::milliseconds(p == 0 ? 20 : 1);
      HostToolProgramResult none, some;
      const double t0 = timed([&] { none = program("true", poll); });
      const long before = counter->transfers.load();
      const double tn = timed([&] { some = program(calls, poll); });
      maf_bench::require(some.exit_code == 0 && some.requests == kCalls, name + ": the calling program failed");
      per[p].push_back((tn - t0) / kCalls);
      if (p == 0) {
        // The run's own transfers (launcher, clients, output) are the zero-call run's too.
        const long fixed = 3 + 1;  // three files written, the output read
        transfers += static_cast<double>(counter->transfers.load() - before - fixed) / kCalls;
        stats += 1.0 + static_cast<double>(some.empty_polls) / kCalls;
      }
    }
    floor.push_back(timed([&] {
      run([&]() -> boost::asio::awaitable<void> {
        (void)co_await sb.stat_file("floor.request.json", ".");
        (void)co_await sb.read_file("floor.request.json", ".");
        co_await sb.write_file("floor.response", "ok\n{\"n\":1}", ".");
        co_await sb.write_file("floor.done", "", ".");
      });
    }));
  }
  return {name, median(per[0]), median(per[1]), median(floor), transfers / runs, stats / runs, runs};
}

void print(const std::vector<Measured>& rows) {
  std::printf("| backend | one dispatch, poll 20 ms | one dispatch, poll 1 ms | floor: stat + read + 2 writes | "
              "ratio (20 ms) | ratio (1 ms) | host polling share | reads+writes per dispatch | stats per dispatch "
              "| runs |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& r : rows) {
    const double share = r.dispatch_ms > 0 ? (r.dispatch_ms - r.dispatch_fast_ms) / r.dispatch_ms : 0;
    std::printf("| %s | %.1f ms | %.1f ms | %.1f ms | %.2f× | %.2f× | %.0f %% | %.1f | %.1f | %d |\n", r.backend.c_str(),
                r.dispatch_ms, r.dispatch_fast_ms, r.floor_ms, r.dispatch_ms / r.floor_ms,
                r.dispatch_fast_ms / r.floor_ms, 100 * share, r.transfers_per_call, r.stats_per_call, r.runs);
  }
}

bool engine_answers() {
  const char* client = std::getenv("MAF_SANDBOX_DOCKER");
  const std::string cmd = std::string(client && *client ? client : "docker") + " version >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

SandboxSpec host_tools_spec(std::optional<std::string> image) {
  SandboxSpec::Fields f;
  f.kind = "host-tools";
  f.requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::HostTools};
  if (image) f.image = *image;
  return SandboxSpec(std::move(f));
}

}  // namespace

int main(int argc, char** argv) try {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  std::vector<Measured> rows;
  BlockingRunner run;
  const std::string scope = "bench-ht-" + std::to_string(::getpid());
  {
    const fs::path root = fs::temp_directory_path() / ("maf-bench-host-tools-" + std::to_string(::getpid()));
    fs::create_directories(root);
    fs::permissions(root, fs::perms(0711));  // traversable by the guest's host uid
    process::ProcessBackendConfig c;
    c.root = root;
    auto backend = process::make_process_backend(c);
    const SandboxKey key{scope, "t", "process", ""};
    auto sb = run([&] { return backend->acquire(key, host_tools_spec(std::nullopt)); });
    std::fprintf(stderr, "process backend: %d runs\n", runs);
    rows.push_back(measure("process (bubblewrap)", *sb, key, runs));
    run([&] { return backend->dispose_scope(scope, "t"); });
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  if (engine_answers() && !std::getenv("MAF_BENCH_HOST_TOOLS_NO_DOCKER")) {
    maf_bench::sweep_on_interrupt("label=maf-sandbox.scope=" + scope);
    namespace dk = maf::sandbox::docker;
    dk::DockerConfig config;
    config.transport = dk::DockerTransportKind::Api;
    auto backend = run([&] { return dk::DockerSandboxBackend::create(config); });
    const SandboxKey key{scope, "t", "docker", ""};
    auto sb = run([&] { return backend->acquire(key, host_tools_spec("maf-sandbox-test/busybox:1")); });
    const int docker_runs = std::max(1, runs / 2);
    std::fprintf(stderr, "docker (Engine API): %d runs\n", docker_runs);
    rows.push_back(measure("Docker, Engine API", *sb, key, docker_runs));
    run([&] { return backend->dispose_scope(scope, "t"); });
    maf_bench::sweep_engine("label=maf-sandbox.scope=" + scope);
  }
  print(rows);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_host_tools: %s\n", e.what());
  return 1;
}
