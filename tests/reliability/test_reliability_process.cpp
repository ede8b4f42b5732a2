// Faults and load against the process backend (issue 15 parts 3–4): a guest racing the host's
// path checks, the host killed mid-acquire, and 64 concurrent conversations. Each trial is
// recorded for docs/reliability.md (trials.hpp); rule ids cite core.md.
#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sync.hpp"
#include "cli_child.hpp"
#include "guest_race.hpp"
#include "load.hpp"
#include "trials.hpp"

using namespace maf::sandbox;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  fs::path root = fs::temp_directory_path() / ("maf-reliability-process-" + std::to_string(::getpid()));
  process::ProcessBackendConfig config;
  std::shared_ptr<SandboxBackend> backend;
  BlockingRunner run;

  Fixture() {
    config.root = root;
    backend = process::make_process_backend(config);
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  static SandboxSpec spec(std::vector<DeclaredOutput> outputs = {}) {
    return SandboxSpec({.kind = "shell",
                        .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                        .declared_outputs = std::move(outputs)});
  }
  /// Every entry under the backend's root: sandboxes, and staging or trash directories a
  /// killed host could leave.
  std::vector<std::string> root_entries() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) out.push_back(e.path().filename().string());
    return out;
  }
};

/// Host processes whose root directory lies under `dir` (guests, alive or zombie).
int processes_rooted_under(const fs::path& dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& p : fs::directory_iterator("/proc", ec)) {
    std::error_code link_ec;
    const fs::path target = fs::read_symlink(p.path() / "root", link_ec);
    if (!link_ec && target.string().rfind(dir.string(), 0) == 0) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("C-100 reliability: a guest swapping a checked parent for a link in a loop never gets the host to "
          "return bytes from outside its work dir (process, openat2)") {
  Fixture f;
  const SandboxKey key{"rel-swap", "conv", "agent", ""};
  auto sb = f.run([&] { return f.backend->acquire(key, f.spec()); });
  REQUIRE(f.run([&] { return sb->exec(reliability::kSwapSetup); }).exit_code == 0);

  std::map<std::string, int> outcomes;
  const int guest_swaps = reliability::race(*sb, 200, outcomes);
  CHECK(guest_swaps > 0);
  CHECK(outcomes.count(reliability::kLeaked) == 0);
  // The host's closing write (`stop`) and every refused call left the decoy as it was.
  CHECK(f.run([&] { return sb->exec("ls /tmp/decoy"); }).stdout_text() == "file.txt\n");
  for (const auto& [outcome, n] : outcomes)
    for (int i = 0; i < n; ++i)
      reliability::record("process-swap-loop", "a guest swapping a checked parent for a link in a loop",
                          "process (openat2)", outcome);
  sb.reset();
  CHECK_FALSE(f.run([&] { return f.backend->dispose(key, std::nullopt, std::nullopt); }));
  CHECK(f.root_entries().empty());
}

TEST_CASE("C-57 reliability: the host killed (SIGKILL) mid-acquire; reap and dispose-scope from a fresh "
          "process leave nothing in the root (process)") {
  Fixture f;
  const fs::path config = f.root.string() + ".json";
  std::ofstream(config) << nlohmann::json{{"root", f.root.string()}}.dump();
  const fs::path spec = f.root.string() + "-spec.json";
  std::ofstream(spec) << R"({"kind": "killed", "requires": ["exec"]})";
  const std::vector<std::string> common{"--backend", "process", "--config", config.string()};

  // Each trial kills `run` as soon as anything appears in the root: a staging directory
  // (mid-acquire proper) or the renamed sandbox (acquire done, exec starting).
  auto cli = [&](std::vector<std::string> args) {
    args.insert(args.begin() + 1, common.begin(), common.end());
    return args;
  };
  // reap's cutoff is whole seconds: leftovers age past one second before it runs (an
  // ordering precondition, not a timing assertion).
  auto reap = [&](std::vector<std::string> extra) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
    extra.insert(extra.begin(), {"reap", "--older-than", "1s"});
    return reliability::reap_child(reliability::spawn_cli(cli(extra)));
  };
  for (const std::string cleanup : {"dispose-scope", "reap", "reap"}) {
    const std::string scope = "rel-kill-" + std::to_string(::getpid());
    const pid_t pid = reliability::spawn_cli(cli({"run", "--spec", spec.string(), "--min-isolation", "os_process",
                                                  "--scope", scope, "--thread", "t", "--", "sleep", "60"}));
    // Killed as soon as anything appears in the root: a staging directory (mid-acquire
    // proper) or the renamed sandbox (acquire done, exec starting).
    const std::string seen = reliability::wait_for([&]() -> std::string {
      for (const auto& name : f.root_entries()) return name.rfind(".staging-", 0) == 0 ? "staging" : "sandbox";
      return "";
    });
    ::kill(pid, SIGKILL);
    REQUIRE(reliability::reap_child(pid) == -SIGKILL);
    REQUIRE_FALSE(seen.empty());
    int code = -1;
    if (cleanup == "dispose-scope") {
      code = reliability::reap_child(reliability::spawn_cli(cli({"dispose-scope", "--scope", scope, "--thread", "t"})));
      // No sandbox of the scope remains; a staging directory has no meta to attribute it
      // to a scope, so only reap (by age) removes it.
      for (const auto& name : f.root_entries()) CHECK(name.rfind(".staging-", 0) == 0);
      CHECK(reap({}) == 0);
    } else {
      code = reap({"--scope", scope});
    }
    CHECK(code == 0);
    CHECK(f.root_entries().empty());
    CHECK(processes_rooted_under(f.root) == 0);
    reliability::record("process-host-killed",
                        "the host SIGKILLed mid-acquire, then `" + cleanup + "` from a fresh process",
                        "process, `maf-sandbox` CLI",
                        std::string(code == 0 && f.root_entries().empty() ? "cleaned up" : "left something") +
                            " (killed at: " + seen + ")");
  }
  fs::remove(config);
  fs::remove(spec);
}

TEST_CASE("C-57 reliability: reap removes a staging directory a killed acquire left behind (process)") {
  Fixture f;
  // What a host killed between mkdir and rename leaves: a half-built tree with no meta.
  fs::create_directories(f.root / ".staging-0123456789abcdef" / "root" / "usr");
  fs::create_directories(f.root / ".trash-fedcba9876543210" / "root");
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(f.root / ".staging-0123456789abcdef", old);
  fs::last_write_time(f.root / ".trash-fedcba9876543210", old);
  // A young one belongs to an acquire that may still be running: kept.
  fs::create_directories(f.root / ".staging-00000000000000aa" / "root");
  auto purge = f.run([&] { return f.backend->reap(std::chrono::hours(1), std::nullopt); });
  CHECK_FALSE(purge.undisposed.has_value());
  CHECK(f.root_entries() == std::vector<std::string>{".staging-00000000000000aa"});
}

TEST_CASE("C-52 reliability load: 64 concurrent conversations (acquire/exec/write/collect/dispose) leak no "
          "sandbox, descriptor, thread or child process (process)") {
  Fixture f;
  constexpr int kConversations = 64;
  const auto c = reliability::run_load(
      *f.backend, [](const std::string& tag) { return SandboxKey{"rel-load", tag, "agent", ""}; },
      Fixture::spec({DeclaredOutput{.path = "out.txt"}}), kConversations);
  CHECK(c.finished == kConversations);
  CHECK(f.root_entries().empty());
  // A leak is more after than before, never fewer: something an earlier case left winding
  // down (a thread, a descriptor, a child being reaped) may end during the load.
  CHECK(c.fds_after <= c.fds_before);
  CHECK(c.threads_after <= c.threads_before);
  CHECK(c.children_after <= c.children_before);
  CHECK(processes_rooted_under(f.root) == 0);
  const bool clean = c.finished == kConversations && f.root_entries().empty() && c.fds_after <= c.fds_before &&
                     c.threads_after <= c.threads_before && c.children_after <= c.children_before;
  reliability::record("process-load-64", "64 concurrent conversations (acquire/exec/write/collect/dispose)",
                      "process", clean ? "all finished; no sandbox, fd, thread or child left" : "leaked");
}
