// Host tools over exec on the process backend (real bubblewrap): docs/host-tools.md HT-T1…T6.
#include <unistd.h>


#include "host_tool_scenarios.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "../support/process_sandbox.hpp"

using namespace maf::sandbox;

namespace {

struct ProcessSandbox : test::ProcessSandbox {
  ProcessSandbox()
      : test::ProcessSandbox("maf-host-tools-process", SandboxKey{"ht-scope", "t", "a", ""},
                             SandboxSpec({.kind = "host-tools",
                                          .requires_capabilities = {Capability::Exec, Capability::FilesIn,
                                                                    Capability::FilesOut, Capability::HostTools}})) {}
};

}  // namespace

TEST_CASE("host tools process HT-T1: a call from the sh client is served; the run directory is gone") {
  ProcessSandbox p;
  host_tools_test::a_call_is_served(*p.sandbox);
}

TEST_CASE("host tools process HT-T2/HT-R4: unknown names, bad arguments, a failing function and the cap are refusals the guest reads") {
  ProcessSandbox p;
  host_tools_test::refusals_reach_the_guest(*p.sandbox);
}

TEST_CASE("host tools process HT-R4: per-response and per-run byte caps") {
  ProcessSandbox p;
  host_tools_test::response_size_cap(*p.sandbox);
}

TEST_CASE("host tools process HT-T3: garbage, forged, non-file, over-cap and abandoned requests") {
  ProcessSandbox p;
  host_tools_test::garbage_requests_are_answered(*p.sandbox);
}

TEST_CASE("host tools process HT-T6: the Python client (python3 is in the guest: a missing one fails)") {
  ProcessSandbox p;
  CHECK(host_tools_test::python_client_problem(*p.sandbox) == "");
}

TEST_CASE("host tools process HT-T4: an overrun's timeout carries output, signal and reach") {
  ProcessSandbox p;
  host_tools_test::overrun_is_stopped(*p.sandbox, "313.25", std::chrono::seconds(5));
  host_tools_test::no_run_directory_left(*p.sandbox);
}

TEST_CASE("host tools process HT-T5: a guest that deletes its own run directory blocks nothing and leaves nothing") {
  ProcessSandbox p;
  CHECK(host_tools_test::deleted_run_directory_problem(*p.sandbox) == "");
  host_tools_test::no_run_directory_left(*p.sandbox);
}

TEST_CASE("host tools process: a deadline that is not positive is a ValueError before anything runs") {
  ProcessSandbox p;
  auto reg = host_tools_test::registry();
  HostToolRun run(*reg);
  const HostToolProgram no_deadline{.command = Command("true"), .deadline = std::chrono::milliseconds(0)};
  CHECK_THROWS_AS(p.run([&] { return run_with_host_tools(*p.sandbox, run, no_deadline); }), ValueError);
}
