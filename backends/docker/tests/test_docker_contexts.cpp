// Interpreter contexts on a real engine (docs/contexts.md CTX-1…CTX-8), once per transport
// (MAF_DOCKER_TRANSPORT): the shared CONTEXT suite (CX-1…CX-6) — the driver over the
// transport's attached stdin, the interrupt through the background supervisor. The image with
// python3 is maf-sandbox-test/clients:3 (scripts/docker-test-images).
#include <utility>

#include <maf/sandbox/conformance/conformance.hpp>

#include "engine_fixture.hpp"
#include "maf/sandbox/interpreter_context.hpp"

using namespace maf::sandbox;

namespace {
const std::string kPythonImage = "maf-sandbox-test/clients:3";
const CapabilitySet kContextCaps{Capability::Exec, Capability::ExecStdin, Capability::Background};
}  // namespace

TEST_CASE("CTX-2…CTX-7 on Docker: the CONTEXT suite passes with no skips, on this transport") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(kPythonImage, kContextCaps, "conformance"));
  conformance::PosixGuestSubject subject(scope.run, sb, scope.backend->declarations().capabilities, Egress::Closed);
  const auto results = conformance::run_context(subject);
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
  REQUIRE(results.size() == 6);
  for (const auto& r : results) CHECK(r.outcome == conformance::Outcome::Pass);
  // The sandbox itself is untouched by what its contexts went through.
  CHECK(scope.sh(*sb, "echo alive").stdout_bytes == "alive\n");
}

TEST_CASE("CTX-1 on Docker: a guest without python3 is refused at create, with the interpreter's words; CONTEXT "
          "skips there, saying why") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kContextCaps, "conformance"));
  CHECK_THROWS_WITH(scope.run([&] { return InterpreterContext::create(sb, "python"); }),
                    Catch::Contains("the interpreter did not start"));
  conformance::PosixGuestSubject subject(scope.run, sb, scope.backend->declarations().capabilities, Egress::Closed);
  for (const auto& r : conformance::run_context(subject)) {
    CHECK(r.skipped());
    CHECK_THAT(r.message, Catch::Contains("cannot run python3"));
  }
}
