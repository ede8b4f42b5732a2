// PER_SPEC selection between two backends found through the registry: each workload goes to
// the first registered backend whose declarations pass every policy check, and a workload no
// backend can serve is refused before anything runs, with the reason in the message.
//
// Deterministic on any machine with bubblewrap, engine or not: the Docker plugin's factory
// contacts no engine (it declares posix and checks that at first use), and the sample
// never acquires from it — selection is pure policy over declarations (router.select), so
// it needs no daemon. (Disposal is the one
// router call that fans out to every backend; see the end of main.)
#include <maf/sandbox/async.hpp>
#include <maf/sandbox/registry.hpp>
#include <maf/sandbox/sync.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

using namespace maf::sandbox;

namespace {

bool registered(PluginRegistry& registry, const std::string& name) {
  const auto names = registry.names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path state =
      argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::temp_directory_path() / "maf-sandbox-04-router";
  try {
    PluginRegistry& registry = PluginRegistry::global();
    // Registration order is preference order under PER_SPEC: the weaker, engine-free backend
    // first, so a workload that tolerates os_process never pays for a container.
    std::vector<std::shared_ptr<SandboxBackend>> backends{registry.create("process", {{"root", state.string()}})};
    const bool have_docker = registered(registry, "docker");
    if (have_docker) backends.push_back(registry.create("docker", {}));
    else std::cout << "(the docker plugin is not installed: only the process backend is registered)\n";

    RouterOptions options = RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{});
    options.selection = Selection::PerSpec;
    SandboxRouter router(backends, options);

    // 1. Only the process backend lists directories (Docker never declares files_list).
    const SandboxSpec listing({.kind = "file-browser",
                               .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesList}});
    // 2. Needs a container: the process backend (os_process) is below this spec's own floor.
    const SandboxSpec untrusted({.kind = "untrusted-build",
                                 .requires_capabilities = {Capability::Exec, Capability::FilesIn},
                                 .min_isolation = Isolation::Container});
    // 3. Nobody: a container *and* directory listing.
    const SandboxSpec impossible({.kind = "container-browser",
                                  .requires_capabilities = {Capability::Exec, Capability::FilesList},
                                  .min_isolation = Isolation::Container});

    int wrong = 0;
    auto expect = [&](const SandboxSpec& spec, const std::string& expected) {
      try {
        auto chosen = router.select(spec);
        std::cout << "kind '" << spec.kind() << "' -> backend '" << chosen->name() << "' (" << chosen->isolation()
                  << ")\n";
        if (chosen->name() != expected) ++wrong;
      } catch (const PermissionError& refusal) {  // SandboxBackendNotPermitted and its siblings
        std::cout << "kind '" << spec.kind() << "' -> refused: " << refusal.what() << "\n";
        if (!expected.empty()) ++wrong;
      } catch (const SandboxCapabilityNotSupported& refusal) {
        std::cout << "kind '" << spec.kind() << "' -> refused: " << refusal.what() << "\n";
        if (!expected.empty()) ++wrong;
      }
    };
    expect(listing, "process");
    expect(untrusted, have_docker ? "docker" : "");
    // PER_SPEC raises the *first* registered backend's refusal when none qualifies (C-63):
    // here the process backend's floor refusal.
    expect(impossible, "");

    // The process backend's workload really runs; acquire goes through the same checks.
    BlockingRunner run;
    const SandboxKey key{"sample-tenant", "conversation-4", "agent", ""};
    auto sandbox = run([&] { return router.acquire(key, listing); });
    run([&] { return sandbox->write_file("notes/todo.txt", "ship it\n"); });
    auto entries = run([&] { return sandbox->list_dir("notes"); });
    auto result = run([&] { return sandbox->exec("cat notes/todo.txt"); });
    std::cout << "file-browser ran in '" << sandbox->backend_name() << "': listed " << entries.size()
              << " entry, read back: " << result.stdout_text();
    // Disposed through the backend that served it: router.dispose(key) would ask *every*
    // registered backend, and the Docker one would then call its engine.
    run([&] { return router.select(listing)->dispose(key, listing.kind(), sandbox->instance_id()); });

    if (wrong != 0 || result.stdout_text() != "ship it\n") {
      std::cerr << "unexpected selection or output\n";
      return 1;
    }
    return 0;
  } catch (const maf::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
