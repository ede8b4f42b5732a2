// sandboxed_tool on the real Docker engine: issue 26's bad input and faults. The transport
// does not matter to the tool layer, so this runs once, on the default one (the Engine API).
#include "engine_fixture.hpp"
#include "tool_scenarios.hpp"

using namespace maf::sandbox;
using docker_test::docker_cli;

namespace {

struct DockerEngine {
  docker_test::Scope scope;
  std::optional<tools_test::Engine> engine;
  DockerEngine() {
    const std::string s = scope.scope;
    engine.emplace(tools_test::Engine{
        scope.backend,
        docker_test::spec_for(docker_test::kImage, {Capability::Exec, Capability::FilesIn}),
        s,
        Isolation::Container,
        [s] {
          const std::string names =
              docker_cli({"ps", "-a", "--filter", "label=maf-sandbox.scope=" + s, "--format", "{{.Names}}"});
          if (names.find_first_not_of(" \n") == std::string::npos) return 0;
          return static_cast<int>(std::count(names.begin(), names.end(), '\n')) + (names.back() == '\n' ? 0 : 1);
        },
        [](Sandbox& sb, const std::string& relative) {
          BlockingRunner run;
          return run([&] { return sb.exec(std::vector<std::string>{"test", "-e", relative}, "."); }).exit_code == 0;
        },
        // The guest is root in its container, so file modes do not stop it; it can replace
        // its own rm, which is exactly the principal RECLAIM runs as.
        "printf '#!/bin/sh\\necho rm refused by the guest >&2\\nexit 1\\n' > /tmp/rm && chmod +x /tmp/rm && "
        "mv /tmp/rm /bin/rm"});
  }
};

}  // namespace

TEST_CASE("tools docker: schema-invalid arguments are an is_error result naming the field; no container is created") {
  DockerEngine d;
  tools_test::schema_invalid_runs_nothing(*d.engine);
}

TEST_CASE("tools docker, cleanup ladder: DISPOSE after the call leaves no container of the scope") {
  DockerEngine d;
  tools_test::dispose_leaves_nothing(*d.engine);
}

TEST_CASE("tools docker C-120: RECLAIM removes the call directory by the guest's own rm; a sibling's stays; the "
          "container serves the next call") {
  DockerEngine d;
  tools_test::reclaim_removes_the_call_directory(*d.engine);
}

TEST_CASE("tools docker C-120: a body that throws and a cancelled call still remove their directories") {
  DockerEngine d;
  tools_test::body_throws_and_cancellation(*d.engine);
}

TEST_CASE("tools docker: a backend that fails mid-call (exec deadline) raises TimeoutError and DISPOSE still runs") {
  DockerEngine d;
  tools_test::backend_fails_mid_call(*d.engine);
}

TEST_CASE("tools docker C-120, cleanup ladder: a reclaim the guest refuses is reported, the key marked, the owed disposal lands") {
  DockerEngine d;
  tools_test::failed_cleanup_marks_the_key(*d.engine);
}

TEST_CASE("tools docker, cleanup ladder: an unclean key is refused until dispose_unclean lands a disposal") {
  DockerEngine d;
  tools_test::unclean_key_is_refused_until_disposed(*d.engine);
}
