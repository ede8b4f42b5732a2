// update_egress on Docker (issue 46 item 8; bench/RESULTS.md "Live egress and brokering"): the
// latency of one checked live update — the router's checks, one exec of the proxy's
// --control-send in the proxy's container, the proxy's reply — beside the floor of one exec
// `true` in the workload over the same transport (the one engine round trip the update cannot
// avoid). Alternating narrow / widen / exec within each round, per transport.
// Usage: bench_live_egress [runs] (default 15). Needs an engine, the proxy image (tag from
// $MAF_SANDBOX_EGRESS_PROXY_IMAGE, else maf-sandbox-egress-proxy:local) with the live-policy
// feature, and maf-sandbox-test/busybox:1. Leaves no container or network behind.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/harness.hpp"
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/sync.hpp"

using namespace maf::sandbox;
namespace dk = maf::sandbox::docker;
using maf_bench::median;
using maf_bench::require;
using maf_bench::timed;

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 15;
  const std::string scope = "bench-live-" + std::to_string(::getpid());
  const std::string network = "maf-bench-live-" + std::to_string(::getpid());
  maf_bench::sweep_on_interrupt("label=maf-sandbox.scope=" + scope);
  const char* image = std::getenv("MAF_SANDBOX_EGRESS_PROXY_IMAGE");
  require(std::system(("docker network create --internal " + network + " >/dev/null").c_str()) == 0,
          "docker network create");
  std::printf("| transport | update_egress (ms) | exec `true` (ms) | ratio | goal |\n|---|---:|---:|---:|---|\n");
  int status = 0;
  for (const auto kind : {dk::DockerTransportKind::Cli, dk::DockerTransportKind::Api}) {
    BlockingRunner run;
    std::shared_ptr<dk::DockerSandboxBackend> backend;
    try {
      dk::DockerConfig config;
      config.transport = kind;
      config.egress_proxy_image = image && *image ? image : "maf-sandbox-egress-proxy:local";
      config.outbound_network = network;
      config.egress_inhibit_ipv4_fallback = true;  // D-32: this engine may predate 28
      backend = run([&] { return dk::DockerSandboxBackend::create(config); });
      SandboxRouter router({backend}, RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{}));
      SandboxSpec::Fields f;
      f.kind = "live";
      f.image = "maf-sandbox-test/busybox:1";
      f.egress = Egress::Allowlist;
      f.egress_allow = {std::string("a.test"), std::string("b.test")};
      SandboxSpec wide(std::move(f));
      const SandboxKey key{scope, "t"};
      auto sandbox = run([&] { return backend->acquire(key, wide); });
      require(!live_egress_refusal(*sandbox), "the sandbox declares no live egress update (proxy image without live-policy?)");
      const std::vector<EgressEntry> narrow{std::string("a.test")};
      const std::vector<EgressEntry> both{std::string("a.test"), std::string("b.test")};
      std::vector<double> updates, execs;
      SandboxSpec current = wide;
      for (int i = 0; i < runs; ++i) {
        for (const auto* allow : {&narrow, &both}) {
          updates.push_back(timed([&] {
            auto result = run([&] { return update_egress(router, sandbox, current, *allow); });
            current = result.spec;
          }));
        }
        execs.push_back(timed([&] { run([&] { return sandbox->exec(Command{"true"}); }); }));
      }
      const double u = median(updates), e = median(execs);
      std::printf("| %s | %.1f | %.1f | %.2f | update <= 50 ms |\n", kind == dk::DockerTransportKind::Cli ? "cli" : "api",
                  u, e, u / e);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "bench_live_egress: %s\n", ex.what());
      status = 1;
    }
    if (backend) try {
        run([&] { return backend->dispose_scope(scope, "t"); });
      } catch (...) {
      }
  }
  maf_bench::sweep_engine("label=maf-sandbox.scope=" + scope);
  std::system(("docker network rm " + network + " >/dev/null 2>&1").c_str());
  return status;
}
