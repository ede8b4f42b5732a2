// HOST_TOOLS (docs/conformance.md "HOST_TOOLS"): the exec transport of host tools
// (docs/host-tools.md) attacked through the public surface. What a backend must show before
// it may declare HOST_TOOLS: a guest program's call reaches the host and its answer reaches
// the guest while the program runs (HT-1), an unregistered name is refused (HT-2), the caps
// refuse past their count and size (HT-3), and a program past its deadline is stopped with
// everything it started (HT-4). The transport runs its program attached to one exec, so
// what HT-1 proves is that file operations made during a running exec are seen by it.

#include <array>
#include <chrono>

#include "maf/sandbox/host_tools.hpp"
#include "maf/sandbox/host_tools_over_exec.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

using nlohmann::json;

// Only the gate (R7): the transport itself refuses a sandbox without exec and the file plane,
// so a backend that declares HOST_TOOLS without them fails every probe.
constexpr CapabilitySet kHostTools{Capability::HostTools};

std::unique_ptr<HostToolRegistry> registry(HostToolRegistry::Options options = {}) {
  auto r = std::make_unique<HostToolRegistry>(std::move(options));
  r->add({.name = "lookup",
          .parameters = json::parse(R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]})"),
          .declaration = HostToolDeclaration(Integrity::Trusted, std::nullopt, Identity::App),
          .function = [](const json& a, const HostToolCallContext&) {
            return json{{"record", a["id"].get<int>() * 6}};
          }});
  r->add({.name = "big",
          .declaration = HostToolDeclaration(std::nullopt, std::nullopt, std::nullopt),
          .function = [](const json& a, const HostToolCallContext&) {
            return json(std::string(a.value("n", 1), 'x'));
          }});
  r->aggregate();
  return r;
}

HostToolProgramResult run_program(ProbeContext& c, HostToolRun& run, std::string shell,
                                  std::chrono::milliseconds deadline) {
  const HostToolProgram program{
      .command = Command(std::move(shell)), .working_directory = c.paths.work, .deadline = deadline};
  return c.subject.runner()([&] { return run_with_host_tools(c.subject.sandbox(), run, program); });
}

std::string shown(const HostToolProgramResult& r) {
  return "exit " + std::to_string(r.exit_code) + ", " + std::to_string(r.requests) + " request(s), output " +
         detail::quoted(r.output.substr(0, 400));
}

void a_call_is_served(ProbeContext& c) {
  auto reg = registry();
  HostToolRun run(*reg);
  const auto r = run_program(c, run, "maf-host-tool lookup '{\"id\": 7}'", c.subject.exec_timeout());
  if (r.exit_code != 0 || r.output.find("{\"record\":42}") == std::string::npos)
    fail("the guest's call was not answered with the host function's value {\"record\":42}: " + shown(r));
  if (run.delivered() != 1) fail("the host delivered " + std::to_string(run.delivered()) + " responses, not 1");
  if (r.reclaim_failure) fail("the run directory was not removed: " + *r.reclaim_failure);
}

void an_unregistered_name_is_refused(ProbeContext& c) {
  auto reg = registry();
  HostToolRun run(*reg);
  const auto r = run_program(c, run, "maf-host-tool exfiltrate '{}'; echo \"status=$?\"", c.subject.exec_timeout());
  if (r.output.find("'exfiltrate' is not a registered host tool") == std::string::npos ||
      r.output.find("status=1") == std::string::npos)
    fail("a call to an unregistered name was not refused to the guest: " + shown(r));
  if (run.delivered() != 0) fail("an unregistered name was delivered a response");
}

void caps_refuse_past_count_and_size(ProbeContext& c) {
  auto reg = registry({.max_dispatches_per_run = 2, .response_limits = TransferLimits(100, 1000, 10)});
  HostToolRun run(*reg);
  const auto r = run_program(c, run,
                             "maf-host-tool big '{\"n\": 500}'; echo \"size=$?\"; "
                             "maf-host-tool lookup '{\"id\": 1}' >/dev/null; echo \"within=$?\"; "
                             "maf-host-tool lookup '{\"id\": 2}'; echo \"count=$?\"",
                             c.subject.exec_timeout());
  std::vector<std::string> problems;
  if (r.output.find("over the per-response cap of 100") == std::string::npos || r.output.find("size=1") == std::string::npos)
    problems.push_back("a 502-byte response passed a 100-byte cap");
  if (r.output.find("within=0") == std::string::npos) problems.push_back("a call within both caps was refused");
  if (r.output.find("dispatch cap (2) is exhausted") == std::string::npos || r.output.find("count=1") == std::string::npos)
    problems.push_back("a third dispatch passed a cap of 2");
  if (!problems.empty()) fail(join(problems) + ": " + shown(r));
}

void an_overrun_is_stopped_with_its_group(ProbeContext& c) {
  auto reg = registry();
  HostToolRun run(*reg);
  const std::string marker = "sleep 271.5" + process_tag();
  const auto deadline = std::chrono::milliseconds(4000);
  // Watched from before the start: the program sleeps until its deadline, so it is seen.
  ProcessSighting sighting(marker);
  try {
    const auto r = run_program(c, run, "echo started; (" + marker + " &); " + marker, deadline);
    fail("a program that sleeps for minutes was not stopped at its " + std::to_string(deadline.count()) +
         " ms deadline: " + shown(r));
  } catch (const SandboxProgramTimeout& e) {
    // The backend's own report of its stop (the transport carries it, never guesses it).
    if (e.signal() != SandboxProgramTimeout::Signal::Sent || e.reach() != SandboxProgramTimeout::Reach::Group)
      fail(std::string("the backend reports its stop as signal ") + to_string(e.signal()) + " and reach " +
           to_string(e.reach()) + ", not sent to the group: " + e.what());
  }
  sighting.expect_gone("the program or what it started in the background, after its deadline");
}

constexpr std::array<Probe, 4> kProbes{{
    {Suite::HostTools, "HT-1", "a-call-is-served",
     "a guest program's call reaches the host function and its value reaches the guest while the program runs",
     kHostTools, a_call_is_served},
    {Suite::HostTools, "HT-2", "an-unregistered-name-is-refused",
     "the registry is the one door: only registered functions are reachable from guest code", kHostTools,
     an_unregistered_name_is_refused},
    {Suite::HostTools, "HT-3", "caps-refuse-past-count-and-size",
     "a run's dispatch count and response size are bounded host-side, whatever the guest sends", kHostTools,
     caps_refuse_past_count_and_size},
    {Suite::HostTools, "HT-4", "an-overrun-is-stopped-with-its-group",
     "a program past its deadline must not keep running — nor anything it started — with host tools reachable",
     kHostTools, an_overrun_is_stopped_with_its_group},
}};

}  // namespace

std::span<const Probe> host_tools_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
