#pragma once
/// @file conformance/results.hpp
/// What a conformance suite reports (docs/conformance.md "Gating and outcomes"): one result per probe, a
/// suite-level failure carrying every result, and the usage error a misused suite raises.
///
/// Three outcomes, never conflated: a *pass* attacked something and held; a *skip* was not
/// attempted because the subject does not declare a capability the probe needs (the reason
/// says which); a *fail* names what the backend did wrong. A skip is never counted as a pass.

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::conformance {

/// The suites this library ships. The first five are the specified suites; EGRESS_CLOSED,
/// READ_CAP and HOST_INTEGRITY are this port's own (docs/conformance.md).
enum class Suite {
  FilesOut,      ///< FILES_OUT, probes FO-1…FO-12
  FilesIn,       ///< FILES_IN, probes FI-1…FI-12
  Exec,          ///< EXEC, probes EX-1…EX-7
  FilesDelete,   ///< FILES_DELETE, probes FD-1…FD-10
  Egress,        ///< EGRESS, probes EG-1, EG-2 (allowlist)
  EgressClosed,  ///< EGRESS_CLOSED, probes EC-1…EC-3 (our own)
  ReadCap,       ///< READ_CAP, probes CAP-1, CAP-2 (our own)
  HostIntegrity,  ///< HOST_INTEGRITY, probes HI-1…HI-6 (our own): the guest cannot reach host root
  Cleanup,        ///< CLEANUP, probes RC-1…RC-8 (RECLAIM), RS-1…RS-4 (RESET); NL-1 (DISPOSE) beside it
  HostTools,      ///< HOST_TOOLS, probes HT-1…HT-4: the host-tools exec transport (docs/host-tools.md)
  Limits,         ///< LIMITS, probes LM-1…LM-4: declared resource bounds hold (docs/limits.md); run_limits
  Stream,         ///< STREAM, probes ST-1…: exec_stream hands output over as it arrives (docs/streaming.md)
  Background,     ///< BACKGROUND, probes BG-1…: background processes (docs/background.md)
  EgressL7,       ///< EGRESS_L7, probes EL-1…EL-9: method/path rules (issue 45); run_egress_l7, or the runner with RunnerOptions::egress_l7
  AttachedIdentity,  ///< ATTACHED_IDENTITY, probes AI-1…AI-4: brokered credentials (issue 46); run_attached_identity
  ExecEnv,        ///< EXEC_ENV, probes EE-1…EE-5: a command's own environment (docs/exec-input.md)
  ExecStdin,      ///< EXEC_STDIN, probes SI-1…SI-5: one-shot stdin (docs/exec-input.md)
  Context,        ///< CONTEXT, probes CX-1…CX-6: interpreter contexts (docs/contexts.md); run_context, not in kAllSuites
  Snapshot,       ///< SNAPSHOT, probes SN-1…SN-6: snapshot, restore, release and fork (docs/snapshots.md; run_snapshot)
  Pool,           ///< POOL, probes PL-1, PL-2: warm-pool claims (docs/pools.md); run_pool, not in kAllSuites
};

/// Every suite, in the order a runner should run them: EXEC last because its timeout probe
/// may cost the sandbox (conformance.md R9); CLEANUP just before it, because RESET puts the
/// sandbox back to its acquire-time tree (what earlier suites planted goes with it).
/// HOST_TOOLS's deadline probe may cost its sandbox too, so run_conformance gives that suite
/// a sandbox of its own, as do EGRESS_L7 (its spec carries the method/path rules) and
/// ATTACHED_IDENTITY (its spec carries the credential).
inline constexpr Suite kAllSuites[] = {Suite::FilesOut,      Suite::ReadCap,  Suite::FilesIn,   Suite::FilesDelete,
                                       Suite::Egress,        Suite::EgressClosed, Suite::HostIntegrity,
                                       Suite::Snapshot,      Suite::Cleanup,       Suite::HostTools, Suite::Stream,
                                       Suite::Background,    Suite::ExecEnv,      Suite::ExecStdin,
                                       Suite::Exec,          Suite::EgressL7,     Suite::AttachedIdentity};

/// "FILES_OUT", "EXEC", … (the upstream labels).
std::string_view suite_label(Suite suite) noexcept;
/// "files_out", "exec", … (what `--suite` accepts).
std::string_view suite_option_name(Suite suite) noexcept;
/// Parses suite_option_name() or suite_label(); throws ValueError naming the valid names.
Suite parse_suite(std::string_view text);

enum class Outcome { Pass, Fail, Skip };
/// "pass", "fail", "skip".
std::string_view to_string(Outcome outcome) noexcept;

/// One probe's verdict. `message` is the failure message (Fail), the skip reason (Skip), or
/// empty (Pass).
struct ProbeResult {
  Suite suite = Suite::FilesOut;
  std::string id;    ///< stable id, e.g. "FO-3"
  std::string name;  ///< upstream kebab-case name, e.g. "a-link-is-never-read"
  std::string why;   ///< rationale, printed with failures
  Outcome outcome = Outcome::Pass;
  std::string message;

  bool passed() const noexcept { return outcome == Outcome::Pass; }
  bool failed() const noexcept { return outcome == Outcome::Fail; }
  bool skipped() const noexcept { return outcome == Outcome::Skip; }
};

/// The ids of the results with `outcome`, in probe order (handy in tests).
std::vector<std::string> ids_with(const std::vector<ProbeResult>& results, Outcome outcome);

/// A suite was misused (docs/conformance.md "Gating and outcomes", R1): its gate capability is not
/// declared, the subject's sandbox was not acquired with the egress the suite attacks, or an
/// option is invalid. Distinct from ValueError (which a probe reads as a confinement
/// refusal), so a runner can tell it from a probe failure and from a backend's refusal.
class ConformanceUsageError : public std::logic_error {
public:
  explicit ConformanceUsageError(const std::string& message) : std::logic_error(message) {}
};

/// The gate refusal (R1): raised before anything is planted.
class SuiteRefused : public ConformanceUsageError {
public:
  SuiteRefused(Suite suite, const std::string& message) : ConformanceUsageError(message), suite_(suite) {}
  Suite suite() const noexcept { return suite_; }

private:
  Suite suite_;
};

/// At least one probe failed (R6). Assertion-class — it derives from std::logic_error, not
/// from maf::sandbox::Error — so a test framework reports a failed assertion. The text names
/// every failed probe with its message and rationale, not just the first.
class ConformanceFailure : public std::logic_error {
public:
  ConformanceFailure(Suite suite, std::vector<ProbeResult> results);
  Suite suite() const noexcept { return suite_; }
  const std::vector<ProbeResult>& results() const noexcept { return results_; }
  std::vector<ProbeResult> failures() const;

private:
  Suite suite_;
  std::vector<ProbeResult> results_;
};

}  // namespace maf::sandbox::conformance
