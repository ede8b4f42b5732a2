#pragma once
// Helpers every probe uses: synchronous calls through the subject's runner, presence checks
// through the guest, and the expected-refusal rule (conformance.md R5). Internal.
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "maf/sandbox/conformance/probe.hpp"
#include "maf/sandbox/conformance/subject.hpp"
#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::conformance::detail {

/// The dynamic type of `e`, demangled, without its namespace ("NotADirectoryError").
std::string type_name(const std::exception& e);

/// Calls on the subject's sandbox; an empty working directory means W.
ExecResult exec(ProbeContext& ctx, Command command, std::string working_directory = {},
                std::optional<std::chrono::milliseconds> timeout = {});
/// exec in W with the command's own environment and stdin (EXEC_ENV, EXEC_STDIN).
ExecResult exec_with(ProbeContext& ctx, Command command, ExecInput input);
std::optional<SandboxEntry> stat(ProbeContext& ctx, std::string path, std::string working_directory = {});
std::string read(ProbeContext& ctx, std::string path, std::string working_directory = {},
                 std::int64_t max_bytes = kProbeReadCap);
std::vector<SandboxEntry> list(ProbeContext& ctx, std::string path, std::string working_directory = {});
void write(ProbeContext& ctx, std::string path, std::string content, std::string working_directory = {});
void remove(ProbeContext& ctx, std::string path, std::string working_directory = {}, bool recursive = false);

/// Whether the guest sees a name at `path` (run from `working_directory`, default W): `test
/// -e` or, for a dangling link, `test -L`. An exit above 1 (e.g. 127: no `test`) fails the
/// probe — it is never read as "absent".
bool present(ProbeContext& ctx, const std::string& path, std::string working_directory = {});
/// `test -f path` from W, with the same rule.
bool is_file(ProbeContext& ctx, const std::string& path, std::string working_directory = {});

/// FI-2 / EX-6 (LATER) payload: every byte value, UTF-8 text with U+FFFD and CR LF, then a
/// truncated 2-byte prefix of a 3-byte sequence.
std::string fidelity_payload();

/// A printf format printing `bytes` exactly: every byte as a 3-digit octal escape, so no `%`
/// or `\` of the payload is interpreted (dash, bash and busybox printf all accept it).
std::string printf_octal(std::string_view bytes);

/// This process's id as exactly seven digits (zero-padded; Linux pids are at most 4194304),
/// for the sleepers the "is gone" checks look for (`sleep 271.5<tag>`): a fixed width makes
/// one run's marker never the prefix of another's, so a scan — or a test's cleanup of what
/// a broken double let escape — never matches a concurrent run's program. (A remainder of
/// the pid did once: a cleanup's `pkill` killed another test's HT-4 program.)
std::string process_tag();

/// Whether a process whose command line holds `marker` runs on the runner's host. Where the
/// engine is local a guest's processes are host processes too; where it is not (a VM, a
/// remote engine) nothing is ever seen — which is why "is gone" is judged only through
/// ProcessSighting, never by this alone.
bool host_runs(const std::string& marker);

/// Every "the program, and what it started, is gone" check (HT-4, ST-2/3/4/6, BG-4), one way
/// for every suite (issue 50): a process whose command line holds the marker must first be
/// *seen running* on the runner's host, else the check proves nothing — it is then a skip
/// (ProbeNotApplicable) naming the reason, never a pass. From construction a watcher thread
/// looks every 20 ms until it sees the marker (or `expect_gone` ends it), so a program that
/// runs for a while is seen whatever the probe is doing; a probe whose program is stopped
/// soon after it starts also calls `await_seen` at a point where the program is known to
/// have started its processes (a stream handler's first chunk, a ready file).
class ProcessSighting {
public:
  explicit ProcessSighting(std::string marker);
  ~ProcessSighting();
  ProcessSighting(const ProcessSighting&) = delete;
  ProcessSighting& operator=(const ProcessSighting&) = delete;

  const std::string& marker() const noexcept { return marker_; }
  bool seen() const noexcept { return seen_.load(); }
  /// Until the marker has been seen, bounded (ten seconds: a bound on visibility, not a
  /// measurement); whether it was.
  bool await_seen();
  /// After the stop: fails the probe naming `what` when the marker still runs ten seconds on
  /// (a stop may land asynchronously); throws ProbeNotApplicable when it was never seen.
  void expect_gone(const std::string& what);

private:
  void stop_watching();
  std::string marker_;
  std::atomic<bool> seen_{false};
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

/// "stdout 'x', stderr 'y', exit n" for messages (bounded).
std::string describe(const ExecResult& result);
/// A probe's problems as one failure message: "a; b; c".
std::string join(const std::vector<std::string>& problems);
/// A value for messages, quoted and bounded.
std::string quoted(std::string_view text);

/// R5 without failing: nothing when `call` raised something in `Family`; otherwise why not.
template <class Family, class Call>
std::optional<std::string> refusal_problem(std::string_view what, std::string_view family, Call&& call) {
  try {
    call();
  } catch (const Cancelled&) {
    throw;
  } catch (const ProbeFailed&) {
    throw;
  } catch (const Family&) {
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(what) + " raised " + type_name(e) + " (" + e.what() + "), not " + std::string(family);
  }
  return std::string(what) + " returned instead of raising " + std::string(family);
}

/// R5: fail the probe unless `call` raises something in `Family`.
template <class Family, class Call>
void expect_refusal(std::string_view what, std::string_view family, Call&& call) {
  if (auto problem = refusal_problem<Family>(what, family, std::forward<Call>(call))) fail(*problem);
}

inline constexpr std::string_view kConfinement = "a confinement refusal (ValueError)";
inline constexpr std::string_view kIoRefusal = "an I/O refusal (OSError)";
inline constexpr std::string_view kNotADirectory = "a not-a-directory refusal (NotADirectoryError)";

template <class Call>
void expect_confinement(std::string_view what, Call&& call) {
  expect_refusal<ValueError>(what, kConfinement, std::forward<Call>(call));
}

}  // namespace maf::sandbox::conformance::detail
