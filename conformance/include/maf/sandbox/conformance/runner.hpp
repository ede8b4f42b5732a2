#pragma once
/// @file conformance/runner.hpp
/// Running the suites against a whole backend: acquire a subject, run what applies, report,
/// dispose — what the `maf-sandbox-conformance` tool does, as a library so a backend's own
/// test (or a Docker/ACAS/WSLC CI job) runs the same thing.
///
/// The subject is acquired with key `conformance/<random>/agent`, a spec requiring exactly
/// the backend's declared capabilities among exec, files_in, files_out, files_list and
/// files_delete, and egress CLOSED when the backend declares closed (else ALLOWLIST when it
/// declares allowlist and EGRESS targets are given). It is disposed afterwards on every path.
///
/// Which suites run: the requested ones, or — when none are requested — every suite whose
/// gate the backend meets. A requested suite whose gate is not met is reported *refused*
/// (and fails the run); an unrequested one is reported *not requested* with the reason.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/conformance/probe.hpp"
#include "maf/sandbox/conformance/results.hpp"
#include "maf/sandbox/conformance/subject.hpp"

namespace maf::sandbox::conformance {

/// EGRESS_L7 as the runner runs it (issue 47): the targets, and the allowlist — with the
/// method/path rules the targets exercise — of a sandbox acquired for that suite alone
/// (kind `<kind>-l7`, its own key), disposed after it.
struct EgressL7Run {
  EgressL7Targets targets;
  std::vector<EgressEntry> allow;
};

/// ATTACHED_IDENTITY as the runner runs it (issue 47): the targets, and the allowlist and
/// credentials of a sandbox acquired for that suite alone (kind `<kind>-ai`, its own key),
/// disposed after it. The caller attaches the backend's CredentialSource, answering
/// `targets.value` (the tool makes a random one).
struct AttachedIdentityRun {
  AttachedIdentityTargets targets;
  std::vector<EgressEntry> allow;
  std::vector<AttachedCredential> credentials;
};

struct RunnerOptions {
  /// Empty: every suite whose gate the backend meets.
  std::vector<Suite> suites{};
  /// spec.work_dir; absent = the backend's storage base.
  std::optional<std::string> work_dir{};
  /// spec.image, for a backend that runs the image a spec names (Docker, WSLC); absent = the
  /// backend's default, or none.
  std::optional<std::string> image{};
  /// EGRESS inputs; EGRESS is not requested without them.
  std::optional<EgressTargets> egress{};
  /// The spec's kind.
  std::string kind = "conformance";
  std::chrono::milliseconds exec_timeout{std::chrono::seconds(60)};
  /// EG-3's guest tool on the host (`maf-sandbox-rawframe`), planted by the default subject;
  /// empty: the guest's own, if any (PosixGuestSubject::set_raw_frame_tool).
  std::string raw_frame_tool{};
  /// What HOST_INTEGRITY holds the backend to; absent: default_host_boundary_claims of the
  /// backend's isolation rung (applied to the shipped PosixGuestSubject; a factory's own
  /// subject answers for itself).
  std::optional<HostBoundaryClaims> host_boundary{};
  /// EGRESS_L7 inputs; EGRESS_L7 is not requested without them.
  std::optional<EgressL7Run> egress_l7{};
  /// ATTACHED_IDENTITY inputs; ATTACHED_IDENTITY is not requested without them.
  std::optional<AttachedIdentityRun> attached_identity{};
};

/// How one suite went as a whole.
enum class SuiteStatus {
  Ran,           ///< its probes are in `results`
  Refused,       ///< requested, but the gate refused it (fails the run)
  NotRequested,  ///< not requested, and its gate is not met (informational)
  HarnessError,  ///< planting or the harness itself failed (fails the run)
};
std::string_view to_string(SuiteStatus status) noexcept;

struct SuiteReport {
  Suite suite;
  SuiteStatus status = SuiteStatus::Ran;
  std::string reason;  ///< for Refused / NotRequested / HarnessError
  std::vector<ProbeResult> results;
};

struct RunReport {
  std::string backend;
  std::string key;        ///< "conformance/<thread>/agent"
  std::string work_dir;   ///< the subject's working directory
  std::vector<SuiteReport> suites;
  /// Every sandbox the run could not dispose — its subject, HOST_TOOLS's own, LIMITS' — each
  /// named by key with what the backend reported; absent when all went.
  std::optional<std::string> disposal_failure;

  /// False when any probe failed, a requested suite was refused, the harness failed, or the
  /// subject could not be disposed.
  bool ok() const noexcept;
  /// 0 when ok(); 1 when only probes failed; 2 when a suite was refused, the harness failed
  /// or disposal failed.
  int exit_code() const noexcept;
};

/// Builds a subject for an acquired sandbox. The default makes a PosixGuestSubject.
using SubjectFactory = std::function<std::unique_ptr<ConformanceSubject>(
    BlockingRunner& runner, std::shared_ptr<Sandbox> sandbox, CapabilitySet declared,
    std::optional<Egress> enforced_egress, std::chrono::milliseconds exec_timeout)>;

/// Acquire, run, dispose. Throws only when the acquire itself fails (the sandbox never
/// existed); every later failure is in the report.
RunReport run_conformance(SandboxBackend& backend, const RunnerOptions& options, SubjectFactory make_subject = {});

/// The per-probe table: suite | id | name | result | reason, then each failure's rationale.
std::string render_table(const RunReport& report);
/// The report as JSON (stable keys: backend, key, work_dir, ok, suites[{suite, status,
/// reason, probes[{id, name, outcome, message, why}]}]).
nlohmann::json to_json(const RunReport& report);

}  // namespace maf::sandbox::conformance
