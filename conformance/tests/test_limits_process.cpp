// LIMITS (docs/conformance.md "LIMITS") against the real process backend, loaded through the
// registry: every bound it declares holds (LM-1…LM-4), and its broken double — the same
// declarations, the spec's bounds and lifetime not applied — fails every probe, so none of
// them passes vacuously. Needs root cgroups (CI runs as root): an unusable tree is reported,
// never passed.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "maf/sandbox/conformance/conformance.hpp"
#include "maf/sandbox/registry.hpp"
#include "support/host_tree_sandbox.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using Ids = std::vector<std::string>;

namespace {

std::vector<ProbeResult> run_on(const nlohmann::json& config) {
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = registry.create("process", config);
  BlockingRunner runner;
  BackendLimitsSubject subject(backend, {}, runner);
  auto results = run_limits(subject);
  for (const auto& r : results) std::cout << r.id << " " << to_string(r.outcome) << " " << r.message << "\n";
  return results;
}

void require_usable_cgroups(const nlohmann::json& config) {
  if (::geteuid() != 0)
    FAIL("LIMITS on the process backend needs root cgroups here (CI runs as root); not root, nothing is bounded");
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = registry.create("process", config);
  const ResourceBoundSet bounds = backend->declarations().resource_bounds;
  std::string facts;
  for (const auto& [k, v] : backend->facts()) facts += k + ": " + v + "\n";
  INFO("process backend facts:\n" << facts);
  REQUIRE(bounds.contains(ResourceBound::Memory));
  REQUIRE(bounds.contains(ResourceBound::Processes));
  REQUIRE(bounds.contains(ResourceBound::Cpus));
}

}  // namespace

TEST_CASE("conformance LIMITS: the process backend holds every bound it declares (LM-1…LM-4, LIM-3, LIM-6, LIM-7)") {
  test::TempDir root("maf-conformance-limits");
  const nlohmann::json config{{"root", root.path().string()}};
  require_usable_cgroups(config);
  const auto results = run_on(config);
  CHECK(ids_with(results, Outcome::Pass) == Ids{"LM-1", "LM-2", "LM-3", "LM-4"});
}

TEST_CASE("conformance LIMITS: a process backend that declares bounds it does not apply fails every probe") {
  test::TempDir root("maf-conformance-limits-broken");
  const nlohmann::json config{{"root", root.path().string()}, {"test_only_unapplied_resource_bounds", true}};
  require_usable_cgroups(config);
  const auto results = run_on(config);
  CHECK(ids_with(results, Outcome::Fail) == Ids{"LM-1", "LM-2", "LM-3", "LM-4"});
}
