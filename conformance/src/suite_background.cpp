// BACKGROUND (docs/conformance.md "BACKGROUND"; docs/background.md BG-1…BG-10): background
// processes (background.hpp) driven through the public surface. What a backend must show
// before it may declare BACKGROUND: its execs run beside one that is still running, share the
// guest's files with it, and leave it running — so a program started runs on after the start
// returned and a later exec reaches it (BG-1); its own exit code comes back and a wait that
// times out says "running" (BG-2); what it wrote so far is readable while it runs, under a
// cap that flags a cut (BG-3); a signal reaches its whole process group (BG-4); a handle
// rebuilt from the id sees the same process (BG-5); an id never started is refused (BG-6); a
// program past its lifetime is ended, and the sandbox with its files stays (BG-8).
// Every probe waits for a file it creates, never for time; each stops what it started.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <thread>

#include "maf/sandbox/background.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kBackground{Capability::Background};

/// The subject's sandbox as the shared_ptr background.hpp takes: not owning — the subject
/// does, for longer than any probe.
std::shared_ptr<Sandbox> borrowed(ProbeContext& c) { return std::shared_ptr<Sandbox>(std::shared_ptr<Sandbox>(), &c.subject.sandbox()); }

/// A program run by a probe: stopped (SIGKILL to its group) however the probe ends.
struct Started {
  ProbeContext& c;
  BackgroundProcess process;
  ~Started() {
    try {
      c.subject.runner()([&] { return process.stop(std::chrono::seconds(10)); });
    } catch (const std::exception&) {
    }
  }
};

std::unique_ptr<Started> start(ProbeContext& c, std::string line,
                               std::chrono::milliseconds lifetime = BackgroundOptions{}.lifetime) {
  BackgroundOptions o{.working_directory = c.paths.work, .lifetime = lifetime, .start_timeout = c.subject.exec_timeout()};
  auto p = c.subject.runner()([&] { return start_background(borrowed(c), Command(std::move(line)), o); });
  // Built in place: a moved-from temporary's destructor would stop the program.
  return std::unique_ptr<Started>(new Started{c, std::move(p)});
}

/// A unique name in W for this probe's files.
std::string fresh(std::string_view stem) { return "bg-" + std::string(stem) + "-" + std::to_string(::getpid()); }

BackgroundStatus wait_for(ProbeContext& c, const BackgroundProcess& p) {
  return c.subject.runner()([&] { return p.wait(c.subject.exec_timeout()); });
}

std::string shown(const BackgroundStatus& s) {
  return s.running ? std::string("still running") : "ended with " + (s.exit_code ? std::to_string(*s.exit_code) : std::string("no code"));
}

/// Until `relative` exists in W (the program says it got there), bounded guest-side.
void await_file(ProbeContext& c, const std::string& relative, std::string_view what) {
  const auto r = exec(c, Command("i=0; while [ ! -e '" + relative + "' ] && [ $i -lt 1200 ]; do sleep 0.05 2>/dev/null || sleep 1; i=$((i+1)); done; test -e '" + relative + "'"));
  if (r.exit_code != 0) fail("the program never " + std::string(what) + " ('" + relative + "' did not appear): " + describe(r));
}

void runs_on_after_start(ProbeContext& c) {
  const std::string go = fresh("go1");
  const std::string effect = fresh("effect1");
  auto s = start(c, "while [ ! -e '" + go + "' ]; do sleep 0.05 2>/dev/null || sleep 1; done; echo fed > '" + effect + "'");
  const auto before = c.subject.runner()([&] { return s->process.poll(); });
  if (!before.running) fail("the program ended before a later exec could reach it: " + shown(before));
  exec(c, Command("touch '" + go + "'"));
  const auto after = wait_for(c, s->process);
  if (after.running || after.exit_code != 0) fail("after a later exec fed it, the program is " + shown(after));
  const auto r = exec(c, Command("cat '" + effect + "'"));
  if (r.stdout_text() != "fed\n") fail("a later exec does not see the program's effect: " + describe(r));
}

void wait_reports_its_own_code(ProbeContext& c) {
  const std::string go = fresh("go2");
  auto s = start(c, "while [ ! -e '" + go + "' ]; do sleep 0.05 2>/dev/null || sleep 1; done; exit 42");
  BackgroundStatus early;
  try {
    early = c.subject.runner()([&] { return s->process.wait(std::chrono::milliseconds(300)); });
  } catch (const std::exception& e) {
    fail("a wait that timed out raised " + type_name(e) + " instead of saying 'still running': " + e.what());
  }
  if (!early.running) fail("a program waiting for its go was reported " + shown(early));
  exec(c, Command("touch '" + go + "'"));
  const auto ended = wait_for(c, s->process);
  if (ended.running || ended.exit_code != 42) fail("a program that exits 42 is reported " + shown(ended));
}

void output_so_far(ProbeContext& c) {
  const std::string go = fresh("go3");
  const std::string ready = fresh("ready3");
  auto s = start(c, "printf 0123456789; printf oops >&2; touch '" + ready + "'; while [ ! -e '" + go +
                        "' ]; do sleep 0.05 2>/dev/null || sleep 1; done");
  await_file(c, ready, "wrote its output");
  std::vector<std::string> problems;
  const auto whole = c.subject.runner()([&] { return s->process.output(10); });
  if (whole.stdout_bytes != "0123456789" || whole.stdout_truncated)
    problems.push_back("stdout so far (cap 10) is " + quoted(whole.stdout_bytes) + (whole.stdout_truncated ? " (flagged cut)" : ""));
  if (whole.stderr_bytes != "oops" || whole.stderr_truncated)
    problems.push_back("stderr so far is " + quoted(whole.stderr_bytes));
  const auto cut = c.subject.runner()([&] { return s->process.output(4); });
  if (cut.stdout_bytes != "0123" || !cut.stdout_truncated)
    problems.push_back("stdout under a cap of 4 is " + quoted(cut.stdout_bytes) + (cut.stdout_truncated ? "" : ", not flagged cut"));
  if (!c.subject.runner()([&] { return s->process.poll(); }).running) problems.push_back("the program ended before its go");
  exec(c, Command("touch '" + go + "'"));
  // Read so far means "while it runs on": the program must still finish on its own after.
  const auto ended = wait_for(c, s->process);
  if (ended.running || ended.exit_code != 0) problems.push_back("after its go the program is " + shown(ended));
  if (!problems.empty()) fail(join(problems));
}

void a_signal_stops_the_group(ProbeContext& c) {
  const std::string ready = fresh("ready4");
  const std::string marker = "sleep 3141." + process_tag();
  // A child forked twice over (reparented away from the program) and one it waits for.
  ProcessSighting sighting(marker);
  auto s = start(c, "(" + marker + " &); " + marker + " & touch '" + ready + "'; wait");
  await_file(c, ready, "forked its children");
  sighting.await_seen();  // its children were forked: they are seen now, or never (a skip below)
  const bool delivered = c.subject.runner()([&] { return s->process.signal(15); });
  const auto ended = wait_for(c, s->process);
  if (!delivered || ended.running || ended.exit_code != 128 + 15)
    fail(std::string("SIGTERM was ") + (delivered ? "delivered" : "not delivered") + " and the program is " + shown(ended) +
         " (not ended by the signal: 143)");
  sighting.expect_gone("forked by the program, after the signal to its group");
}

void a_rebuilt_handle_works(ProbeContext& c) {
  const std::string go = fresh("go5");
  auto s = start(c, "while [ ! -e '" + go + "' ]; do sleep 0.05 2>/dev/null || sleep 1; done; echo rebuilt; exit 5");
  const std::string id = s->process.id();
  const auto again = c.subject.runner()([&] { return find_background(borrowed(c), id); });
  if (!c.subject.runner()([&] { return again.poll(); }).running) fail("the rebuilt handle sees the program ended before its go");
  exec(c, Command("touch '" + go + "'"));
  const auto ended = c.subject.runner()([&] { return again.wait(c.subject.exec_timeout()); });
  const auto out = c.subject.runner()([&] { return again.output(100); });
  if (ended.running || ended.exit_code != 5 || out.stdout_bytes != "rebuilt\n")
    fail("through a handle rebuilt from id '" + id + "' the program is " + shown(ended) + " with stdout " +
         quoted(out.stdout_bytes) + " (expected ended with 5, \"rebuilt\\n\")");
}

void an_unknown_id_is_refused(ProbeContext& c) {
  const std::string id = "never" + std::to_string(10000000000 + ::getpid());  // 16 characters
  try {
    c.subject.runner()([&] { return find_background(borrowed(c), id); });
  } catch (const BackgroundProcessNotFound& e) {
    if (std::string(e.what()).find(id) == std::string::npos) fail("the refusal does not name the id: " + std::string(e.what()));
    return;
  }
  fail("find_background of id '" + id + "', never started, returned a handle");
}

void a_lifetime_ends_the_program_not_the_sandbox(ProbeContext& c) {
  const std::string keeper = fresh("keeper8");
  exec(c, Command("echo kept > '" + keeper + "'"));
  // Never ends by itself: only its lifetime can end it.
  auto s = start(c, "while :; do sleep 0.05 2>/dev/null || sleep 1; done", std::chrono::seconds(1));
  const auto ended = wait_for(c, s->process);
  if (ended.running || ended.exit_code != 128 + 9 || !ended.expired)
    fail("a program whose lifetime of 1 s passed is " + shown(ended) + (ended.expired ? " (expired)" : " (not flagged expired)") +
         " (expected ended with 137, expired)");
  // The lifetime ends the program only: the sandbox, and what is in it, stays.
  const auto r = exec(c, Command("cat '" + keeper + "'"));
  if (r.exit_code != 0 || r.stdout_text() != "kept\n")
    fail("after a background program's lifetime ended it, the sandbox lost its files: " + describe(r));
}

constexpr std::array<Probe, 7> kProbes{{
    {Suite::Background, "BG-1", "runs-on-after-start",
     "a background program must keep running after its start returned, where later calls can reach it", kBackground,
     runs_on_after_start},
    {Suite::Background, "BG-2", "wait-reports-its-own-code",
     "a caller decides on the program's own exit code, and a wait that times out is not a failure", kBackground,
     wait_reports_its_own_code},
    {Suite::Background, "BG-3", "output-so-far-under-a-cap",
     "a long program's progress is readable while it runs, and a cut is flagged, never silent", kBackground,
     output_so_far},
    {Suite::Background, "BG-4", "a-signal-stops-the-group",
     "stopping a program must stop what it started too, or its children run on unobserved", kBackground,
     a_signal_stops_the_group},
    {Suite::Background, "BG-5", "a-rebuilt-handle-works",
     "a later call holds only the id: the state must live in the guest, not in the host that started it",
     kBackground, a_rebuilt_handle_works},
    {Suite::Background, "BG-6", "an-unknown-id-is-refused",
     "a lookup must not hand out a handle on nothing, which would report a program that never ran", kBackground,
     an_unknown_id_is_refused},
    {Suite::Background, "BG-8", "a-lifetime-ends-the-program-not-the-sandbox",
     "a program past its lifetime must end, and only it: a sandbox torn down with it loses every other call's work",
     kBackground, a_lifetime_ends_the_program_not_the_sandbox},
}};

}  // namespace

std::span<const Probe> background_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
