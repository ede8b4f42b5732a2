// EXEC (EX-1…EX-7): argv and shell forms run, exit codes,
// quoting, the working directory, separate streams, byte fidelity, and the caller's bound.
//
// This port's ExecResult has no `producer_owns_stderr` flag: every backend keeps the streams
// apart, so EX-5 and EX-6 hold every backend to the separate-stream branch.
#include <array>

#include "maf/sandbox/paths.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kExec{Capability::Exec};

void argv_runs(ProbeContext& c) {
  auto r = exec(c, std::vector<std::string>{"printf", "ok-ran"});
  if (r.exit_code != 0) fail("printf ok-ran exited " + std::to_string(r.exit_code) + ": " + describe(r));
  if (r.stdout_bytes != "ok-ran") fail("printf ok-ran printed " + quoted(r.stdout_bytes));
}

void exit_code(ProbeContext& c) {
  auto r = exec(c, Command("exit 7"));
  if (r.exit_code != 7) fail("the shell string 'exit 7' exited " + std::to_string(r.exit_code) + ", not 7");
}

void argv_quoted(ProbeContext& c) {
  const std::string hostile = "a b$(echo injected)c";
  auto r = exec(c, std::vector<std::string>{"sh", "-c", "printf %s \"$1\"", "probe", hostile});
  if (r.exit_code != 0) fail("sh -c exited " + std::to_string(r.exit_code) + ": " + describe(r));
  if (r.stdout_bytes != hostile)
    fail("the argument arrived as " + quoted(r.stdout_bytes) + ", not " + quoted(hostile) +
         (r.stdout_bytes.find("injected") != std::string::npos && r.stdout_bytes.find("$(") == std::string::npos
              ? " (a shell substituted it)"
              : ""));
}

void working_directory(ProbeContext& c) {
  auto r = exec(c, std::vector<std::string>{"pwd"});
  std::string got = r.stdout_bytes;
  while (!got.empty() && (got.back() == '\n' || got.back() == '\r' || got.back() == ' ')) got.pop_back();
  if (r.exit_code != 0) fail("pwd exited " + std::to_string(r.exit_code) + ": " + describe(r));
  if (normalize_guest_path(got) != c.paths.work)
    fail("pwd printed " + quoted(got) + ", not the working directory " + quoted(c.paths.work));
}

void streams_separate(ProbeContext& c) {
  auto r = exec(c, std::vector<std::string>{"sh", "-c", "printf OUT-MARKER-A; printf ERR-MARKER-B >&2"});
  if (r.exit_code != 0) fail("the stream script exited " + std::to_string(r.exit_code) + ": " + describe(r));
  std::string problems;
  auto has = [](const std::string& s, const char* m) { return s.find(m) != std::string::npos; };
  if (!has(r.stdout_bytes, "OUT-MARKER-A")) problems += "stdout lacks the stdout marker; ";
  if (has(r.stdout_bytes, "ERR-MARKER-B")) problems += "stderr was folded into stdout; ";
  if (!has(r.stderr_bytes, "ERR-MARKER-B")) problems += "stderr lacks the stderr marker; ";
  if (has(r.stderr_bytes, "OUT-MARKER-A")) problems += "stdout leaked into stderr; ";
  if (!problems.empty()) fail(problems + describe(r));
}

void byte_fidelity(ProbeContext& c) {
  const auto p = fidelity_payload();
  const std::string reversed(p.rbegin(), p.rend());
  const std::string out = "OUT:" + p;
  const std::string err = "ERR:" + reversed;
  const std::string script = "printf '" + printf_octal(out) + "'; printf '" + printf_octal(err) + "' >&2; exit 7";
  std::string problems;
  auto judge = [&](const char* form, const ExecResult& r) {
    if (r.exit_code != 7) problems += std::string(form) + ": exit " + std::to_string(r.exit_code) + ", not 7; ";
    if (r.stdout_bytes != out)
      problems += std::string(form) + ": stdout differs (" + std::to_string(r.stdout_bytes.size()) + " bytes, " +
                  std::to_string(out.size()) + " expected); ";
    if (r.stderr_bytes != err)
      problems += std::string(form) + ": stderr differs (" + std::to_string(r.stderr_bytes.size()) + " bytes, " +
                  std::to_string(err.size()) + " expected); ";
    if (!is_valid_utf8(r.stdout_text()) || !is_valid_utf8(r.stderr_text()))
      problems += std::string(form) + ": a text view is not valid UTF-8; ";
  };
  judge("shell string", exec(c, Command(script)));
  judge("argv sh -c", exec(c, std::vector<std::string>{"sh", "-c", script}));
  if (!problems.empty()) fail(problems);
}

void timeout_raises(ProbeContext& c) {
  using namespace std::chrono;
  const auto start = steady_clock::now();
  try {
    auto r = exec(c, std::vector<std::string>{"sleep", "30"}, {}, seconds(1));
    fail("sleep 30 with a 1 s timeout returned (exit " + std::to_string(r.exit_code) + ") instead of raising TimeoutError");
  } catch (const TimeoutError&) {
    const double elapsed = duration<double>(steady_clock::now() - start).count();
    // Scheduling tolerances, not precision (EX-7's window).
    if (elapsed < 0.5) fail("TimeoutError after " + std::to_string(elapsed) + " s: the backend's own ceiling, not the caller's 1 s bound");
    if (elapsed > 4.0) fail("TimeoutError only after " + std::to_string(elapsed) + " s (bound 1 s, allowed up to 4 s)");
  } catch (const ProbeFailed&) {
    throw;
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    fail("sleep 30 with a 1 s timeout raised " + type_name(e) + " (" + e.what() + "), not TimeoutError");
  }
}

constexpr std::array<Probe, 7> kProbes{{
    {Suite::Exec, "EX-1", "an-argv-sequence-runs", "positive control for the argv form", kExec, argv_runs},
    {Suite::Exec, "EX-2", "exit-code-fidelity",
     "callers branch on the exit code; normalising it (e.g. to 1) loses the program's answer; also the shell-string control",
     kExec, exit_code},
    {Suite::Exec, "EX-3", "argv-is-quoted",
     "an argv element is data: splitting or substituting it lets model text run as shell", kExec, argv_quoted},
    {Suite::Exec, "EX-4", "working-directory-is-honoured",
     "relative paths in the command must resolve where the caller said", kExec, working_directory},
    {Suite::Exec, "EX-5", "streams-stay-separate",
     "callers show stderr as diagnostics and parse stdout; folding them corrupts both", kExec, streams_separate},
    {Suite::Exec, "EX-6", "exec-byte-fidelity",
     "program output is bytes: no decoding, line-end translation or truncation in either form", kExec, byte_fidelity},
    {Suite::Exec, "EX-7", "a-timeout-raises-timeout-error",
     "TimeoutError means exactly that the caller's bound expired, and the command must not outlive it", kExec,
     timeout_raises},
}};

}  // namespace

std::span<const Probe> exec_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
