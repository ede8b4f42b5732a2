#pragma once
// The exec transport's scenarios (docs/host-tools.md HT-T1…T6), shared by the process
// backend's and Docker's tests: each takes an acquired sandbox that declares HOST_TOOLS.
#include <catch2/catch.hpp>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first


#include <chrono>
#include <string>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/host_tools.hpp"
#include "maf/sandbox/host_tools_over_exec.hpp"

namespace host_tools_test {

using namespace maf::sandbox;
using nlohmann::json;

/// A sealed registry with `lookup` (id -> a record), `fail` (throws) and `big` (n bytes).
inline std::unique_ptr<HostToolRegistry> registry(HostToolRegistry::Options options = {}) {
  auto r = std::make_unique<HostToolRegistry>(std::move(options));
  r->add({.name = "lookup",
          .parameters = json::parse(R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]})"),
          .declaration = HostToolDeclaration(Integrity::Trusted, std::nullopt, Identity::App),
          .function = [](const json& a, const HostToolCallContext&) {
            return json{{"id", a["id"]}, {"name", "Ada Lovelace"}};
          }});
  r->add({.name = "fail",
          .declaration = HostToolDeclaration(std::nullopt, std::nullopt, std::nullopt),
          .function = [](const json&, const HostToolCallContext&) -> json { throw std::runtime_error("secret detail"); }});
  r->add({.name = "big",
          .declaration = HostToolDeclaration(std::nullopt, std::nullopt, std::nullopt),
          .function = [](const json& a, const HostToolCallContext&) {
            return json(std::string(a.value("n", 1), 'x'));
          }});
  r->aggregate();
  return r;
}

inline HostToolProgramResult run_program(Sandbox& sb, HostToolRun& run, std::string shell,
                                         std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
  BlockingRunner runner;
  const HostToolProgram program{.command = Command(std::move(shell)), .deadline = deadline};  // named: see the header
  return runner([&] { return run_with_host_tools(sb, run, program); });
}

/// No `.maf-host-tools-*` directory is left in the sandbox's base (judged by the guest).
inline void no_run_directory_left(Sandbox& sb) {
  BlockingRunner runner;
  const auto r = runner([&] { return sb.exec(Command("ls -A . | grep -c '^.maf-host-tools-' || true"), "."); });
  CHECK(r.stdout_text() == "0\n");
}

inline void a_call_is_served(Sandbox& sb) {
  auto reg = registry();
  HostToolRun run(*reg);
  const auto r = run_program(sb, run,
                             "v=$(maf-host-tool lookup '{\"id\": 7}') || exit 3; echo \"value=$v\"; "
                             "printf %s \"$v\" > answer.json");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.requests == 1);
  CHECK_THAT(r.output, Catch::Contains("\"name\":\"Ada Lovelace\""));
  CHECK_FALSE(r.reclaim_failure);
  // The program ran in the working directory, so what it wrote there stays to be collected.
  BlockingRunner runner;
  CHECK(json::parse(runner([&] { return sb.read_file("answer.json"); })) == json{{"id", 7}, {"name", "Ada Lovelace"}});
  no_run_directory_left(sb);
  runner([&] { return sb.remove("answer.json"); });
}

inline void refusals_reach_the_guest(Sandbox& sb) {
  auto reg = registry({.max_dispatches_per_run = 4});
  HostToolRun run(*reg);
  const auto r = run_program(sb, run,
                             "maf-host-tool nosuch '{}'; echo \"nosuch=$?\"; "
                             "maf-host-tool lookup '{\"id\": \"seven\"}'; echo \"badargs=$?\"; "
                             "maf-host-tool fail; echo \"fail=$?\"; "
                             "maf-host-tool lookup '{\"id\": 1}' >/dev/null; echo \"ok=$?\"; "
                             "maf-host-tool lookup '{\"id\": 2}'; echo \"capped=$?\"");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.requests == 5);
  CHECK_THAT(r.output, Catch::Contains("'nosuch' is not a registered host tool") && Catch::Contains("nosuch=1"));
  CHECK_THAT(r.output, Catch::Contains("do not match its schema") && Catch::Contains("badargs=1"));
  CHECK_THAT(r.output, Catch::Contains("'fail' failed") && Catch::Contains("fail=1"));
  CHECK_THAT(r.output, !Catch::Contains("secret detail"));
  CHECK_THAT(r.output, Catch::Contains("ok=0"));
  CHECK_THAT(r.output, Catch::Contains("dispatch cap (4) is exhausted") && Catch::Contains("capped=1"));
  no_run_directory_left(sb);
}

inline void response_size_cap(Sandbox& sb) {
  auto reg = registry({.response_limits = TransferLimits(1000, 1500, 10)});
  HostToolRun run(*reg);
  const auto r = run_program(sb, run,
                             "maf-host-tool big '{\"n\": 5000}'; echo \"huge=$?\"; "
                             "maf-host-tool big '{\"n\": 900}' | wc -c; "
                             "maf-host-tool big '{\"n\": 900}'; echo \"over-budget=$?\"");
  INFO(r.output);
  CHECK_THAT(r.output, Catch::Contains("over the per-response cap of 1000") && Catch::Contains("huge=1"));
  CHECK_THAT(r.output, Catch::Contains("903"));  // 900 x's, two quotes, a newline
  CHECK_THAT(r.output, Catch::Contains("byte budget of 1500") && Catch::Contains("over-budget=1"));
}

/// Garbage, a forged id, a directory where a request should be, and a request over the cap:
/// each answered with a refusal, and the run goes on to serve a well-formed call after them.
/// Each is published whole (one write, or staged and renamed) as the clients do: a request
/// read half-written is the writer's race, answered as whatever the half parses to.
inline void garbage_requests_are_answered(Sandbox& sb) {
  auto reg = registry({.response_limits = TransferLimits(4096, 1 << 20, 64)});
  HostToolRun run(*reg);
  const auto r = run_program(
      sb, run,
      "c=$MAF_HOST_TOOLS_CALLS; "
      "answer() { while [ ! -e \"$c/$1.done\" ]; do sleep 0.02; done; sed -n 2p \"$c/$1.response\"; }; "
      ": > \"$c/0001.claim\"; printf 'not json' > \"$c/0001.request.json\"; answer 0001; "
      ": > \"$c/0002.claim\"; printf '{\"id\":\"0009\",\"name\":\"lookup\",\"arguments\":{\"id\":1}}' > \"$c/0002.request.json\"; answer 0002; "
      ": > \"$c/0003.claim\"; mkdir \"$c/0003.request.json\"; answer 0003; "
      ": > \"$c/0004.claim\"; head -c 5000 /dev/zero | tr '\\0' ' ' > \"$c/0004.part\"; "
      "mv \"$c/0004.part\" \"$c/0004.request.json\"; answer 0004; "
      ": > \"$c/0005.claim\"; printf '{\"id\":\"0005\",\"abandoned\":true}' > \"$c/0005.request.json\"; "
      "maf-host-tool lookup '{\"id\": 3}'");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("not a JSON object"));
  CHECK_THAT(r.output, Catch::Contains("does not carry its own id (0002)"));
  CHECK_THAT(r.output, Catch::Contains("not a regular file"));
  CHECK_THAT(r.output, Catch::Contains("over the request cap of 4096"));
  CHECK_THAT(r.output, Catch::Contains("{\"id\":3,\"name\":\"Ada Lovelace\"}"));
  CHECK(run.dispatched() == 1);  // only the well-formed request reached the registry
  no_run_directory_left(sb);
}

/// HT-T6's Python client, judged: empty when `maf_host_tools.call` returned the value and
/// raised HostToolError for a refusal; otherwise the problem. A guest without `interpreter` is
/// a problem too, never a pass (issue 50): run this on an image that has it (the process
/// backend's guest has the host's /usr, where scripts/setup installs python3).
inline std::string python_client_problem(Sandbox& sb, const std::string& interpreter = "python3") {
  auto reg = registry();
  HostToolRun run(*reg);
  const auto r = run_program(sb, run,
                             "command -v " + interpreter + " >/dev/null || { echo no-python; exit 97; }; " +
                                 interpreter + " -c 'import maf_host_tools as h\n"
                                 "print(h.call(\"lookup\", id=11)[\"name\"])\n"
                                 "try:\n    h.call(\"nosuch\")\nexcept h.HostToolError as e:\n    print(\"refused:\", e)'");
  if (r.exit_code == 97 && r.output.find("no-python") != std::string::npos)
    return "the guest has no " + interpreter + ": the Python client was not exercised (a missing interpreter fails HT-T6)";
  if (r.exit_code != 0) return "the Python program exited " + std::to_string(r.exit_code) + ": " + r.output;
  if (r.output.find("Ada Lovelace") == std::string::npos || r.output.find("refused: Error: 'nosuch'") == std::string::npos)
    return "the Python client did not return the value and raise the refusal: " + r.output;
  return {};
}

/// HT-T4: past its deadline the timeout carries the output so far, a delivered signal and its
/// reach. That nothing keeps running afterwards is the HOST_TOOLS conformance probe HT-4's to
/// judge (on the same backends, stages 40 and 50), written once there.
/// `deadline` leaves room for one served call: on Docker's CLI transport a dispatch costs
/// some thirty engine-client processes (docs/host-tools.md "Cost").
inline void overrun_is_stopped(Sandbox& sb, const std::string& marker, std::chrono::milliseconds deadline) {
  auto reg = registry();
  HostToolRun run(*reg);
  try {
    run_program(sb, run,
                "echo before-the-deadline; maf-host-tool lookup '{\"id\": 5}'; (sleep " + marker +
                    " &); sleep " + marker,
                deadline);
    FAIL("the program was not stopped at its deadline");
  } catch (const SandboxProgramTimeout& e) {
    INFO(e.what());
    CHECK_THAT(e.output(), Catch::Contains("before-the-deadline") && Catch::Contains("Ada Lovelace"));
    CHECK(e.signal() == SandboxProgramTimeout::Signal::Sent);
    CHECK(e.reach() == SandboxProgramTimeout::Reach::Group);
    CHECK_THAT(e.what(), Catch::Contains(std::to_string(deadline.count()) + " ms") && Catch::Contains("1 request"));
  }
}

/// HT-T5, judged: a program that deletes its own run directory mid-run loses its pending call,
/// and the host is *not blocked* — the run ends when the program does, with a typed read
/// failure (FileNotFoundError naming the run's exit status: the output file went with the
/// directory) or a result (an engine that kept the open file). Empty when so; the problem
/// otherwise — above all a SandboxProgramTimeout, which is the host blocked to the deadline
/// (an OSError, whose message says "output": the old check passed it, issue 50).
inline std::string deleted_run_directory_problem(Sandbox& sb, std::chrono::milliseconds deadline = std::chrono::seconds(20)) {
  auto reg = registry();
  HostToolRun run(*reg);
  try {
    const auto r = run_program(sb, run,
                               "rm -rf \"${MAF_HOST_TOOLS_CALLS%/calls}\"; maf-host-tool lookup '{\"id\": 1}'; "
                               "echo \"after=$?\"",
                               deadline);
    if (r.requests != 0) return "a request was served from a deleted run directory: " + r.output;
    return {};
  } catch (const SandboxProgramTimeout& e) {
    return std::string("the host stayed blocked to the deadline: ") + e.what();
  } catch (const FileNotFoundError& e) {
    if (std::string(e.what()).find("left no output file (exit ") == std::string::npos)
      return std::string("the read failure does not name the run's exit status: ") + e.what();
    return {};
  }
}

}  // namespace host_tools_test
