// Resource bounds (resource_limits.hpp, docs/limits.md): LIM-1/LIM-2 validation at
// construction, the JSON form, the router's LIM-3 refusal naming the bound, and
// effective_state's record of them (LIM-4).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/effective_state.hpp"
#include "maf/sandbox/spec_json.hpp"
#include "maf/sandbox/sync.hpp"
#include "unit/policy_fakes.hpp"

using namespace maf::sandbox;
using Catch::Contains;
using maf::sandbox::test::generous_declarations;
using maf::sandbox::test::PolicyFakeBackend;
using std::chrono::seconds;

namespace {

std::string value_error(ResourceLimits::Fields f) {
  try {
    ResourceLimits limits(f);
  } catch (const ValueError& e) {
    return e.what();
  }
  FAIL("ResourceLimits accepted an out-of-range value");
  return {};
}

SandboxSpec bounded(ResourceLimits::Fields f) { return SandboxSpec({.kind = "hog", .resources = ResourceLimits(f)}); }

std::shared_ptr<PolicyFakeBackend> enforcing(ResourceBoundSet bounds) {
  BackendDeclarations d = generous_declarations();
  d.resource_bounds = bounds;
  return std::make_shared<PolicyFakeBackend>("b", "vm", d);
}

}  // namespace

TEST_CASE("LIM-1: unset bounds ask nothing; a default spec asks no bound") {
  CHECK(ResourceLimits{}.empty());
  CHECK(SandboxSpec({.kind = "k"}).resources().asked().empty());
  CHECK(ResourceLimits{}.to_string() == "none");
  const ResourceLimits all({.memory_bytes = 512 << 20, .cpus = 1.5, .processes = 128, .ttl = seconds(1800),
                            .idle_timeout = seconds(600)});
  CHECK(all.asked() == ResourceBoundSet{ResourceBound::Memory, ResourceBound::Cpus, ResourceBound::Processes,
                                        ResourceBound::Ttl, ResourceBound::IdleTimeout});
  CHECK(all.to_string() == "memory_bytes=536870912, cpus=1.5, processes=128, ttl=1800s, idle_timeout=600s");
}

TEST_CASE("LIM-2: zero, negative, absurd and too-short values are refused naming the field and the value") {
  CHECK_THAT(value_error({.memory_bytes = 0}), Contains("ResourceLimits.memory_bytes") && Contains("got 0"));
  CHECK_THAT(value_error({.memory_bytes = -1}), Contains("memory_bytes") && Contains("got -1"));
  CHECK_THAT(value_error({.memory_bytes = 1024}), Contains("memory_bytes") && Contains("got 1024"));
  CHECK_THAT(value_error({.memory_bytes = std::int64_t{1} << 50}), Contains("memory_bytes"));
  CHECK_THAT(value_error({.cpus = 0.0}), Contains("ResourceLimits.cpus") && Contains("got 0"));
  CHECK_THAT(value_error({.cpus = -2}), Contains("cpus") && Contains("got -2"));
  CHECK_THAT(value_error({.cpus = 1e6}), Contains("cpus"));
  CHECK_THAT(value_error({.cpus = std::numeric_limits<double>::quiet_NaN()}), Contains("cpus"));
  CHECK_THAT(value_error({.processes = 0}), Contains("ResourceLimits.processes") && Contains("got 0"));
  CHECK_THAT(value_error({.processes = 1}), Contains("processes") && Contains("got 1"));
  CHECK_THAT(value_error({.processes = 1LL << 40}), Contains("processes"));
  CHECK_THAT(value_error({.ttl = seconds(0)}), Contains("ResourceLimits.ttl") && Contains("got 0 s"));
  CHECK_THAT(value_error({.ttl = seconds(3)}), Contains("ttl") && Contains("got 3 s"));
  CHECK_THAT(value_error({.ttl = seconds(-5)}), Contains("ttl") && Contains("got -5 s"));
  CHECK_THAT(value_error({.ttl = seconds(400LL * 24 * 3600)}), Contains("ttl"));
  CHECK_THAT(value_error({.idle_timeout = seconds(1)}), Contains("ResourceLimits.idle_timeout") && Contains("got 1 s"));
  CHECK_THAT(value_error({.ttl = seconds(60), .idle_timeout = seconds(120)}),
             Contains("idle_timeout (120 s) exceeds ttl (60 s)"));
  // The boundaries themselves are accepted.
  CHECK_NOTHROW(ResourceLimits({.memory_bytes = ResourceLimits::kMinMemoryBytes, .cpus = ResourceLimits::kMinCpus,
                                .processes = ResourceLimits::kMinProcesses, .ttl = ResourceLimits::kMinLifetime,
                                .idle_timeout = ResourceLimits::kMinLifetime}));
}

TEST_CASE("LIM-1: the JSON form round-trips and refuses by field") {
  const auto spec = spec_from_json(nlohmann::json::parse(
      R"({"kind": "k", "resources": {"memory_bytes": 67108864, "cpus": 0.5, "processes": 64, "ttl_seconds": 60,
          "idle_timeout_seconds": 30}})"));
  CHECK(spec.resources() == ResourceLimits({.memory_bytes = 64 << 20, .cpus = 0.5, .processes = 64,
                                            .ttl = seconds(60), .idle_timeout = seconds(30)}));
  CHECK(spec_from_json(spec_to_json(spec)).resources() == spec.resources());
  CHECK_FALSE(spec_to_json(SandboxSpec({.kind = "k"})).contains("resources"));
  auto refusal = [](const char* text) {
    try {
      (void)spec_from_json(nlohmann::json::parse(text));
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refusal(R"({"kind": "k", "resources": {"memory_bytes": 0}})"),
             Contains("spec field 'resources'") && Contains("memory_bytes") && Contains("got 0"));
  CHECK_THAT(refusal(R"({"kind": "k", "resources": {"cpus": "two"}})"), Contains("resources.cpus"));
  CHECK_THAT(refusal(R"({"kind": "k", "resources": {"ttl": 60}})"), Contains("unknown key 'ttl'"));
  CHECK_THAT(refusal(R"({"kind": "k", "resources": {"ttl_seconds": 2}})"), Contains("ttl") && Contains("got 2 s"));
}

TEST_CASE("LIM-3: a bound the backend does not declare is refused, naming the bound; never served unbounded") {
  SandboxRouter silent({enforcing({})});
  CHECK_NOTHROW(silent.ensure_can_serve(SandboxSpec({.kind = "k"})));
  try {
    silent.ensure_can_serve(bounded({.memory_bytes = 64 << 20}));
    FAIL("a memory bound was served by a backend that enforces none");
  } catch (const SandboxResourceBoundNotEnforced& e) {
    CHECK(e.bound() == "memory");
    CHECK_THAT(std::string(e.what()), Contains("backend 'b' does not enforce resource bound memory") &&
                                          Contains("workload kind 'hog'") && Contains("memory_bytes=67108864") &&
                                          Contains("it enforces: no resource bound"));
  }
  SandboxRouter partial({enforcing({ResourceBound::Memory, ResourceBound::Processes})});
  CHECK_NOTHROW(partial.ensure_can_serve(bounded({.memory_bytes = 64 << 20, .processes = 32})));
  try {
    partial.ensure_can_serve(bounded({.memory_bytes = 64 << 20, .cpus = 1, .ttl = seconds(60)}));
    FAIL("cpus and ttl were served by a backend that enforces neither");
  } catch (const SandboxResourceBoundNotEnforced& e) {
    CHECK(e.bound() == "cpus");  // the first missing bound in canonical order
    CHECK_THAT(std::string(e.what()), Contains("resource bound cpus, ttl") && Contains("enforces: memory, processes"));
  }
  // A policy refusal like the others (docs/policy.md "Catching the policy said no").
  CHECK_THROWS_AS(partial.ensure_can_serve(bounded({.idle_timeout = seconds(60)})), SandboxPolicyRefusal);
  // acquire runs the same check (C-69) and never reaches the backend.
  auto backend = enforcing({});
  SandboxRouter router({backend});
  BlockingRunner run;
  CHECK_THROWS_AS(run(router.acquire(SandboxKey{"s", "t", "a", "c"}, bounded({.processes = 8}))),
                  SandboxResourceBoundNotEnforced);
  CHECK(backend->acquired.empty());
}

TEST_CASE("LIM-3 / C-65: the bound check runs after every check of C-65/C-68") {
  BackendDeclarations d = generous_declarations();
  d.egress_modes = {};
  SandboxRouter router({std::make_shared<PolicyFakeBackend>("b", "vm", d)});
  CHECK_THROWS_AS(router.ensure_can_serve(bounded({.memory_bytes = 64 << 20})), SandboxEgressNotEnforced);
}

TEST_CASE("LIM-4: effective_state records the spec's bounds and what the backend enforces") {
  SandboxRouter router({enforcing({ResourceBound::Memory, ResourceBound::Ttl})});
  const auto j = nlohmann::json::parse(effective_state(router, bounded({.memory_bytes = 64 << 20, .ttl = seconds(90)})));
  CHECK(j["resources"] == nlohmann::json({{"memory_bytes", 64 << 20}, {"ttl_seconds", 90}}));
  CHECK(j["backend_resource_bounds"] == nlohmann::json::array({"memory", "ttl"}));
  const auto none = nlohmann::json::parse(effective_state(router, SandboxSpec({.kind = "k"})));
  CHECK(none["resources"] == nlohmann::json::object());
}
