#pragma once
/// @file conformance/suites.hpp
/// The suites: one `run_<suite>` returning every result and one `check_<suite>` that throws
/// ConformanceFailure when any probe failed (and otherwise returns the results, so callers
/// can assert on skips) — docs/conformance.md "Gating and outcomes", R1…R6.
///
/// | suite          | gate                                   | skips                         |
/// |----------------|----------------------------------------|-------------------------------|
/// | FILES_OUT      | files_out                              | FO-9…FO-12 without files_list |
/// | READ_CAP       | files_out                              | never                         |
/// | FILES_IN       | files_in (verifies through exec)       | never                         |
/// | EXEC           | exec                                   | never                         |
/// | FILES_DELETE   | files_delete (verifies through exec)   | never                         |
/// | EGRESS         | exec + sandbox acquired with allowlist | never                         |
/// | EGRESS_CLOSED  | exec + sandbox acquired with closed    | EC-2 when the host has no     |
/// |                |                                        | non-loopback address          |
/// | HOST_INTEGRITY | exec + a promised boundary             | HI-1/2/4 when the guest has   |
/// |                |                                        | nothing to attack there; HI-5 |
/// |                |                                        | when no seccomp is claimed    |
/// | CLEANUP        | reclaim or snapshot (verifies by exec) | RC-n without reclaim, RS-n    |
/// |                |                                        | without snapshot              |
///
/// A gate that is not met raises SuiteRefused *before* anything is planted. Every probe
/// runs even after failures. Planting errors propagate raw (they are harness errors).

#include <span>
#include <string>
#include <vector>

#include "maf/sandbox/conformance/probe.hpp"
#include "maf/sandbox/conformance/results.hpp"
#include "maf/sandbox/conformance/subject.hpp"

namespace maf::sandbox::conformance {

/// The ordered probe table of a suite.
std::span<const Probe> probes(Suite suite);

/// Throws SuiteRefused when `subject` does not meet `suite`'s gate; returns otherwise.
void require_gate(const ConformanceSubject& subject, Suite suite);

/// Gate, plant, run every probe (skipping those whose requirements are not declared).
/// `egress` is required for Suite::Egress (ConformanceUsageError without it).
std::vector<ProbeResult> run_suite(Suite suite, ConformanceSubject& subject, const EgressTargets* egress = nullptr);
/// run_suite, then throw ConformanceFailure if any probe failed; else return the results.
std::vector<ProbeResult> check_suite(Suite suite, ConformanceSubject& subject, const EgressTargets* egress = nullptr);

inline std::vector<ProbeResult> run_files_out(ConformanceSubject& s) { return run_suite(Suite::FilesOut, s); }
inline std::vector<ProbeResult> check_files_out(ConformanceSubject& s) { return check_suite(Suite::FilesOut, s); }
inline std::vector<ProbeResult> run_read_cap(ConformanceSubject& s) { return run_suite(Suite::ReadCap, s); }
inline std::vector<ProbeResult> check_read_cap(ConformanceSubject& s) { return check_suite(Suite::ReadCap, s); }
inline std::vector<ProbeResult> run_files_in(ConformanceSubject& s) { return run_suite(Suite::FilesIn, s); }
inline std::vector<ProbeResult> check_files_in(ConformanceSubject& s) { return check_suite(Suite::FilesIn, s); }
inline std::vector<ProbeResult> run_exec(ConformanceSubject& s) { return run_suite(Suite::Exec, s); }
inline std::vector<ProbeResult> check_exec(ConformanceSubject& s) { return check_suite(Suite::Exec, s); }
inline std::vector<ProbeResult> run_files_delete(ConformanceSubject& s) { return run_suite(Suite::FilesDelete, s); }
inline std::vector<ProbeResult> check_files_delete(ConformanceSubject& s) { return check_suite(Suite::FilesDelete, s); }
inline std::vector<ProbeResult> run_egress(ConformanceSubject& s, const EgressTargets& t) {
  return run_suite(Suite::Egress, s, &t);
}
inline std::vector<ProbeResult> check_egress(ConformanceSubject& s, const EgressTargets& t) {
  return check_suite(Suite::Egress, s, &t);
}
/// EGRESS_L7 (issue 45): gated on EGRESS_PATHS and EGRESS_METHODS and an ALLOWLIST sandbox
/// whose spec narrows the targets' host with a method/path rule (docs/conformance.md).
std::vector<ProbeResult> run_egress_l7(ConformanceSubject& subject, const EgressL7Targets& targets);
/// ATTACHED_IDENTITY (issue 46): gated on ATTACHED_IDENTITY and an ALLOWLIST sandbox whose spec
/// binds a credential to the targets' bound host (docs/conformance.md).
std::vector<ProbeResult> run_attached_identity(ConformanceSubject& subject, const AttachedIdentityTargets& targets);
/// SNAPSHOT (docs/snapshots.md): gated on SNAPSHOT; SN-6 forks through `fork.backend` (the
/// backend that made the subject's sandbox). Through run_suite, SN-6 is a skip, never a pass.
std::vector<ProbeResult> run_snapshot(ConformanceSubject& subject, const SnapshotForkTarget& fork);
/// POOL (docs/pools.md): claims through `pool.backend` with `pool.spec` (a spec its warm pool
/// serves) — fresh (PL-1), never handed out twice under 32 concurrent claims (PL-2). Gated on
/// EXEC; the subject only anchors the run. Not in kAllSuites: the runner configures no pool.
std::vector<ProbeResult> run_pool(ConformanceSubject& subject, const PoolTarget& pool);
inline std::vector<ProbeResult> run_egress_closed(ConformanceSubject& s) { return run_suite(Suite::EgressClosed, s); }
inline std::vector<ProbeResult> check_egress_closed(ConformanceSubject& s) {
  return check_suite(Suite::EgressClosed, s);
}
inline std::vector<ProbeResult> run_host_integrity(ConformanceSubject& s) { return run_suite(Suite::HostIntegrity, s); }
inline std::vector<ProbeResult> check_host_integrity(ConformanceSubject& s) {
  return check_suite(Suite::HostIntegrity, s);
}

inline std::vector<ProbeResult> run_cleanup(ConformanceSubject& s) { return run_suite(Suite::Cleanup, s); }
inline std::vector<ProbeResult> check_cleanup(ConformanceSubject& s) { return check_suite(Suite::Cleanup, s); }

inline std::vector<ProbeResult> run_host_tools(ConformanceSubject& s) { return run_suite(Suite::HostTools, s); }
inline std::vector<ProbeResult> check_host_tools(ConformanceSubject& s) { return check_suite(Suite::HostTools, s); }
/// STREAM (docs/streaming.md): exec_stream hands output over as it arrives, within its bounds.
inline std::vector<ProbeResult> run_stream(ConformanceSubject& s) { return run_suite(Suite::Stream, s); }
inline std::vector<ProbeResult> check_stream(ConformanceSubject& s) { return check_suite(Suite::Stream, s); }

inline std::vector<ProbeResult> run_background(ConformanceSubject& s) { return run_suite(Suite::Background, s); }
inline std::vector<ProbeResult> check_background(ConformanceSubject& s) { return check_suite(Suite::Background, s); }
/// EXEC_ENV and EXEC_STDIN (docs/exec-input.md): a command's own environment and stdin.
inline std::vector<ProbeResult> run_exec_env(ConformanceSubject& s) { return run_suite(Suite::ExecEnv, s); }
inline std::vector<ProbeResult> run_exec_stdin(ConformanceSubject& s) { return run_suite(Suite::ExecStdin, s); }
/// CONTEXT (docs/contexts.md): interpreter contexts, on a subject whose guest has python3
/// (not in kAllSuites: without python3 every probe is a skip).
inline std::vector<ProbeResult> run_context(ConformanceSubject& s) { return run_suite(Suite::Context, s); }

/// The HOST_INTEGRITY probes a guest sharing *this host's* kernel finds nothing to attack
/// with (so they skip, with their reason): "HI-2" on a kernel without /proc/sysrq-trigger.
/// For tests of shared-kernel backends, which must assert their skips exactly.
std::vector<std::string> host_integrity_skips_on_this_kernel();

/// R8: all ten FD probes with no gate, no planting beyond their own fixtures, no skip and no
/// verdict — never throws ConformanceFailure. For a backend that implements `remove` without
/// declaring files_delete, the results decide whether it ever could.
std::vector<ProbeResult> measure_files_delete_probes(ConformanceSubject& subject);

}  // namespace maf::sandbox::conformance
