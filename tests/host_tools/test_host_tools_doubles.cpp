// The exec transport's own guarantees (docs/host-tools.md HT-T5, HT-T6 and the capability
// check), each judged against the host-tree double — honest, and deliberately broken — so the
// verdicts the process and Docker tests rely on are shown able to fail (issue 50).
#include <filesystem>

#include "host_tool_scenarios.hpp"
#include "support/host_tree_sandbox.hpp"

using namespace maf::sandbox;
namespace test = maf::sandbox::conformance::test;

namespace {

/// A host-tree double declaring `declared` beside exec and the file plane.
struct Double {
  test::TempDir dir{"maf-host-tools-double"};
  std::shared_ptr<test::HostTreeSandbox> sandbox;
  explicit Double(test::Flaw flaw = test::Flaw::None, CapabilitySet declared = {Capability::HostTools}) {
    sandbox = std::make_shared<test::HostTreeSandbox>(dir.path(), flaw, declared);
  }
};

}  // namespace

TEST_CASE("host tools HT-T1: the transport refuses a sandbox whose backend does not declare HOST_TOOLS with "
          "NotImplementedError naming it, before anything is written or run") {
  Double without(test::Flaw::None, {});
  REQUIRE_FALSE(without.sandbox->capabilities().contains(Capability::HostTools));
  REQUIRE(without.sandbox->capabilities().contains(Capability::Exec));  // only HOST_TOOLS is missing
  auto reg = host_tools_test::registry();
  HostToolRun run(*reg);
  BlockingRunner runner;
  const HostToolProgram echo{.command = Command("echo ran")};  // named: GCC 12 (AGENT-1)
  const auto call = [&](Sandbox& sb) { return runner([&] { return run_with_host_tools(sb, run, echo); }); };
  CHECK_THROWS_WITH(call(*without.sandbox), Catch::Contains("does not declare") &&
                                                Catch::Contains("host_tools", Catch::CaseSensitive::No));
  CHECK_THROWS_AS(call(*without.sandbox), NotImplementedError);
  // Nothing of a run was laid down in the working directory.
  for (const auto& e : std::filesystem::directory_iterator(without.dir.path() / "work"))
    CHECK(e.path().filename().string().rfind(".maf-host-tools-", 0) != 0);
  // The control: the same double declaring HOST_TOOLS runs the program.
  Double with;
  const auto r = call(*with.sandbox);
  CHECK(r.exit_code == 0);
  CHECK(r.output == "ran\n");
}

TEST_CASE("host tools HT-T5: a guest deleting its run directory does not block the host — a double that holds the "
          "finished exec to its deadline (HoldsFinishedExec) fails the verdict") {
  {
    Double honest;
    CHECK(host_tools_test::deleted_run_directory_problem(*honest.sandbox) == "");
  }
  {
    Double broken(test::Flaw::HoldsFinishedExec);
    CHECK_THAT(host_tools_test::deleted_run_directory_problem(*broken.sandbox, std::chrono::seconds(3)),
               Catch::Contains("stayed blocked to the deadline"));
  }
}

TEST_CASE("host tools HT-T6: the Python client's verdict — a guest without the interpreter fails it, never passes") {
  Double honest;
  CHECK(host_tools_test::python_client_problem(*honest.sandbox) == "");
  CHECK_THAT(host_tools_test::python_client_problem(*honest.sandbox, "python3-not-in-this-guest"),
             Catch::Contains("the guest has no python3-not-in-this-guest"));
}
