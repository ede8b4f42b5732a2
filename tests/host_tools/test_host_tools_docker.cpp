// Host tools over exec on the real Docker engine (docs/host-tools.md HT-T1…T6), once per
// transport (MAF_DOCKER_TRANSPORT): requests are served by file operations made while the
// program's exec runs, which each transport does its own way.
#include "engine_fixture.hpp"
#include "host_tool_scenarios.hpp"

using namespace maf::sandbox;

namespace {

struct DockerSandbox {
  docker_test::Scope scope;
  std::shared_ptr<Sandbox> sandbox;
  DockerSandbox() {
    sandbox = scope.run([&] {
      return scope.backend->acquire(
          scope.key(), docker_test::spec_for(docker_test::kImage, {Capability::Exec, Capability::FilesIn,
                                                                   Capability::FilesOut, Capability::HostTools}));
    });
  }
};

}  // namespace

TEST_CASE("host tools docker HT-T1: a call from the sh client is served; the run directory is gone") {
  DockerSandbox d;
  host_tools_test::a_call_is_served(*d.sandbox);
}

TEST_CASE("host tools docker HT-T2/HT-R4: refusals the guest reads") {
  DockerSandbox d;
  host_tools_test::refusals_reach_the_guest(*d.sandbox);
}

TEST_CASE("host tools docker HT-T3: garbage, forged, non-file, over-cap and abandoned requests") {
  DockerSandbox d;
  host_tools_test::garbage_requests_are_answered(*d.sandbox);
}

TEST_CASE("host tools docker HT-T4: an overrun's timeout carries output, signal and reach") {
  DockerSandbox d;
  host_tools_test::overrun_is_stopped(*d.sandbox, "317.25", std::chrono::seconds(40));
}
