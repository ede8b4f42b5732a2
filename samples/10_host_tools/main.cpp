// Guest code calls a host function: a shell script in the sandbox asks the host's `lookup`
// for a customer record and writes the answer to a declared output, which the host then
// collects into a landing directory.
//
//   host_tools [--backend process|docker] LANDING_DIR
//
// The registry is the one door (docs/host-tools.md): only `lookup` is reachable, its
// declaration says what it brings in and whose authority it uses, its arguments are checked
// against its schema in the host, and the run's calls are capped. The spec carries the
// registry's sealed aggregate, so the router checks the same surface the run dispatches.
#include <maf/sandbox/async.hpp>
#include <maf/sandbox/host_tools.hpp>
#include <maf/sandbox/host_tools_over_exec.hpp>
#include <maf/sandbox/registry.hpp>
#include <maf/sandbox/sync.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

using namespace maf::sandbox;
using nlohmann::json;

namespace {

// What the guest may ask: the host's own data, never reachable from the guest otherwise.
const std::map<int, std::string> kCustomers = {{7, "Ada Lovelace"}, {8, "Grace Hopper"}};

// The guest program: model-written code, in real use. It calls the host twice (one id the
// host knows, one it does not) and leaves its findings in out/answer.json.
constexpr const char* kGuestScript = R"(set -u
mkdir -p out
known=$(maf-host-tool lookup '{"id": 7}') || exit 3
unknown=$(maf-host-tool lookup '{"id": 99}' 2>&1) && exit 4
printf '{"known": %s, "unknown_refused": true}\n' "$known" > out/answer.json
echo "guest: the host answered $known"
echo "guest: and refused id 99: $unknown"
)";

}  // namespace

int main(int argc, char** argv) {
  std::string backend_name = "process";
  std::filesystem::path landing;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) backend_name = argv[++i];
    else landing = a;
  }
  if (landing.empty() || (backend_name != "process" && backend_name != "docker")) {
    std::cerr << "usage: host_tools [--backend process|docker] LANDING_DIR\n";
    return 2;
  }
  try {
    HostToolRegistry registry({.require_declared = true, .max_dispatches_per_run = 4});
    registry.add({.name = "lookup",
                  .description = "the customer record for an id",
                  .parameters = {{"type", "object"},
                                 {"properties", {{"id", {{"type", "integer"}}}}},
                                 {"required", {"id"}},
                                 {"additionalProperties", false}},
                  // Brings in the host's own (trusted) data, sends nothing out, runs as the app.
                  .declaration = HostToolDeclaration(Integrity::Trusted, std::nullopt, Identity::App),
                  .function = [](const json& args, const HostToolCallContext&) {
                    const auto it = kCustomers.find(args["id"].get<int>());
                    if (it == kCustomers.end()) throw std::out_of_range("no customer " + args["id"].dump());
                    return json{{"id", it->first}, {"name", it->second}};
                  }});

    SandboxSpec::Fields fields{.kind = "customer-report",
                               .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                               .declared_outputs = {{.path = "out/answer.json", .media_type = "application/json"}},
                               .host_tools = registry.aggregate()};  // seals the registry
    json config = json::object();
    Isolation floor = Isolation::OsProcess;
    if (backend_name == "process") {
      config["root"] = (std::filesystem::temp_directory_path() / ("maf-sample-host-tools-" + std::to_string(::getpid()))).string();
    } else {
      if (const char* client = std::getenv("MAF_SANDBOX_DOCKER"); client && *client) config["docker_path"] = client;
      floor = Isolation::Container;
      fields.image = "maf-sandbox-test/busybox:1";  // scripts/docker-test-images
    }
    const SandboxSpec spec(std::move(fields));
    auto backend = PluginRegistry::global().create(backend_name, config);
    SandboxRouter router({backend}, RouterOptions::lowered_floor(floor, LowerIsolationFloor{}));
    const SandboxKey key{"sample-host-tools-" + std::to_string(::getpid()), "conversation-1", "agent-1", ""};

    BlockingRunner run;
    auto sandbox = run([&] { return router.acquire(key, spec); });
    int status = EXIT_FAILURE;
    try {
      HostToolRun dispatches(registry);
      const HostToolProgram program{.command = Command(kGuestScript)};  // named: a temporary is refused
      const auto result = run([&] { return run_with_host_tools(*sandbox, dispatches, program); });
      std::cout << result.output;
      std::cout << "program exit " << result.exit_code << ", " << result.requests << " request(s) served, "
                << dispatches.delivered() << " answered with a value\n";
      if (result.exit_code == 0) {
        for (const auto& artifact : run([&] { return collect_outputs(*sandbox, spec, make_file_system_sink(landing)); }))
          std::cout << "landed: " << artifact.display << " -> " << artifact.handle.value_or("?") << "\n";
        status = EXIT_SUCCESS;
      }
    } catch (const std::exception& e) {
      std::cerr << "host-tools run failed: " << e.what() << "\n";
    }
    run([&] { return router.dispose(key); });
    if (backend_name == "process") std::filesystem::remove_all(config["root"].get<std::string>());
    return status;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return EXIT_FAILURE;
  }
}
