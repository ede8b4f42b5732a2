// effective_state (effective_state.hpp, docs/observability.md OBS-8): the served
// configuration, never payloads; a refused spec and an unknown rung refused by name.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/effective_state.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;

TEST_CASE("OBS-8: effective_state records backend, rung, floor, egress, limits and cleanup rung") {
  auto backend = std::make_shared<InProcessSandboxBackend>();
  SandboxRouter router({backend}, RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{}));
  const SandboxSpec spec({.kind = "fetch",
                          .egress_allow = {EgressEntry("api.example.com")},
                          .labels = {{"secret-ish", "label values are not part of the record"}},
                          .files_out = TransferLimits(10, 100, 3),
                          .egress = Egress::Allowlist});
  const auto j = nlohmann::json::parse(effective_state(router, spec, "reclaim"));
  CHECK(j["version"] == 1);
  CHECK(j["backend"] == "in-process");
  CHECK(j["isolation"] == "none");
  CHECK(j["floor"] == "none");
  CHECK(j["selection"] == "fixed");
  CHECK(j["kind"] == "fetch");
  CHECK(j["egress"] == "allowlist");
  CHECK(j["egress_allow"] == nlohmann::json::array({"api.example.com"}));
  CHECK(j["limits"]["files_out"]["max_bytes_per_file"] == 10);
  CHECK(j["limits"]["files_out"]["max_files"] == 3);
  CHECK(j["backend_limits"]["files_in"]["max_total_bytes"] == kDefaultTransferLimits.max_total_bytes());
  CHECK(j["cleanup_rung"] == "reclaim");
  CHECK(j["requires"] == nlohmann::json::array({"exec", "files_in"}));
  CHECK_FALSE(j.contains("labels"));
  CHECK(effective_state(router, spec).find("secret-ish") == std::string::npos);
}

TEST_CASE("OBS-8: effective_state refuses what the router would refuse, and an unknown rung") {
  auto backend = std::make_shared<InProcessSandboxBackend>();
  SandboxRouter router({backend}, RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{}));
  const SandboxSpec snapshot({.kind = "k", .requires_capabilities = {Capability::Exec, Capability::Snapshot}});
  CHECK_THROWS_AS(effective_state(router, snapshot), SandboxCapabilityNotSupported);
  const SandboxSpec plain({.kind = "k"});
  CHECK_THROWS_WITH(effective_state(router, plain, "scrub"), Catch::Contains("'scrub'"));
  SandboxRouter disabled({});
  CHECK_THROWS_AS(effective_state(disabled, plain), NoSandboxBackend);
}
