// EXEC_ENV (docs/conformance.md "EXEC_ENV"; docs/exec-input.md ENV-1…ENV-7): a command's own
// environment, attacked through the public surface. What a backend must show before it may
// declare EXEC_ENV: the bytes arrive exactly, without a shell reading them (EE-1); they add to
// and override the base environment (EE-2) for that command only (EE-3); the values are on
// no command line the guest or the host can list while the command runs (EE-4); and hostile
// input is refused by name before anything runs (EE-5).
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include <unistd.h>

#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kEnv{Capability::ExecEnv};

/// A value unique to this run, so a scan finds only this probe's copy.
std::string unique_value(const char* what) {
  static std::atomic<unsigned> n{0};
  return std::string("maf-ee-") + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

void values_arrive_exactly(ProbeContext& c) {
  // Quotes, `$()`, `;`, a backslash, spaces at both ends, `=` and UTF-8: a shell that read the
  // value, or a quoting step, changes at least one of them.
  const std::string value = " a 'b' \"c\" $(touch pwned) ; `id` \\n x=y é ";
  const auto r = exec_with(c, Command({"sh", "-c", "printf %s \"$MAF_EE_VALUE\""}),
                           ExecInput{.environment = {{"MAF_EE_VALUE", value}}});
  if (r.exit_code != 0 || r.stdout_bytes != value)
    fail("MAF_EE_VALUE did not arrive byte for byte: expected " + quoted(value) + ", got " + describe(r));
  if (present(c, c.paths.in_work("pwned"))) fail("a value was run by a shell: its $(touch pwned) made a file");
}

void overrides_the_base(ProbeContext& c) {
  const auto base = exec(c, Command({"sh", "-c", "printf %s \"$HOME\""}));
  const std::string home = c.paths.in_work("ee2-home");
  const auto r = exec_with(c, Command({"sh", "-c", "printf '%s|%s' \"$HOME\" \"$MAF_EE_ADDED\""}),
                           ExecInput{.environment = {{"HOME", home}, {"MAF_EE_ADDED", "added"}}});
  if (r.stdout_text() != home + "|added")
    fail("HOME was not overridden and MAF_EE_ADDED not added: expected " + quoted(home + "|added") + ", got " +
         describe(r) + " (the base HOME is " + quoted(base.stdout_text()) + ")");
}

void for_that_command_only(ProbeContext& c) {
  const std::string value = unique_value("once");
  const auto with = exec_with(c, Command({"sh", "-c", "printf %s \"$MAF_EE_ONCE\""}),
                              ExecInput{.environment = {{"MAF_EE_ONCE", value}}});
  if (with.stdout_text() != value) fail("the variable did not reach its command: " + describe(with));
  const auto after = exec(c, Command({"sh", "-c", "printf %s \"${MAF_EE_ONCE-unset}\""}));
  if (after.stdout_text() != "unset")
    fail("a later command without the variable still sees it: " + describe(after));
}

void values_on_no_command_line(ProbeContext& c) {
  // While the command runs, its value must be on no command line: not in the guest's process
  // list (what the guest's other programs can read), and not on the runner's host (where the
  // launch — a CLI client, bubblewrap — runs, readable by every host user).
  const std::string secret = unique_value("secret");
  // About a second and a half: long enough for the scans, a marker no other probe's run uses.
  const std::string sleeper = "sleep 1.5" + process_tag() + "1";
  ProcessSighting sighting(sleeper);
  std::atomic<bool> on_host{false};
  std::atomic<bool> stop{false};
  std::thread scan([&] {
    while (!stop.load()) {
      if (host_runs(secret)) on_host.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const std::string list = "for f in /proc/[0-9]*/cmdline; do tr '\\000' ' ' < \"$f\" 2>/dev/null; echo; done";
  ExecResult r;
  try {
    r = exec_with(c, Command({"sh", "-c", sleeper + " & " + list + "; wait"}),
                  ExecInput{.environment = {{"MAF_EE_SECRET", secret}}});
  } catch (...) {
    stop.store(true);
    scan.join();
    throw;
  }
  stop.store(true);
  scan.join();
  if (r.exit_code != 0) fail("the listing command failed: " + describe(r));
  if (r.stdout_text().find(secret) != std::string::npos)
    fail("the value of MAF_EE_SECRET is on a command line the guest can list");
  if (on_host.load()) fail("the value of MAF_EE_SECRET was on a command line on the runner's host while it ran");
  if (!sighting.seen())
    throw ProbeNotApplicable("the guest's processes are not visible on the runner's host (a VM or a remote "
                             "engine): only the guest's own listing was checked");
}

void hostile_input_refused(ProbeContext& c) {
  const std::string marker = c.paths.in_work("ee5-ran");
  const Command touch({"touch", marker});
  std::vector<std::string> problems;
  const auto expect = [&](const std::string& what, ExecInput input) {
    if (auto p = refusal_problem<SandboxEnvironmentRefused>(what, "SandboxEnvironmentRefused",
                                                            [&] { exec_with(c, touch, std::move(input)); }))
      problems.push_back(*p);
  };
  expect("a name with '='", ExecInput{.environment = {{"A=B", "x"}}});
  expect("an empty name", ExecInput{.environment = {{"", "x"}}});
  expect("a name starting with a digit", ExecInput{.environment = {{"1A", "x"}}});
  expect("a name with a NUL", ExecInput{.environment = {{std::string("A\0B", 3), "x"}}});
  expect("a NUL in a value", ExecInput{.environment = {{"MAF_EE_NUL", std::string("a\0b", 3)}}});
  expect("a value past the bound", ExecInput{.environment = {{"MAF_EE_BIG", std::string(kMaxExecEnvValueBytes + 1, 'x')}}});
  ExecInput many;
  for (std::size_t i = 0; i <= kMaxExecEnvVariables; ++i) many.environment.emplace("MAF_EE_" + std::to_string(i), "x");
  expect("more variables than allowed", std::move(many));
  ExecInput huge;
  for (std::size_t i = 0; i < kMaxExecEnvTotalBytes / kMaxExecEnvValueBytes + 1; ++i)
    huge.environment.emplace("MAF_EE_H" + std::to_string(i), std::string(kMaxExecEnvValueBytes, 'y'));
  expect("an environment past the total bound", std::move(huge));
  if (present(c, marker)) problems.push_back("a refused command ran anyway (it made " + marker + ")");
  if (!problems.empty()) fail(join(problems));
}

constexpr std::array<Probe, 5> kProbes{{
    {Suite::ExecEnv, "EE-1", "values-arrive-exactly",
     "a value a shell read or a quoting step touched is a different value, or a command the host never meant", kEnv,
     values_arrive_exactly},
    {Suite::ExecEnv, "EE-2", "overrides-the-base",
     "a host sets HOME, PATH or LANG for one command; an ignored override runs it somewhere else", kEnv,
     overrides_the_base},
    {Suite::ExecEnv, "EE-3", "for-that-command-only",
     "a token given to one command must not reach the next, which may be the model's", kEnv, for_that_command_only},
    {Suite::ExecEnv, "EE-4", "values-on-no-command-line",
     "a command line is readable by every process that lists them, in the guest and on the host", kEnv,
     values_on_no_command_line},
    {Suite::ExecEnv, "EE-5", "hostile-input-refused-by-name",
     "a name with '=' or a NUL would set another variable or cut the value; a huge environment fails execve", kEnv,
     hostile_input_refused},
}};

}  // namespace

std::span<const Probe> exec_env_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
