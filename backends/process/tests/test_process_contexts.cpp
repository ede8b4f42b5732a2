// Interpreter contexts on the process backend (docs/contexts.md CTX-1…CTX-8): the shared
// CONTEXT suite (CX-1…CX-6) on a real guest, whose python3 is the host's /usr/bin/python3.
#include <catch2/catch.hpp>

#include <maf/sandbox/conformance/conformance.hpp>

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "maf/sandbox/interpreter_context.hpp"
#include "process_fixture.hpp"

using namespace maf::sandbox;
using maf::sandbox::process::test::Fixture;

namespace {
std::shared_ptr<Sandbox> context_sandbox(Fixture& f) {
  REQUIRE(std::filesystem::exists("/usr/bin/python3"));
  return f.acquire(f.key, SandboxSpec({.kind = "contexts",
                                       .requires_capabilities = {Capability::Exec, Capability::ExecStdin,
                                                                 Capability::Background}}));
}
}  // namespace

TEST_CASE("CTX-2…CTX-7 process: the CONTEXT suite passes with no skips") {
  // An answer carries up to 1 MiB of each stream and 8 MiB of outputs (CTX-4): the exec cap
  // must hold it.
  Fixture f([](process::ProcessBackendConfig& c) { c.max_stdout_bytes = 16 << 20; });
  auto sb = context_sandbox(f);
  conformance::PosixGuestSubject subject(f.run, sb, f.backend->declarations().capabilities, Egress::Closed);
  const auto results = conformance::run_context(subject);
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
  REQUIRE(results.size() == 6);
  for (const auto& r : results) CHECK(r.outcome == conformance::Outcome::Pass);
}

TEST_CASE("CTX-1 process: a context offers python only, naming what it was asked") {
  Fixture f;
  auto sb = context_sandbox(f);
  CHECK_THROWS_WITH(f.run([&] { return InterpreterContext::create(sb, "ruby"); }),
                    Catch::Contains("language 'ruby' is not offered"));
}

namespace {
/// Whether a host process's command line starts with `sleep <tag>` (the guest shares the kernel).
bool sleeper_runs(const std::string& tag) {
  const std::string marker = std::string("sleep\0", 6) + tag;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.rfind(marker, 0) == 0) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("CTX-8 CTX-11 process: a setsid daemon a context forked dies with close(); floods are cut, the context "
          "lives on") {
  Fixture f([](process::ProcessBackendConfig& c) { c.max_stdout_bytes = 16 << 20; });
  auto sb = context_sandbox(f);
  REQUIRE(sb->capabilities().contains(Capability::ExecStdinStream));  // the stream channel is what runs
  auto ctx = f.run([&] { return InterpreterContext::create(sb, "python"); });
  // A daemon in a session of its own, its stdio away from the driver's: no group stop reaches it.
  const std::string tag = "283.48" + std::to_string(::getpid() % 1000);
  const std::string daemon = "import os\npid = os.fork()\nif pid == 0:\n    os.setsid()\n"
                             "    nul = os.open(os.devnull, os.O_RDWR)\n    for fd in (0, 1, 2): os.dup2(nul, fd)\n"
                             "    os.execvp('sleep', ['sleep', '" + tag + "'])\npid";
  const ContextRunResult forked = f.run([&] { return ctx.run(daemon); });
  REQUIRE_FALSE(forked.error);
  bool seen = false;
  for (int i = 0; i < 200 && !(seen = sleeper_runs(tag)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  REQUIRE(seen);  // the scan sees it: its absence below means something
  // Python's stdout flooded past the 1 MiB cap: cut and flagged; the fd-level flood goes nowhere.
  const ContextRunResult flood = f.run([&] { return ctx.run("import os\nos.write(1, b'y' * (4 << 20))\nprint('x' * (3 << 20))"); });
  CHECK(flood.stdout_truncated);
  CHECK(flood.stdout_text.size() == std::size_t{1} << 20);
  CHECK(f.run([&] { return ctx.run("1 + 1"); }).value == "2");
  f.run([&] { return ctx.close(); });
  bool gone = false;
  for (int i = 0; i < 400 && !(gone = !sleeper_runs(tag)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  CHECK(gone);
}

TEST_CASE("CTX-5 CTX-11 process: a context killed by the memory bound is dead, says so, and restarts") {
  if (::geteuid() != 0) FAIL("needs root: this host delegates no cgroup to other users (docs/backends/process.md)");
  Fixture f;
  auto sb = f.acquire(f.key, SandboxSpec({.kind = "contexts-oom",
                                          .requires_capabilities = {Capability::Exec, Capability::ExecStream,
                                                                    Capability::ExecStdinStream},
                                          .resources = ResourceLimits({.memory_bytes = 96 << 20})}));
  auto ctx = f.run([&] { return InterpreterContext::create(sb, "python"); });
  f.run([&] { return ctx.run("kept = 'yes'"); });
  // 512 MiB of touched bytes under a 96 MiB bound: the kernel's OOM killer ends the interpreter.
  CHECK_THROWS_AS(f.run([&] { return ctx.run("hog = b'x' * (512 << 20)"); }), SandboxContextDead);
  CHECK_FALSE(f.run([&] { return ctx.alive(); }));
  CHECK_THROWS_AS(f.run([&] { return ctx.run("1"); }), SandboxContextDead);
  f.run([&] { return ctx.restart(); });
  CHECK(f.run([&] { return ctx.run("'kept' in globals()"); }).value == "False");
  f.run([&] { return ctx.close(); });
}
