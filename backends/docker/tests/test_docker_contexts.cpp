// Interpreter contexts on a real engine (docs/contexts.md CTX-1…CTX-8), once per transport
// (MAF_DOCKER_TRANSPORT): the driver over the transport's attached stdin, the interrupt through
// the background supervisor. The image with python3 is maf-sandbox-test/clients:2
// (scripts/docker-test-images).
#include <utility>

#include "engine_fixture.hpp"
#include "support/interpreter_context_checks.hpp"

using namespace maf::sandbox;

namespace {
const std::string kPythonImage = "maf-sandbox-test/clients:2";
const CapabilitySet kContextCaps{Capability::Exec, Capability::ExecStdin, Capability::Background};
}  // namespace

TEST_CASE("CTX-2 CTX-3 CTX-4 on Docker: a Python context keeps its state across calls and returns rich outputs") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(kPythonImage, kContextCaps));
  test::check_context_keeps_state(scope.run, sb);
  test::check_context_rich_outputs(scope.run, sb);
}

TEST_CASE("CTX-5 CTX-6 CTX-7 on Docker: death is reported and restarted; a hung call is interrupted or killed") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(kPythonImage, kContextCaps));
  test::check_context_death_and_hangs(scope.run, sb);
  // The sandbox itself is untouched by what its contexts went through.
  CHECK(scope.sh(*sb, "echo alive").stdout_bytes == "alive\n");
}

TEST_CASE("CTX-1 on Docker: a guest without python3 is refused at create, with the interpreter's words") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kContextCaps));
  CHECK_THROWS_WITH(scope.run([&] { return InterpreterContext::create(sb, "python"); }),
                    Catch::Contains("the interpreter did not start"));
}
