// The shared conformance suites against the Docker backend on a real engine
// (the Docker scenarios DX-7…DX-10, DX-13's HOST_TOOLS on the CLI), plus this port's
// EGRESS_CLOSED — with the runner, which runs once on the Engine API, every suite it opens on
// each transport.
#include <set>
#include <sstream>

#include <maf/sandbox/conformance/conformance.hpp>
#include <maf/sandbox/support/labels.hpp>

#include "engine_fixture.hpp"
#include "probe_results.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace docker_test;

namespace {

struct Subject {
  Scope scope;
  std::shared_ptr<Sandbox> sandbox;
  std::unique_ptr<PosixGuestSubject> subject;
  explicit Subject(const std::string& agent = "agent-1") {
    auto caps = scope.backend->declarations().capabilities;
    caps.erase(Capability::HostTools);  // host tools need configuration of their own
    sandbox = scope.acquire(spec_for(kImage, caps, "conformance"), agent);
    subject = std::make_unique<PosixGuestSubject>(scope.run, sandbox, scope.backend->declarations().capabilities,
                                                  Egress::Closed);
  }
};

}  // namespace

TEST_CASE("DX-7: FILES_OUT passes; exactly FO-9…FO-12 skip (no files_list)") {
  Subject s;
  auto results = run_files_out(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip) == std::set<std::string>{"FO-9", "FO-10", "FO-11", "FO-12"});
}

TEST_CASE("DX-8: FILES_IN passes with no skips") {
  Subject s;
  auto results = run_files_in(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip).empty());
}

TEST_CASE("DX-10: FILES_DELETE passes with no skips") {
  Subject s;
  auto results = run_files_delete(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip).empty());
}

TEST_CASE("READ_CAP and EGRESS_CLOSED pass") {
  Subject s;
  auto cap = run_suite(Suite::ReadCap, *s.subject);
  report(cap);
  CHECK(ids(cap, Outcome::Fail).empty());
  auto closed = run_suite(Suite::EgressClosed, *s.subject);
  report(closed);
  CHECK(ids(closed, Outcome::Fail).empty());
}

TEST_CASE("DX-9: EXEC on its own sandbox passes with no skips; the scope purge stays clean") {
  Subject s("agent-exec");
  auto results = run_suite(Suite::Exec, *s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip).empty());
  auto purge = s.scope.run([&] { return s.scope.backend->dispose_scope(s.scope.scope, s.scope.thread); });
  CHECK_FALSE(purge.undisposed.has_value());
}

TEST_CASE("HOST_INTEGRITY passes: root in the container is held by the engine's confinement (issue 21)") {
  Subject s("agent-host");
  // Docker runs the image's user (root here) without user-namespace remapping: the rung
  // `container` claims that, and HI-4 then checks the confinement instead of the uid.
  s.subject->set_host_boundary(default_host_boundary_claims(s.scope.backend->isolation()));
  auto results = run_host_integrity(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids_with(results, Outcome::Skip) == host_integrity_skips_on_this_kernel());  // shared kernel
}

TEST_CASE("DX-13 HOST_TOOLS passes: HT-1…HT-4 on a sandbox of their own, on the CLI transport", "[cli]") {
  // [cli]: the runner (conformance_tool_docker) runs once, on the Engine API, HOST_TOOLS
  // included; this holds the CLI transport's HOST_TOOLS to the same probes, as the runner
  // runs them — the spec without the capability (host tools need a registry, which each
  // probe brings), the subject with it (docker.md, "Engine tests per transport").
  Subject s("agent-host-tools");
  REQUIRE(s.scope.backend->declarations().capabilities.contains(Capability::HostTools));
  auto results = run_host_tools(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip).empty());
  CHECK(ids(results, Outcome::Pass) == std::set<std::string>{"HT-1", "HT-2", "HT-3", "HT-4"});
}

TEST_CASE("BACKGROUND passes: BG-1…BG-6 and BG-8 on each transport (docs/background.md BG-9)") {
  // Untagged: run on both transports — the supervisor is one exec held open beside the
  // probes' own, which each transport must carry concurrently. BG-8 holds here because the
  // guest ends the program at its lifetime: were it the supervisor's exec timeout, D-13 would
  // remove the container and the probe's keeper file with it.
  Subject s("agent-background");
  REQUIRE(s.scope.backend->declarations().capabilities.contains(Capability::Background));
  auto results = run_background(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip).empty());
  CHECK(ids(results, Outcome::Pass) == std::set<std::string>{"BG-1", "BG-2", "BG-3", "BG-4", "BG-5", "BG-6", "BG-8"});
}

namespace {

/// NL-1's engine inventory: every container, network and volume carrying this test's own
/// scope label (others' resources on a shared engine never count).
FunctionFingerprint scope_inventory(const Scope& scope) {
  const std::string filter =
      "label=" + std::string(support::kLabelScope) + "=" + support::label_value(scope.scope);
  return FunctionFingerprint("docker: containers, networks and volumes labelled " + filter, [filter] {
    EngineFingerprint f;
    const std::pair<std::vector<std::string>, std::string> listings[] = {
        {{"ps", "-a", "--no-trunc", "--filter", filter, "--format", "{{.ID}} {{.Names}}"}, "container:"},
        {{"network", "ls", "--no-trunc", "--filter", filter, "--format", "{{.ID}} {{.Name}}"}, "network:"},
        {{"volume", "ls", "--filter", filter, "--format", "{{.Name}}"}, "volume:"}};
    for (const auto& [args, kind] : listings) {
      int code = -1;
      const std::string out = docker_cli(args, &code);
      if (code != 0) throw OSError("docker " + args.front() + " failed (exit " + std::to_string(code) + ")");
      std::istringstream lines(out);
      for (std::string line; std::getline(lines, line);)
        if (!line.empty()) f.items.push_back(kind + line);
    }
    return std::optional<EngineFingerprint>(f);
  });
}

}  // namespace

TEST_CASE("CLEANUP §9.2 on Docker: RECLAIM is declared and RC-1…RC-8 pass as the container's own user; RESET is withheld, so RS-n skip") {
  Subject s("agent-cleanup");
  const auto& declared = s.scope.backend->declarations().capabilities;
  REQUIRE(declared.contains(Capability::Reclaim));
  CHECK_FALSE(declared.contains(Capability::Snapshot));
  auto results = run_cleanup(*s.subject);
  report(results);
  CHECK(ids(results, Outcome::Fail).empty());
  CHECK(ids(results, Outcome::Skip) == std::set<std::string>{"RS-1", "RS-2", "RS-3", "RS-4"});
  CHECK(ids(results, Outcome::Pass).size() == 8);
  // A reset without SNAPSHOT is refused by the core's gate, naming the capability.
  CHECK_THROWS_AS(s.scope.run([&] { return s.sandbox->reset(std::chrono::seconds(10)); }), NotImplementedError);
}

TEST_CASE("NL-1 §9.2 DISPOSE on Docker: acquire, work, dispose leaves no labelled container, network or volume of the scope") {
  Scope scope;
  auto inventory = scope_inventory(scope);
  auto keep = scope.acquire(spec_for(kImage, {Capability::Exec}, "bystander"), "agent-keep");  // lives throughout
  const auto r = assert_nothing_left_behind(inventory, [&] {
    auto sb = scope.acquire(spec_for(kImage, {Capability::Exec, Capability::FilesIn}, "call"), "agent-call", "call-1");
    scope.run([&] { return sb->write_file("/tmp/in.txt", "data", "/"); });
    REQUIRE(scope.sh(*sb, "cat /tmp/in.txt > /tmp/out.txt && (sleep 30 &) && true").exit_code == 0);
    sb.reset();
    if (auto failure =
            scope.run([&] { return scope.backend->dispose(scope.key("agent-call", "call-1"), std::nullopt, std::nullopt); }))
      throw OSError(failure->to_string());
  });
  CHECK(r.passed());
  // The broken double of DISPOSE: the same call without its disposal fails, naming the container.
  const auto broken = run_nothing_left_behind(inventory, [&] {
    auto sb = scope.acquire(spec_for(kImage, {Capability::Exec}, "leak"), "agent-leak", "call-2");
    REQUIRE(scope.sh(*sb, "true").exit_code == 0);
  });
  CHECK(broken.failed());
  CHECK_THAT(broken.message, Catch::Contains("container:"));
  // The scope purge in ~Scope removes the leaked one; the global leak check holds it to that.
}
