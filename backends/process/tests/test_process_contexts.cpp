// Interpreter contexts on the process backend (docs/contexts.md CTX-1…CTX-8): the guest's
// python3 is the host's /usr/bin/python3, read-only.
#include <catch2/catch.hpp>

#include "process_fixture.hpp"
#include "support/interpreter_context_checks.hpp"

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

TEST_CASE("CTX-2 CTX-3 process: a Python context keeps variables, imports and its cwd across five calls") {
  Fixture f([](process::ProcessBackendConfig& c) { c.max_stdout_bytes = 16 << 20; });
  test::check_context_keeps_state(f.run, context_sandbox(f));
}

TEST_CASE("CTX-4 process: rich outputs come back keyed by MIME type, a plot bomb is cut and flagged") {
  Fixture f([](process::ProcessBackendConfig& c) { c.max_stdout_bytes = 16 << 20; });
  test::check_context_rich_outputs(f.run, context_sandbox(f));
}

TEST_CASE("CTX-5 CTX-6 CTX-7 process: death is reported and restarted; a hung call is interrupted or killed") {
  Fixture f([](process::ProcessBackendConfig& c) { c.max_stdout_bytes = 16 << 20; });
  test::check_context_death_and_hangs(f.run, context_sandbox(f));
}

TEST_CASE("CTX-1 process: a context needs BACKGROUND and EXEC_STDIN, and offers python only") {
  Fixture f;
  auto sb = context_sandbox(f);
  CHECK_THROWS_WITH(f.run([&] { return InterpreterContext::create(sb, "ruby"); }),
                    Catch::Contains("language 'ruby' is not offered"));
}
