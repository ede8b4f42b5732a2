// host.hpp: SandboxHost loads a backend by name through the global plugin registry, holds
// the router over it and opens blocking sandboxes through its policy (issue 27: the light
// entry). Run against the real test plugin file (the in-process double behind the plugin
// ABI), found through MAF_SANDBOX_PLUGIN_PATH as a host would find it.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "maf/sandbox.hpp"
#include "maf/sandbox/registry.hpp"
#include "unit/temp_dir.hpp"

using namespace maf::sandbox;

namespace {

/// The global registry discovers once, lazily: point it at the good test plugin before any
/// test here touches it.
const bool kPluginPathSet = [] {
  ::setenv("MAF_SANDBOX_PLUGIN_PATH", MAF_TEST_PLUGIN_ROOT "/good", 1);
  return true;
}();

SandboxSpec spec() {
  return SandboxSpec({.kind = "report",
                      .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                      .declared_outputs = {{.path = "summary.txt"}}});
}

const SandboxKey kKey{"tenant", "conversation-1", "agent", ""};

}  // namespace

TEST_CASE("issue 27: SandboxHost opens a backend by name and serves the five calls through its policy") {
  REQUIRE(kPluginPathSet);
  SandboxHost host("test-good", {}, R"({"outputs": {"report": "made the report\n"}})");
  BlockingSandbox sandbox = host.open(kKey, spec());
  sandbox.write("summary.txt", "three rows\n");
  CHECK(sandbox.read("summary.txt") == "three rows\n");
  const ExecResult result = sandbox.run({"sh", "-c", "report"});
  CHECK(result.exit_code == 0);
  CHECK(result.stdout_text() == "made the report\n");
  test::TempDir out;
  const auto landed = sandbox.collect_into(out.path());
  REQUIRE(landed.size() == 1);
  std::ifstream in(out.path() / "summary.txt");
  std::stringstream body;
  body << in.rdbuf();
  CHECK(body.str() == "three rows\n");
  CHECK(sandbox.close());
  CHECK(sandbox.closed());
}

TEST_CASE("issue 27 C-65: SandboxHost adds no policy — a refusal is the router's, before anything is acquired") {
  // The test double declares microvm; a floor above it refuses at construction (C-62).
  CHECK_THROWS_AS(SandboxHost("test-good", {.min_isolation = Isolation::Vm}), SandboxBackendNotPermitted);
  SandboxHost host("test-good", {.denied_capabilities = {Capability::FilesOut}});
  CHECK_THROWS_AS(host.ensure_can_serve(spec()), SandboxCapabilityDenied);
  CHECK_THROWS_AS(host.open(kKey, spec()), SandboxCapabilityDenied);
}

TEST_CASE("issue 27: SandboxHost refuses an unknown backend and a configuration that is not a JSON object, naming them") {
  try {
    SandboxHost host("no-such-backend");
    FAIL("an unknown backend was created");
  } catch (const NoSandboxBackend& e) {
    CHECK_THAT(e.what(), Catch::Contains("no-such-backend"));
  }
  try {
    SandboxHost host("test-good", {}, "{not json");
    FAIL("text that is not JSON was accepted");
  } catch (const ValueError& e) {
    CHECK_THAT(e.what(), Catch::Contains("test-good") && Catch::Contains("is not JSON") && Catch::Contains("{not json"));
  }
  try {
    SandboxHost host("test-good", {}, "[1, 2]");
    FAIL("a JSON array was accepted as a configuration");
  } catch (const ValueError& e) {
    CHECK_THAT(e.what(), Catch::Contains("must be a JSON object") && Catch::Contains("array"));
  }
  try {
    SandboxHost host("test-good", {}, R"({"no_such_key": 1})");
    FAIL("an unknown configuration key was accepted");
  } catch (const ValueError& e) {
    CHECK_THAT(e.what(), Catch::Contains("no_such_key"));
  }
}
