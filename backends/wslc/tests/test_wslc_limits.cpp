// LIMITS (docs/conformance.md "LIMITS", docs/limits.md) on the wslc backend through the shim
// and a real engine: the one bound wslc declares, cpus, holds (LM-3); the bounds it does not
// declare — memory, processes, ttl (C-23, docs/backends/wslc.md "Resource bounds") — are
// skipped by the suite. The broken double — the same declarations, the spec's cpus named but
// not put on the container — fails exactly LM-3.
#include <iostream>

#include "engine_fixture.hpp"
#include "maf/sandbox/conformance/limits.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace wslc_test;
using Ids = std::vector<std::string>;

namespace {

std::vector<ProbeResult> run_on(wslc::WslcConfig config) {
  Engine engine(std::move(config));
  SandboxSpec::Fields base;
  base.image = kImage;
  BackendLimitsSubject subject(engine.backend, base, engine.run);
  auto results = run_limits(subject);
  for (const auto& r : results) std::cout << r.id << " " << to_string(r.outcome) << " " << r.message << "\n";
  CHECK(engine.unsupported_calls() == 0);
  return results;
}

/// HostConfig.NanoCpus of the container the sandbox runs in.
std::string nano_cpus(const Sandbox& sb) {
  return docker_cli({"inspect", "-f", "{{.HostConfig.NanoCpus}}", sb.instance_id()});
}

SandboxSpec bounded(ResourceLimits resources) {
  SandboxSpec::Fields f;
  f.kind = "bounded";
  f.image = kImage;
  f.requires_capabilities = kCaps;
  f.resources = std::move(resources);
  return SandboxSpec(std::move(f));
}

}  // namespace

TEST_CASE("LIMITS on wslc (C-23): cpus holds (LM-3); memory, processes and ttl are undeclared and skipped") {
  const auto results = run_on(shim_config());
  CHECK(ids_with(results, Outcome::Pass) == Ids{"LM-3"});
  CHECK(ids_with(results, Outcome::Skip) == Ids{"LM-1", "LM-2", "LM-4"});
}

TEST_CASE("LIMITS on wslc: a backend that declares cpus but does not apply it fails LM-3") {
  auto config = shim_config();
  config.test_only_unapplied_resource_bounds = true;
  const auto results = run_on(config);
  CHECK(ids_with(results, Outcome::Fail) == Ids{"LM-3"});
  CHECK(ids_with(results, Outcome::Skip) == Ids{"LM-1", "LM-2", "LM-4"});
}

TEST_CASE("LIM-5/C-23 through the shim: the spec's cpus over the configuration's, in the name and on the container") {
  auto config = shim_config();
  config.cpus = 0.25;
  Engine engine(config);
  auto half = engine.acquire(bounded(ResourceLimits({.cpus = 0.5})));
  CHECK(nano_cpus(*half) == "500000000");
  // Unset in the spec: the configuration's applies, on another container (LIM-5).
  auto plain = engine.acquire(bounded(ResourceLimits{}));
  CHECK(plain->instance_id() != half->instance_id());
  CHECK(nano_cpus(*plain) == "250000000");
  // The same bounds again: the same container.
  auto again = engine.acquire(bounded(ResourceLimits({.cpus = 0.5})));
  CHECK(again->instance_id() == half->instance_id());
  // The argv wslc got (S-11): --cpus in fixed notation before the image.
  int runs_with_cpus = 0;
  for (const auto& call : engine.calls()) {
    const auto argv = call["argv"].get<std::vector<std::string>>();
    if (argv.size() < 2 || argv[0] != "container" || argv[1] != "run") continue;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "--cpus") {
        ++runs_with_cpus;
        CHECK((argv[i + 1] == "0.5" || argv[i + 1] == "0.25"));
      }
  }
  CHECK(runs_with_cpus == 2);
  CHECK(engine.unsupported_calls() == 0);
}

TEST_CASE("S-4/C-23: the shim gives the engine what wslc would — nano-CPUs truncated, no more") {
  Engine engine;
  // wslc converts with static_cast<int64_t>(cpus * 1e9): 1.001 * 1e9 is 1000999999.9999999
  // in doubles, so 1000999999 nano-CPUs; Docker's own decimal parse would give 1001000000.
  auto sb = engine.acquire(bounded(ResourceLimits({.cpus = 1.001})));
  CHECK(nano_cpus(*sb) == "1000999999");
}
