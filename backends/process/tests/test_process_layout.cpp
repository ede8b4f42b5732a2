// The process backend's on-disk layout by conversation (issue 55, docs/backends/process.md
// "State layout"): dispose and dispose_scope list one conversation's directory, still find
// what another instance made and what a killed host left, a warm acquire answered from memory
// never outlives a disposal made elsewhere, and a root laid out before is migrated.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "process_fixture.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::process::test;

namespace {

std::string conversation_of(const fs::path& sandbox_dir) { return sandbox_dir.parent_path().filename().string(); }

}  // namespace

TEST_CASE("issue 55: a sandbox lives in its conversation's directory; disposing the last one removes that directory") {
  Fixture f;
  f.acquire(f.key, f.spec("a"));
  f.acquire(SandboxKey{"tenant", "conv-1", "agent2", ""}, f.spec("a"));
  f.acquire(SandboxKey{"tenant", "conv-2", "agent", ""}, f.spec("a"));
  const auto dirs = f.sandbox_paths();
  REQUIRE(dirs.size() == 3);
  std::set<std::string> conversations;
  for (const auto& d : dirs) {
    CHECK(d.parent_path().parent_path() == f.root);
    CHECK(conversation_of(d).rfind("maf-sandbox-process-conversation-", 0) == 0);
    conversations.insert(conversation_of(d));
  }
  CHECK(conversations.size() == 2);  // conv-1's two sandboxes share one directory
  CHECK_FALSE(f.run([&] { return f.backend->dispose(f.key, std::nullopt, std::nullopt); }).has_value());
  CHECK(f.sandbox_dirs() == 2);
  CHECK(f.run([&] { return f.backend->dispose_scope("tenant", "conv-1"); }).disposed == 1);
  CHECK(f.run([&] { return f.backend->dispose_scope("tenant", "conv-2"); }).disposed == 1);
  CHECK(fs::is_empty(f.root));  // no conversation directory outlives its sandboxes
}

TEST_CASE("issue 55: a warm acquire answered from memory never hands out a sandbox another instance disposed") {
  Fixture f;
  auto first = f.acquire();
  REQUIRE(f.exec(*first, "echo kept > marker").exit_code == 0);
  CHECK(f.acquire()->instance_id() == first->instance_id());  // warm: the same sandbox
  process::ProcessBackendConfig c;
  c.root = f.root;
  auto replica = process::make_process_backend(c);
  CHECK_FALSE(f.run([&] { return replica->dispose(f.key, std::nullopt, std::nullopt); }).has_value());
  auto again = f.acquire();
  CHECK(again->instance_id() != first->instance_id());  // made anew, not the disposed one
  CHECK(f.exec(*again, "test -e marker").exit_code == 1);
  CHECK(f.sandbox_dirs() == 1);
}

TEST_CASE("issue 55: dispose_scope from another instance finds the sandbox of a host that was killed") {
  Fixture f;
  const SandboxKey key{"tenant", "killed-host", "agent", ""};
  const pid_t host = ::fork();
  REQUIRE(host >= 0);
  if (host == 0) {
    // The killed host: its own backend over the same root, a sandbox and a running command.
    try {
      process::ProcessBackendConfig c;
      c.root = f.root;
      auto backend = process::make_process_backend(c);
      BlockingRunner run;
      auto sb = run([&] { return backend->acquire(key, f.spec()); });
      run([&] { return sb->exec("touch started; sleep 60", ".", 90s); });
    } catch (...) {
    }
    ::_exit(3);
  }
  // Killed once its command is running (the marker is the guest's own write).
  bool started = false;
  for (int i = 0; i < 600 && !started; ++i) {
    for (const auto& d : f.sandbox_paths())
      if (fs::exists(d / "root" / "maf-sandbox" / "work" / "started")) started = true;
    if (!started) std::this_thread::sleep_for(50ms);
  }
  ::kill(host, SIGKILL);
  int status = 0;
  ::waitpid(host, &status, 0);
  REQUIRE(started);
  REQUIRE(f.sandbox_dirs() == 1);
  const ScopePurge p = f.run([&] { return f.backend->dispose_scope("tenant", "killed-host"); });
  CHECK(p.disposed == 1);
  CHECK_FALSE(p.undisposed.has_value());
  CHECK(f.sandbox_dirs() == 0);
  CHECK(fs::is_empty(f.root));
}

TEST_CASE("issue 55: a root laid out before (sandboxes directly under it) is migrated at construction") {
  Fixture f;
  std::string instance;
  {
    auto sb = f.acquire();
    instance = sb->instance_id();
    REQUIRE(f.exec(*sb, "echo kept > marker").exit_code == 0);
  }
  // Lay it out as a backend from before issue 55 did: <root>/<name>.
  const fs::path dir = f.sandbox_paths().at(0);
  const fs::path conversation = dir.parent_path();
  fs::rename(dir, f.root / dir.filename());
  fs::remove(conversation);
  REQUIRE(f.sandbox_paths().at(0).parent_path() == f.root);
  process::ProcessBackendConfig c;
  c.root = f.root;
  auto upgraded = process::make_process_backend(c);
  REQUIRE(f.sandbox_dirs() == 1);
  CHECK(f.sandbox_paths().at(0).parent_path() == conversation);
  // The same sandbox, found by key, with what it held.
  auto sb = f.run([&] { return upgraded->acquire(f.key, f.spec()); });
  CHECK(sb->instance_id() == instance);
  CHECK(f.exec(*sb, "cat marker").stdout_text() == "kept\n");
  sb.reset();
  CHECK(f.run([&] { return upgraded->dispose_scope("tenant", "conv-1"); }).disposed == 1);
  CHECK(fs::is_empty(f.root));
}
