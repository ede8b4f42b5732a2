// The engine every suite shares (docs/conformance.md "Gating and outcomes"): gate, plant once, run every probe in
// order with R3's skips and R4's capture, and the verdict of check_suite (R6).
#include "maf/sandbox/conformance/suites.hpp"

#include <cctype>

#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance {
namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

Capability gate_capability(Suite suite) {
  switch (suite) {
    case Suite::FilesOut:
    case Suite::ReadCap: return Capability::FilesOut;
    case Suite::FilesIn: return Capability::FilesIn;
    case Suite::FilesDelete: return Capability::FilesDelete;
    case Suite::Exec:
    case Suite::Egress:
    case Suite::EgressClosed:
    case Suite::HostIntegrity: return Capability::Exec;
    case Suite::Cleanup: return Capability::Reclaim;  // or Snapshot: require_gate takes either
    case Suite::HostTools: return Capability::HostTools;
    case Suite::Limits: return Capability::Exec;
    case Suite::Stream: return Capability::ExecStream;
    case Suite::Background: return Capability::Background;
    case Suite::EgressL7: return Capability::EgressPaths;  // and EgressMethods: require_gate
    case Suite::AttachedIdentity: return Capability::AttachedIdentity;
    case Suite::ExecEnv: return Capability::ExecEnv;
    case Suite::ExecStdin: return Capability::ExecStdin;
    case Suite::Context: return Capability::Background;  // and EXEC_STDIN: InterpreterContext::create
    case Suite::Snapshot: return Capability::Snapshot;
    case Suite::Pool: return Capability::Exec;
  }
  return Capability::Exec;
}

/// The egress mode a suite attacks, when it attacks one.
std::optional<Egress> gate_egress(Suite suite) {
  if (suite == Suite::Egress || suite == Suite::EgressL7 || suite == Suite::AttachedIdentity) return Egress::Allowlist;
  if (suite == Suite::EgressClosed) return Egress::Closed;
  return std::nullopt;
}

ProbeResult result_of(const Probe& p, Outcome outcome, std::string message) {
  return ProbeResult{p.suite, std::string(p.id), std::string(p.name), std::string(p.why), outcome, std::move(message)};
}

ProbeResult run_one(const Probe& p, ProbeContext& ctx) {
  try {
    p.run(ctx);
    return result_of(p, Outcome::Pass, {});
  } catch (const Cancelled&) {
    throw;  // cancellation is not a verdict (R4)
  } catch (const ProbeFailed& e) {
    return result_of(p, Outcome::Fail, e.what());
  } catch (const ProbeNotApplicable& e) {
    return result_of(p, Outcome::Skip, e.what());
  } catch (const std::exception& e) {
    return result_of(p, Outcome::Fail, "raised " + detail::type_name(e) + ": " + e.what());
  }
}

std::vector<ProbeResult> run_probes(std::span<const Probe> table, ProbeContext& ctx, bool honour_requirements) {
  std::vector<ProbeResult> results;
  const CapabilitySet declared = ctx.subject.capabilities();
  for (const auto& p : table) {
    const auto missing = p.requires_capabilities.difference(declared);
    if (honour_requirements && !missing.empty()) {
      results.push_back(result_of(p, Outcome::Skip, "backend does not declare " + missing.to_string()));
      continue;
    }
    results.push_back(run_one(p, ctx));
  }
  return results;
}

void plant_for(Suite suite, ConformanceSubject& subject, const ConformancePaths& paths) {
  switch (suite) {
    case Suite::FilesOut: plant_layout(subject, paths); break;
    case Suite::ReadCap: detail::plant_read_cap_fixture(subject, paths); break;
    case Suite::FilesIn:
    case Suite::FilesDelete:
    case Suite::Limits: break;  // each probe plants its own fixtures (LIMITS: its own sandboxes)
    case Suite::Exec:
    case Suite::Egress:
    case Suite::EgressClosed:
    case Suite::HostIntegrity:
    case Suite::Cleanup:
    case Suite::HostTools:
    case Suite::Stream:
    case Suite::Background:
    case Suite::EgressL7:
    case Suite::AttachedIdentity:
    case Suite::ExecEnv:
    case Suite::ExecStdin:
    case Suite::Context:
    case Suite::Snapshot:
    case Suite::Pool:
      // R10: nothing guarantees the working directory exists; a marker creates it.
      subject.plant_file(paths.in_work(".probe-cwd"), "");
      break;
  }
}

}  // namespace

std::span<const Probe> probes(Suite suite) {
  switch (suite) {
    case Suite::FilesOut: return detail::files_out_probes();
    case Suite::ReadCap: return detail::read_cap_probes();
    case Suite::FilesIn: return detail::files_in_probes();
    case Suite::Exec: return detail::exec_probes();
    case Suite::FilesDelete: return detail::files_delete_probes();
    case Suite::Egress: return detail::egress_probes();
    case Suite::EgressClosed: return detail::egress_closed_probes();
    case Suite::HostIntegrity: return detail::host_integrity_probes();
    case Suite::Cleanup: return detail::cleanup_probes();
    case Suite::HostTools: return detail::host_tools_probes();
    case Suite::Limits: return detail::limits_probes();
    case Suite::Stream: return detail::stream_probes();
    case Suite::Background: return detail::background_probes();
    case Suite::EgressL7: return detail::egress_l7_probes();
    case Suite::AttachedIdentity: return detail::attached_identity_probes();
    case Suite::ExecEnv: return detail::exec_env_probes();
    case Suite::ExecStdin: return detail::exec_stdin_probes();
    case Suite::Context: return detail::context_probes();
    case Suite::Snapshot: return detail::snapshot_probes();
    case Suite::Pool: return detail::pool_probes();
  }
  return {};
}

void require_gate(const ConformanceSubject& subject, Suite suite) {
  const Capability gate = gate_capability(suite);
  const std::string label(suite_label(suite));
  // CLEANUP attacks the rungs a backend declares: RECLAIM, RESET (SNAPSHOT), or both; each
  // probe skips the rung not declared (R3). Neither declared: nothing to attack.
  if (suite == Suite::Cleanup) {
    const auto& declared = subject.capabilities();
    if (!declared.contains(Capability::Reclaim) && !declared.contains(Capability::Snapshot))
      throw SuiteRefused(suite, label + " refused: the subject declares neither RECLAIM nor SNAPSHOT (declared: " +
                                    declared.to_string("none") +
                                    "); skipping every probe would be a green run that attacked nothing — pass the "
                                    "backend's own declared capabilities (DISPOSE is NL-1, assert_nothing_left_behind)");
    return;
  }
  if (suite == Suite::EgressL7 && !subject.capabilities().contains(Capability::EgressMethods))
    throw SuiteRefused(suite, label + " refused: the subject declares no EGRESS_METHODS (declared: " +
                                  subject.capabilities().to_string("none") +
                                  "); method and path rules are attacked together");
  if (!subject.capabilities().contains(gate))
    throw SuiteRefused(suite, label + " refused: the subject declares no " + upper(to_string(gate)) + " (declared: " +
                                  subject.capabilities().to_string("none") +
                                  "); skipping every probe would be a green run that attacked nothing — pass the "
                                  "backend's own declared capabilities");
  if (suite == Suite::HostIntegrity && !subject.host_boundary().promised)
    throw SuiteRefused(suite, label + " refused: the subject promises no host boundary (its backend's isolation rung "
                                      "is below os_process: the guest is a host process); attacking a boundary never "
                                      "promised proves nothing");
  if (const auto mode = gate_egress(suite); mode && subject.enforced_egress() != mode) {
    const auto enforced = subject.enforced_egress();
    throw SuiteRefused(suite, label + " refused: the subject declares no " + upper(to_string(*mode)) +
                                  " egress (its sandbox was acquired with " +
                                  (enforced ? std::string(to_string(*enforced)) : std::string("no enforced")) +
                                  " egress); attacking a network posture the backend never promised proves nothing");
  }
}

std::vector<ProbeResult> run_suite(Suite suite, ConformanceSubject& subject, const EgressTargets* egress) {
  require_gate(subject, suite);
  if (suite == Suite::Egress && !egress)
    throw ConformanceUsageError("EGRESS needs EgressTargets: an allowed and a denied URL");
  if (suite == Suite::EgressL7) throw ConformanceUsageError("EGRESS_L7 needs EgressL7Targets: call run_egress_l7");
  if (suite == Suite::AttachedIdentity)
    throw ConformanceUsageError("ATTACHED_IDENTITY needs AttachedIdentityTargets: call run_attached_identity");
  const auto paths = ConformancePaths::from(subject.working_directory());
  plant_for(suite, subject, paths);  // R2: a planting error propagates raw
  ProbeContext ctx{subject, paths, egress};
  return run_probes(probes(suite), ctx, true);
}

std::vector<ProbeResult> run_egress_l7(ConformanceSubject& subject, const EgressL7Targets& targets) {
  require_gate(subject, Suite::EgressL7);
  if (targets.exec_timeout < std::chrono::seconds(1)) throw ConformanceUsageError("EGRESS_L7 exec_timeout must be at least 1 s");
  const auto paths = ConformancePaths::from(subject.working_directory());
  plant_for(Suite::EgressL7, subject, paths);
  ProbeContext ctx{subject, paths, nullptr, &targets};
  return run_probes(probes(Suite::EgressL7), ctx, true);
}

std::vector<ProbeResult> run_attached_identity(ConformanceSubject& subject, const AttachedIdentityTargets& targets) {
  require_gate(subject, Suite::AttachedIdentity);
  if (targets.value.empty() || !targets.upstream_log || !targets.where_found)
    throw ConformanceUsageError("ATTACHED_IDENTITY needs the supplied value, upstream_log and where_found");
  const auto paths = ConformancePaths::from(subject.working_directory());
  plant_for(Suite::AttachedIdentity, subject, paths);
  ProbeContext ctx{subject, paths, nullptr, nullptr, &targets};
  return run_probes(probes(Suite::AttachedIdentity), ctx, true);
}

std::vector<ProbeResult> run_snapshot(ConformanceSubject& subject, const SnapshotForkTarget& fork) {
  require_gate(subject, Suite::Snapshot);
  const auto paths = ConformancePaths::from(subject.working_directory());
  plant_for(Suite::Snapshot, subject, paths);
  ProbeContext ctx{subject, paths, nullptr, nullptr, nullptr, &fork};
  return run_probes(probes(Suite::Snapshot), ctx, true);
}

std::vector<ProbeResult> run_pool(ConformanceSubject& subject, const PoolTarget& pool) {
  require_gate(subject, Suite::Pool);
  if (!pool.backend || !pool.spec) throw ConformanceUsageError("POOL needs the backend whose pool serves the spec");
  const auto paths = ConformancePaths::from(subject.working_directory());
  plant_for(Suite::Pool, subject, paths);
  ProbeContext ctx{subject, paths, nullptr, nullptr, nullptr, nullptr, &pool};
  return run_probes(probes(Suite::Pool), ctx, true);
}

std::vector<ProbeResult> check_suite(Suite suite, ConformanceSubject& subject, const EgressTargets* egress) {
  auto results = run_suite(suite, subject, egress);
  for (const auto& r : results)
    if (r.failed()) throw ConformanceFailure(suite, std::move(results));
  return results;
}

std::vector<ProbeResult> measure_files_delete_probes(ConformanceSubject& subject) {
  const auto paths = ConformancePaths::from(subject.working_directory());
  ProbeContext ctx{subject, paths, nullptr};
  return run_probes(detail::files_delete_probes(), ctx, false);
}

}  // namespace maf::sandbox::conformance
