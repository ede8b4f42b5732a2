// LIMITS (docs/conformance.md "LIMITS", docs/limits.md) on a real engine, once per transport
// (MAF_DOCKER_TRANSPORT): the bounds Docker declares — memory, cpus, processes — hold and a
// memory kill is reported (LM-1…LM-3), and a container past its ttl is gone at the next
// acquire of its key and by reap_expired (LM-4, LIM-7). The broken double — the same
// declarations, the spec's bounds neither put on the create request nor on its labels —
// fails every probe it runs.
#include <iostream>

#include "engine_fixture.hpp"
#include "maf/sandbox/conformance/limits.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using Ids = std::vector<std::string>;

namespace {

std::vector<ProbeResult> run_on(docker::DockerConfig config) {
  docker_test::Scope scope(config);
  SandboxSpec::Fields base;
  base.image = docker_test::kImage;
  BackendLimitsSubject subject(scope.backend, base, scope.run);
  auto results = run_limits(subject);
  for (const auto& r : results) std::cout << r.id << " " << to_string(r.outcome) << " " << r.message << "\n";
  return results;
}

}  // namespace

TEST_CASE("LIMITS on Docker: memory, cpus, processes and ttl hold; a memory kill is reported (LM-1…LM-4, LIM-5…LIM-7)") {
  const auto results = run_on(docker_test::test_config());
  CHECK(ids_with(results, Outcome::Pass) == Ids{"LM-1", "LM-2", "LM-3", "LM-4"});
}

TEST_CASE("LIMITS on Docker: a backend that declares bounds it does not apply fails LM-1…LM-4") {
  auto config = docker_test::test_config();
  config.test_only_unapplied_resource_bounds = true;
  const auto results = run_on(config);
  CHECK(ids_with(results, Outcome::Fail) == Ids{"LM-1", "LM-2", "LM-3", "LM-4"});
}

TEST_CASE("LIM-5 on Docker: the spec's bounds replace the configuration's on the container; unset ones keep it") {
  auto config = docker_test::test_config();
  config.pids_limit = 300;
  config.memory = "512m";
  docker_test::Scope scope(config);
  SandboxSpec::Fields f;
  f.kind = "bounded";
  f.image = docker_test::kImage;
  f.resources = ResourceLimits({.memory_bytes = 64 << 20, .cpus = 0.5});
  auto sb = scope.acquire(SandboxSpec(f));
  CHECK(docker_test::docker_cli({"inspect", "-f", "{{.HostConfig.Memory}} {{.HostConfig.NanoCpus}} {{.HostConfig.PidsLimit}}",
                                 sb->instance_id()}) == std::to_string(64 << 20) + " 500000000 300");
  // Other bounds for the same key: another container (the bounds are part of the identity).
  f.resources = ResourceLimits({.processes = 64});
  auto other = scope.acquire(SandboxSpec(f));
  CHECK(other->instance_id() != sb->instance_id());
  CHECK(docker_test::docker_cli({"inspect", "-f", "{{.HostConfig.Memory}} {{.HostConfig.PidsLimit}}",
                                 other->instance_id()}) == std::to_string(512 << 20) + " 64");
}
