// The plugin as a host reaches it: loaded by the registry, selected by the router, outputs
// collected into a sink (the Docker scenario DX-11).
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "engine_fixture.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/registry.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sink.hpp"

using namespace maf::sandbox;
using namespace docker_test;

namespace {
class CapturingSink final : public OutputSink {
public:
  std::vector<Artifact> delivered;
  boost::asio::awaitable<LandedArtifact> deliver(Artifact artifact) override {
    delivered.push_back(artifact);
    co_return LandedArtifact{artifact.name, artifact.name + " (" + std::to_string(artifact.content.size()) + " bytes)"};
  }
};
}  // namespace

TEST_CASE("DX-11: outputs through the router, with the backend loaded as a plugin") {
  int code = -1;
  docker_cli({"version"}, &code);
  REQUIRE(code == 0);  // an engine must answer: never a skip
  PluginRegistry registry({MAF_DOCKER_TEST_PLUGIN_DIR});
  auto backend = registry.create("docker", nlohmann::json{{"docker_path", docker_path()}, {"transport", transport_name()}});
  REQUIRE(backend);
  CHECK(backend->name() == "docker");
  // The factory binds and asks the daemon, like Python's create().
  CHECK(backend->declarations().os_families == OsFamilySet{OsFamily::Posix});
  CHECK_THROWS_AS(registry.create("docker", nlohmann::json{{"no_such_key", 1}}), ValueError);

  SandboxRouter router({backend}, RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{}));
  SandboxSpec::Fields f;
  f.kind = "render";
  f.image = kImage;
  f.requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut};
  f.declared_outputs = {DeclaredOutput{.path = "result.txt", .media_type = "text/plain"}};
  f.files_out = TransferLimits{1 << 20, 1 << 20, 4};
  SandboxSpec spec(std::move(f));
  const SandboxKey key{"e2e-" + random_hex(), "thread-1", "agent-1", ""};

  BlockingRunner run;
  auto sandbox = run([&] { return router.acquire(key, spec); });
  CHECK(run([&] { return sandbox->exec("echo rendered > result.txt"); }).exit_code == 0);
  auto sink = std::make_shared<CapturingSink>();
  auto landed = run([&] { return collect_outputs(*sandbox, spec, sink); });
  CHECK(landed.size() == 1);
  REQUIRE(sink->delivered.size() == 1);
  CHECK(sink->delivered[0].content == "rendered\n");
  CHECK(sink->delivered[0].media_type == "text/plain");
  auto purge = run([&] { return backend->dispose_scope(key.scope, key.thread_id); });
  CHECK(purge.disposed == 1);
  CHECK_FALSE(purge.undisposed.has_value());
}

TEST_CASE("issue 24: with no transport configured, a host on the engine's own socket gets the Engine API, "
          "and the backend says so in its facts (what `maf-sandbox plugins` prints)") {
  int code = -1;
  docker_cli({"version"}, &code);
  REQUIRE(code == 0);  // an engine must answer: never a skip
  // What auto sees on a test machine: the engine on the default socket (scripts/docker-engine
  // starts it there), no DOCKER_HOST and no named context.
  REQUIRE(std::getenv("DOCKER_HOST") == nullptr);
  PluginRegistry registry({MAF_DOCKER_TEST_PLUGIN_DIR});
  auto backend = registry.create("docker", nlohmann::json::object());
  const auto listed = backend->facts();
  std::map<std::string, std::string> facts(listed.begin(), listed.end());
  CHECK(facts["transport"] == "api");
  CHECK(facts["transport_reason"].find("/var/run/docker.sock") != std::string::npos);
  // It really is the API: the client auto would otherwise use is a tripwire named `docker`
  // (so auto still judges it docker's own client) that records any call and fails. A round
  // trip through the defaulted transport works, and the tripwire was never called.
  const auto trip_dir = std::filesystem::temp_directory_path() / ("maf-docker-tripwire-" + random_hex());
  std::filesystem::create_directories(trip_dir);
  const auto trip = trip_dir / "docker";
  const auto trip_log = trip_dir / "calls";
  {
    std::ofstream script(trip);
    script << "#!/bin/sh\necho \"$*\" >> '" << trip_log.string() << "'\nexit 1\n";
  }
  std::filesystem::permissions(trip, std::filesystem::perms::owner_all);
  auto tripped = [&] {
    std::ifstream in(trip_log);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto via_api = registry.create("docker", nlohmann::json{{"docker_path", trip.string()}});
  const auto api_listed = via_api->facts();
  CHECK(std::map<std::string, std::string>(api_listed.begin(), api_listed.end())["transport"] == "api");
  const SandboxKey key{"e2e-" + random_hex(), "thread-1", "agent-1", ""};
  BlockingRunner run;
  auto sandbox = run([&] { return via_api->acquire(key, spec_for(kImage, kAllCaps)); });
  CHECK(run([&] { return sandbox->exec("echo via-auto"); }).stdout_text() == "via-auto\n");
  CHECK_FALSE(run([&] { return via_api->dispose_scope(key.scope, key.thread_id); }).undisposed);
  CHECK(tripped().empty());
  // The tripwire can fail this: the CLI transport bound to it calls it, and is refused.
  auto via_trip = registry.create("docker", nlohmann::json{{"docker_path", trip.string()}, {"transport", "cli"}});
  const SandboxKey trip_key{"e2e-" + random_hex(), "thread-1", "agent-1", ""};
  CHECK_THROWS(run([&] { return via_trip->acquire(trip_key, spec_for(kImage, kAllCaps)); }));
  CHECK_FALSE(tripped().empty());
  std::filesystem::remove_all(trip_dir);
  // The named transports still bind what they name.
  auto cli = registry.create("docker", nlohmann::json{{"transport", "cli"}});
  const auto cli_listed = cli->facts();
  std::map<std::string, std::string> cli_facts(cli_listed.begin(), cli_listed.end());
  CHECK(cli_facts["transport"] == "cli");
}
