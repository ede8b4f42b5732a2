// A command's own environment and stdin on a real engine (docs/exec-input.md ENV-4, STDIN-1…
// STDIN-4), once per transport (MAF_DOCKER_TRANSPORT): the Engine API's exec `Env` and its
// attached stdin on the hijacked connection; the CLI's `--env-file /dev/fd/N` and `-i`. The
// shared EXEC_ENV and EXEC_STDIN suites, then what is particular to each transport.
#include <utility>

#include <maf/sandbox/conformance/conformance.hpp>

#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;

namespace {

const CapabilitySet kInputCaps{Capability::Exec, Capability::ExecStream, Capability::ExecEnv, Capability::ExecStdin,
                               Capability::FilesIn};

bool on_cli() {
  const char* t = std::getenv("MAF_DOCKER_TRANSPORT");
  return t && std::string(t) == "cli";
}

void all_pass(const std::vector<conformance::ProbeResult>& results) {
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
  REQUIRE_FALSE(results.empty());
  for (const auto& r : results) CHECK(r.outcome == conformance::Outcome::Pass);
}

}  // namespace

TEST_CASE("ENV-4 STDIN-1 on Docker: EXEC_ENV and EXEC_STDIN pass with no skips, on this transport") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kInputCaps, "conformance"));
  conformance::PosixGuestSubject subject(scope.run, sb, scope.backend->declarations().capabilities, Egress::Closed);
  all_pass(conformance::run_exec_env(subject));
  all_pass(conformance::run_exec_stdin(subject));
}

TEST_CASE("STDIN-4 on Docker: stdin reaches an exec_stream, and a program's own end is not held up by unread input") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kInputCaps));
  std::string out;
  ExecStreamOptions o;
  o.input.stdin_bytes = "line one\nline two\n";
  o.input.environment = {{"PREFIX", "got: "}};
  const auto exit = scope.run([&] {
    return sb->exec_stream(Command({"sh", "-c", "while read -r l; do printf '%s%s\\n' \"$PREFIX\" \"$l\"; done"}),
                           [&](OutputStream s, std::string_view b) {
                             if (s == OutputStream::Stdout) out.append(b);
                           },
                           o);
  });
  CHECK(exit.exit_code == 0);
  CHECK(out == "got: line one\ngot: line two\n");
  // `head -c 1` reads one byte of 8 MiB and exits: the rest is never read, and that is no failure.
  const ExecInput eight_mib{.stdin_bytes = std::string(8 << 20, 'q')};  // named (AGENT-1)
  const auto head = scope.run([&] { return sb->exec(Command({"head", "-c", "1"}), eight_mib); });
  CHECK(head.exit_code == 0);
  CHECK(head.stdout_bytes == "q");
  // The sandbox answers afterwards, in the same container.
  CHECK(scope.sh(*sb, "echo alive").stdout_bytes == "alive\n");
}

TEST_CASE("ENV-4 on Docker: a value a transport cannot carry unchanged is refused naming the variable") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kInputCaps));
  const std::string not_utf8 = "\xff\xfe";
  const auto refused = [&](const std::string& value) -> std::string {
    try {
      const ExecInput odd{.environment = {{"ODD", value}}};
      scope.run([&] { return sb->exec(Command({"true"}), odd); });
    } catch (const SandboxEnvironmentRefused& e) {
      return e.what();
    }
    return {};
  };
  CHECK_THAT(refused(not_utf8), Catch::Contains("'ODD'"));
  if (on_cli()) {
    // The env-file format is one line per variable.
    CHECK_THAT(refused("two\nlines"), Catch::Contains("'ODD'") && Catch::Contains("line break"));
  } else {
    // The Engine API carries a line break.
    const ExecInput two_lines{.environment = {{"ML", "two\nlines"}}};
    const auto r = scope.run([&] { return sb->exec(Command({"sh", "-c", "printf %s \"$ML\""}), two_lines); });
    CHECK(r.stdout_bytes == "two\nlines");
  }
}

TEST_CASE("ENV-4 on Docker: a name the client itself reads (DOCKER_HOST, LD_PRELOAD, PATH) reaches only the guest") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kInputCaps));
  // In the client's own environment these would send the exec to another engine, or load a
  // library into the client: the exec must still run here, and the guest see them verbatim.
  const ExecInput client_names{.environment = {{"DOCKER_HOST", "tcp://203.0.113.1:2375"},
                                                {"LD_PRELOAD", "/nonexistent/evil.so"},
                                                {"PATH", "/bin:/usr/bin"}}};
  const auto r = scope.run([&] {
    return sb->exec(Command({"/bin/sh", "-c", "printf '%s|%s|%s' \"$DOCKER_HOST\" \"$LD_PRELOAD\" \"$PATH\""}),
                    client_names);
  });
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_bytes == "tcp://203.0.113.1:2375|/nonexistent/evil.so|/bin:/usr/bin");
}
