// LIMITS (docs/conformance.md "LIMITS", docs/limits.md): each declared resource bound attacked
// in a sandbox acquired with exactly that bound. What a backend must show before it may
// declare a bound: a memory hog is killed and the kill reported (LM-1), a fork loop stops at
// the process bound while the host keeps forking (LM-2), a CPU-bound program gets about its
// share — CPU time over wall time, with a wide margin (LM-3) — and a sandbox past its TTL is
// gone at the next acquire of its key and by reap_expired (LM-4).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <regex>
#include <sstream>
#include <thread>

#include "maf/sandbox/conformance/limits.hpp"
#include "maf/sandbox/conformance/probe.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance {
namespace {

using std::chrono::seconds;

struct LimitsProbe {
  std::string_view id;
  std::string_view name;
  std::string_view why;
  ResourceBound bound;
  void (*run)(LimitsSubject&);
};

ExecResult exec_in(LimitsSubject& s, Sandbox& sb, const std::string& shell) {
  const Command command(shell);
  return s.runner()([&] { return sb.exec(command, ".", s.exec_timeout()); });
}

constexpr std::int64_t kHogBytes = 256 << 20;

void a_memory_hog_is_killed_and_reported(LimitsSubject& s) {
  auto sb = s.acquire("memory", ResourceLimits({.memory_bytes = 32 << 20}));
  // tail -c keeps its whole window in memory: 256 MiB cannot fit under 32 MiB. Bounded, so
  // a backend that does not apply the bound costs the host 256 MiB, not everything.
  const std::string n = std::to_string(kHogBytes);
  const auto hog = exec_in(s, *sb, "head -c " + n + " /dev/zero | tail -c " + n + " | wc -c");
  std::vector<std::string> problems;
  if (hog.stdout_text() == n + "\n") problems.push_back("the hog kept 256 MiB under a 32 MiB bound");
  if (!hog.limits_hit.contains(ResourceBound::Memory))
    problems.push_back("the result does not report the memory bound (limits_hit: " +
                       hog.limits_hit.to_string("none") + ")");
  if (!problems.empty()) fail(detail::join(problems) + ": " + detail::describe(hog));
  const auto after = exec_in(s, *sb, "echo after");
  if (after.stdout_text() != "after\n") fail("the sandbox did not answer after the kill: " + detail::describe(after));
}

void a_fork_loop_stops_at_the_process_bound(LimitsSubject& s) {
  constexpr int kBound = 32, kAttempts = 200;
  auto sb = s.acquire("processes", ResourceLimits({.processes = kBound}));
  // Short sleepers, at most kAttempts of them (bounded for a backend that does not apply the
  // bound); a refused fork ends the shell. Each started sleeper prints its number.
  const auto loop = exec_in(s, *sb,
                            "n=0; while [ $n -lt " + std::to_string(kAttempts) +
                                " ] && { sleep 3 2>/dev/null & }; do n=$((n+1)); echo $n; done; echo done");
  std::istringstream lines(loop.stdout_text());
  int forked = 0;
  for (std::string line; std::getline(lines, line);) forked = std::max(forked, std::atoi(line.c_str()));
  if (loop.stdout_text().find("done") != std::string::npos || forked >= kBound)
    fail("the loop started " + std::to_string(forked) + " sleepers under a bound of " + std::to_string(kBound) +
         " processes: " + detail::describe(loop));
  // The host is unharmed: it still forks, and another sandbox of the backend still runs.
  // (The bounded sandbox itself may stay full: on an engine whose init does not reap, the
  // orphaned sleepers linger as zombies — docs/limits.md.)
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  if (child < 0) fail("the host could not fork after the guest's fork loop");
  int status = 0;
  ::waitpid(child, &status, 0);
  auto neighbour = s.acquire("processes-neighbour", ResourceLimits{});
  const auto after = exec_in(s, *neighbour, "echo healthy");
  if (after.stdout_text() != "healthy\n")
    fail("another sandbox did not answer after the fork loop: " + detail::describe(after));
}

/// Seconds of the children's CPU time (user + sys) in `times` output, the last two fields.
std::optional<double> children_cpu(const std::string& times) {
  static const std::regex field(R"((\d+)m\s*([0-9.]+)s)");
  std::vector<double> values;
  for (std::sregex_iterator it(times.begin(), times.end(), field), end; it != end; ++it)
    values.push_back(std::stod((*it)[1].str()) * 60 + std::stod((*it)[2].str()));
  if (values.size() < 4) return std::nullopt;
  return values[values.size() - 1] + values[values.size() - 2];
}

void a_cpu_bound_program_is_held_to_its_share(LimitsSubject& s) {
  constexpr double kCpus = 0.05, kCeiling = kCpus * 2.5;  // a wide margin: 0.125 CPUs
  auto sb = s.acquire("cpus", ResourceLimits({.cpus = kCpus}));
  // Two spinning children (so an unbounded run can use more than one CPU) for about 4 s;
  // `times` gives what the reaped children used. The share is over the exec's *measured* wall
  // time — at least as long as the children ran — not the 4 s asked for: a loaded host that
  // stretches the run must not turn an honest bound into an over-share (issue 50).
  const auto started = std::chrono::steady_clock::now();
  const auto spin = exec_in(s, *sb,
                            "(while :; do :; done) & a=$!; (while :; do :; done) & b=$!; sleep 4; kill $a $b; "
                            "wait; times");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto cpu = children_cpu(spin.stdout_text());
  if (!cpu) fail("no CPU times could be read from the guest's `times`: " + detail::describe(spin));
  const double share = *cpu / wall;
  if (*cpu < 0.02) fail("the spinning children used " + std::to_string(*cpu) + " s of CPU: nothing was measured");
  if (share > kCeiling)
    fail("two spinning children used " + std::to_string(*cpu) + " s of CPU in " + std::to_string(wall) +
         " s (" + std::to_string(share) + " CPUs) under a bound of " + std::to_string(kCpus) + " CPUs");
}

void a_sandbox_past_its_ttl_is_gone(LimitsSubject& s) {
  const ResourceLimits ttl({.ttl = ResourceLimits::kMinLifetime});
  auto first = s.acquire("ttl-acquire", ttl);
  const std::string first_instance = first->instance_id();
  const auto marked = exec_in(s, *first, "echo kept > ttl-marker && echo marked");
  if (marked.stdout_text() != "marked\n") fail("the marker could not be written: " + detail::describe(marked));
  auto other = s.acquire("ttl-reap", ttl);
  const std::string other_instance = other->instance_id();
  first.reset();
  other.reset();
  std::this_thread::sleep_for(ResourceLimits::kMinLifetime + seconds(2));
  // At the next acquire of its key: another sandbox, without the marker.
  auto again = s.acquire("ttl-acquire", ttl);
  const auto look = exec_in(s, *again, "test -e ttl-marker && echo still-there || echo gone");
  std::vector<std::string> problems;
  if (again->instance_id() == first_instance) problems.push_back("the next acquire handed out the expired instance");
  if (look.stdout_text() != "gone\n") problems.push_back("the expired sandbox's file is still there");
  // By reap_expired: the other one (never acquired again) is disposed; the fresh one is not.
  const ScopePurge reaped = s.reap_expired();
  if (reaped.disposed < 1) problems.push_back("reap_expired disposed nothing");
  if (reaped.undisposed) problems.push_back("reap_expired reported " + reaped.undisposed->to_string());
  const auto alive = exec_in(s, *again, "echo alive");
  if (alive.stdout_text() != "alive\n") problems.push_back("reap_expired disposed a sandbox within its ttl");
  if (!problems.empty()) fail(detail::join(problems));
}

constexpr std::array<LimitsProbe, 4> kProbes{{
    {"LM-1", "a-memory-hog-is-killed-and-reported",
     "a memory bound that is declared but not applied lets one guest take the host's memory; one that is applied "
     "but not reported leaves a host reading a truncated result as the program's",
     ResourceBound::Memory, a_memory_hog_is_killed_and_reported},
    {"LM-2", "a-fork-loop-stops-at-the-process-bound",
     "a fork loop must stop at the sandbox's bound, not at the host's", ResourceBound::Processes,
     a_fork_loop_stops_at_the_process_bound},
    {"LM-3", "a-cpu-bound-program-is-held-to-its-share",
     "a spinning guest must not take more than its CPUs from the host and its neighbours", ResourceBound::Cpus,
     a_cpu_bound_program_is_held_to_its_share},
    {"LM-4", "a-sandbox-past-its-ttl-is-gone",
     "a lifetime bound that is never kept leaves sandboxes — and whatever they hold — running forever",
     ResourceBound::Ttl, a_sandbox_past_its_ttl_is_gone},
}};

void listed_only(ProbeContext&) { fail("LIMITS runs over a LimitsSubject: use run_limits (conformance/limits.hpp)"); }

constexpr std::array<Probe, kProbes.size()> listing() {
  std::array<Probe, kProbes.size()> out{};
  for (std::size_t i = 0; i < kProbes.size(); ++i)
    out[i] = Probe{Suite::Limits, kProbes[i].id, kProbes[i].name, kProbes[i].why, {Capability::Exec}, listed_only};
  return out;
}
constexpr auto kListing = listing();

ProbeResult result_of(const LimitsProbe& p, Outcome outcome, std::string message) {
  return ProbeResult{Suite::Limits, std::string(p.id), std::string(p.name), std::string(p.why), outcome,
                     std::move(message)};
}

}  // namespace

namespace detail {
std::span<const Probe> limits_probes() { return kListing; }
}  // namespace detail

LimitsSubject::~LimitsSubject() = default;

BackendLimitsSubject::BackendLimitsSubject(std::shared_ptr<SandboxBackend> backend, SandboxSpec::Fields base,
                                           BlockingRunner& runner)
    : backend_(std::move(backend)),
      base_(std::move(base)),
      runner_(runner),
      scope_("maf-conformance-limits-" + std::to_string(::getpid())) {
  if (base_.kind.empty()) base_.kind = "limits-probe";
  base_.requires_capabilities.insert(Capability::Exec);
}

std::shared_ptr<Sandbox> BackendLimitsSubject::acquire(const std::string& name, const ResourceLimits& bounds) {
  SandboxSpec::Fields f = base_;
  f.resources = bounds;
  const SandboxSpec spec(std::move(f));
  const SandboxKey key{scope_, name, "agent", ""};
  return runner_([&] { return backend_->acquire(key, spec); });
}

ScopePurge BackendLimitsSubject::reap_expired() {
  return runner_([&] { return backend_->reap_expired(scope_); });
}

void BackendLimitsSubject::dispose_all() {
  // Every key is tried even when one fails: a failure names its key and what the backend said
  // (C-59: disposal reports, it does not throw), and all of them go into one error.
  std::string left;
  for (const char* name : {"memory", "processes", "processes-neighbour", "cpus", "ttl-acquire", "ttl-reap"}) {
    const SandboxKey key{scope_, name, "agent", ""};
    std::string failed;
    try {
      if (auto failure = runner_([&] { return backend_->dispose(key, std::nullopt, std::nullopt); }))
        failed = failure->to_string();
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      failed = "dispose raised " + detail::type_name(e) + ": " + e.what();
    }
    if (!failed.empty()) left += (left.empty() ? "" : "; ") + to_string(key) + " (" + failed + ")";
  }
  if (!left.empty()) throw std::runtime_error("LIMITS sandboxes not disposed: " + left);
}

std::vector<ProbeResult> run_limits(LimitsSubject& subject) {
  const ResourceBoundSet declared = subject.declared_bounds();
  const ResourceBoundSet attacked{ResourceBound::Memory, ResourceBound::Processes, ResourceBound::Cpus,
                                  ResourceBound::Ttl};
  if (declared.intersection(attacked).empty())
    throw SuiteRefused(Suite::Limits, "LIMITS refused: " + subject.describe() +
                                          " declares no resource bound (declared: " + declared.to_string("none") + ")");
  std::vector<ProbeResult> results;
  for (const auto& p : kProbes) {
    if (!declared.contains(p.bound)) {
      results.push_back(result_of(p, Outcome::Skip, "backend does not declare the " + std::string(to_string(p.bound)) +
                                                        " bound"));
      continue;
    }
    try {
      p.run(subject);
      results.push_back(result_of(p, Outcome::Pass, {}));
    } catch (const Cancelled&) {
      throw;
    } catch (const ProbeFailed& e) {
      results.push_back(result_of(p, Outcome::Fail, e.what()));
    } catch (const std::exception& e) {
      results.push_back(result_of(p, Outcome::Fail, "raised " + detail::type_name(e) + ": " + e.what()));
    }
  }
  try {
    subject.dispose_all();
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    // The verdicts stand; what was left behind travels with them, so a runner reports it as
    // it reports its own subject's failed disposal (exit 2), and a caller cannot miss it.
    throw LimitsDisposalFailed(e.what(), std::move(results));
  }
  return results;
}

LimitsDisposalFailed::LimitsDisposalFailed(const std::string& what, std::vector<ProbeResult> results)
    : std::runtime_error(what), results_(std::move(results)) {}

std::vector<ProbeResult> check_limits(LimitsSubject& subject) {
  auto results = run_limits(subject);
  for (const auto& r : results)
    if (r.failed()) throw ConformanceFailure(Suite::Limits, std::move(results));
  return results;
}

}  // namespace maf::sandbox::conformance
