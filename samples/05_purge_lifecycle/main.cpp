// A conversation's sandboxes are disposed when the conversation ends — by a scope guard in
// the process that made them, or, when that process died first, by any other process that
// can see the provider.
//
//  1. `with_scope` wraps one agent turn: whatever the body does (here it acquires two
//     sandboxes and then fails), both are disposed before the body's error reaches us.
//  2. A second run of this program (`--leave ROOT`) acquires sandboxes for another
//     conversation and exits without disposing them: a replica that crashed.
//  3. This process — which never saw those sandboxes — purges that conversation with
//     `dispose_scope`, which finds them from the provider (the process backend's on-disk
//     state under `root`), not from memory. `maf-sandbox dispose-scope --backend process
//     --config <{"root": ROOT}> --scope sample-tenant --thread conversation-b` does the same.
#include <maf/sandbox/async.hpp>
#include <maf/sandbox/registry.hpp>
#include <maf/sandbox/sync.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

using namespace maf::sandbox;

namespace {

const std::string kTenant = "sample-tenant";

/// The agent turn's own failure; outside maf's error tree so it cannot be confused with a
/// refusal from the library.
struct TurnFailed : std::exception {
  const char* what() const noexcept override { return "the model's tool call crashed"; }
};

SandboxRouter make_router(const std::filesystem::path& root) {
  auto backend = PluginRegistry::global().create("process", {{"root", root.string()}});
  return SandboxRouter({backend}, RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}));
}

const SandboxSpec& spec() {
  static const SandboxSpec s({.kind = "analysis", .requires_capabilities = {Capability::Exec, Capability::FilesIn}});
  return s;
}

std::size_t sandboxes_on_disk(const std::filesystem::path& root) {
  std::size_t n = 0;
  if (!std::filesystem::exists(root)) return 0;
  for (const auto& entry : std::filesystem::directory_iterator(root))
    n += entry.path().filename().string().starts_with("maf-sandbox-process-") ? 1 : 0;
  return n;
}

// Step 2, in a child process: acquire two agents' sandboxes, write into them, and exit
// without disposing (as a crashed replica would).
int leave_sandboxes_behind(const std::filesystem::path& root) {
  SandboxRouter router = make_router(root);
  BlockingRunner run;
  for (const char* agent : {"planner", "coder"}) {
    const SandboxKey key{kTenant, "conversation-b", agent, ""};
    auto sandbox = run([&] { return router.acquire(key, spec()); });
    run([&] { return sandbox->write_file("state.txt", "half-done\n"); });
  }
  return 0;
}

int run_self(const std::filesystem::path& root) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string leave = "--leave", root_arg = root.string();
  char* child_argv[] = {self.data(), leave.data(), root_arg.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, self.c_str(), nullptr, nullptr, child_argv, environ) != 0)
    throw std::runtime_error("could not start a second copy of " + self);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::string(argv[1]) == "--leave") return leave_sandboxes_behind(argv[2]);
    const std::filesystem::path root =
        argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::temp_directory_path() / "maf-sandbox-05-purge";
    SandboxRouter router = make_router(root);
    BlockingRunner run;

    // 1. The scope guard: the body fails halfway, the sandboxes go anyway.
    try {
      run([&] {
        return router.with_scope(kTenant, "conversation-a", [&]() -> boost::asio::awaitable<void> {
          // Not a braced list: GCC 12 mis-handles one iterated across co_await.
          const std::vector<std::string> agents{"planner", "coder"};
          for (const auto& agent : agents) co_await router.acquire(SandboxKey{kTenant, "conversation-a", agent}, spec());
          std::cout << "turn: acquired 2 sandboxes (" << sandboxes_on_disk(root) << " on disk), then the turn fails\n";
          throw TurnFailed{};
        });
      });
    } catch (const TurnFailed& e) {
      std::cout << "with_scope rethrew '" << e.what() << "' after disposing; on disk now: " << sandboxes_on_disk(root)
                << "\n";
    }
    if (sandboxes_on_disk(root) != 0) return 1;

    // 2. Another process creates and abandons a conversation's sandboxes.
    if (run_self(root) != 0) return 1;
    std::cout << "a second process left " << sandboxes_on_disk(root) << " sandboxes of conversation-b behind\n";

    // 3. This process purges what it never created.
    const ScopePurge purge = run([&] { return router.dispose_scope(kTenant, "conversation-b"); });
    std::cout << "dispose_scope(" << kTenant << ", conversation-b): disposed " << purge.disposed << ", "
              << (purge.undisposed ? "incomplete: " + purge.undisposed->to_string() : std::string("complete"))
              << "; on disk now: " << sandboxes_on_disk(root) << "\n";
    return purge.disposed == 2 && !purge.undisposed && sandboxes_on_disk(root) == 0 ? 0 : 1;
  } catch (const std::exception& e) {  // maf::Error, or a host-side failure to start the copy
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
