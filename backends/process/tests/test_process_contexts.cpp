// Interpreter contexts on the process backend (docs/contexts.md CTX-1…CTX-8): the shared
// CONTEXT suite (CX-1…CX-6) on a real guest, whose python3 is the host's /usr/bin/python3.
#include <catch2/catch.hpp>

#include <maf/sandbox/conformance/conformance.hpp>

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
