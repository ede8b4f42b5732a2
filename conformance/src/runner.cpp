// run_conformance: one subject per run, suites in kAllSuites order (EXEC last, R9), the
// subject disposed on every path.
#include "maf/sandbox/conformance/runner.hpp"

#include "maf/sandbox/conformance/limits.hpp"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <random>

#include "maf/sandbox/conformance/posix_guest_subject.hpp"
#include "maf/sandbox/conformance/suites.hpp"
#include "maf/sandbox/key.hpp"
#include "probe_support.hpp"

namespace maf::sandbox::conformance {
namespace {

std::string random_hex(std::size_t n) {
  std::random_device rd;
  std::mt19937_64 rng{(static_cast<std::uint64_t>(rd()) << 32) ^ rd()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += digits[rng() % 16];
  return out;
}

/// "https://host:443/x" -> "host".
/// The allowlist entry for a URL: its host, with the port when the URL names one (the port
/// policy allows a bare host on 80 and 443 only, and a local test upstream listens elsewhere).
std::string url_host(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.find_first_of("/?#", start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

bool requested(const RunnerOptions& o, Suite s) {
  return std::find(o.suites.begin(), o.suites.end(), s) != o.suites.end();
}

/// The spec's capabilities: the declared ones a subject can exercise without further
/// configuration (run_code needs an interpreter, host tools a registry, the egress rule
/// capabilities a policy of their own). Reclaim and snapshot are the CLEANUP suite's.
CapabilitySet spec_capabilities(CapabilitySet declared) {
  return declared.intersection(CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                             Capability::FilesList, Capability::FilesDelete, Capability::Reclaim,
                                             Capability::Snapshot});
}

std::string row_result(const SuiteReport& s, const ProbeResult* r) {
  if (r) {
    std::string text(to_string(r->outcome));
    for (char& ch : text) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return text;
  }
  switch (s.status) {
    case SuiteStatus::Refused: return "REFUSED";
    case SuiteStatus::NotRequested: return "NOT REQUESTED";
    case SuiteStatus::HarnessError: return "ERROR";
    case SuiteStatus::Ran: return "";
  }
  return "";
}

}  // namespace

std::string_view to_string(SuiteStatus status) noexcept {
  switch (status) {
    case SuiteStatus::Ran: return "ran";
    case SuiteStatus::Refused: return "refused";
    case SuiteStatus::NotRequested: return "not_requested";
    case SuiteStatus::HarnessError: return "harness_error";
  }
  return "?";
}

bool RunReport::ok() const noexcept { return exit_code() == 0; }

int RunReport::exit_code() const noexcept {
  if (disposal_failure) return 2;  // a subject left behind is a harness failure, not a verdict
  bool probe_failed = false;
  for (const auto& s : suites) {
    if (s.status == SuiteStatus::Refused || s.status == SuiteStatus::HarnessError) return 2;
    for (const auto& r : s.results) probe_failed = probe_failed || r.failed();
  }
  return probe_failed ? 1 : 0;
}

namespace {

/// Every sandbox the run left behind is named: a second failure is added, never overwrites
/// the first.
void note_disposal_failure(RunReport& report, const std::string& failure) {
  report.disposal_failure = report.disposal_failure ? *report.disposal_failure + "; " + failure : failure;
}

/// LIMITS over the backend the runner was given (borrowed, not owned), specs derived from
/// the run's own (image, egress, work_dir) with the probe's bounds.
SuiteReport run_limits_suite(SandboxBackend& backend, const SandboxSpec& spec, BlockingRunner& run,
                             RunReport& report) {
  SuiteReport sr{Suite::Limits, SuiteStatus::Ran, {}, {}};
  try {
    SandboxSpec::Fields base = spec.fields();
    base.kind = spec.kind() + "-limits";
    const std::shared_ptr<SandboxBackend> borrowed(&backend, [](SandboxBackend*) {});
    BackendLimitsSubject subject(borrowed, std::move(base), run);
    sr.results = run_limits(subject);
  } catch (const LimitsDisposalFailed& e) {
    sr.results = e.results();
    note_disposal_failure(report, e.what());
  } catch (const ConformanceUsageError& e) {
    sr.status = SuiteStatus::Refused;
    sr.reason = e.what();
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    sr.status = SuiteStatus::HarnessError;
    sr.reason = "harness error raised " + detail::type_name(e) + ": " + e.what();
  }
  return sr;
}

/// A suite on a sandbox of its own (EGRESS_L7, ATTACHED_IDENTITY), acquired with the
/// run's spec as `edit` changes it and disposed after it; not requested without its inputs
/// (`missing` says which).
template <class SubjectFor, class Edit, class Probes>
SuiteReport run_on_own_sandbox(Suite suite, bool has_inputs, const char* missing, const char* tag,
                               SandboxBackend& backend, const SandboxSpec& spec, bool asked, BlockingRunner& run,
                               SubjectFor&& subject_for, Edit&& edit, Probes&& probes) {
  SuiteReport sr{suite, SuiteStatus::Ran, {}, {}};
  if (!has_inputs) {
    sr.status = asked ? SuiteStatus::Refused : SuiteStatus::NotRequested;
    sr.reason = missing;
    return sr;
  }
  const SandboxKey key{"conformance", random_hex(16), std::string("agent-") + tag, ""};
  bool acquired = false;
  try {
    SandboxSpec::Fields fields = spec.fields();
    fields.kind = spec.kind() + "-" + tag;
    fields.egress = Egress::Allowlist;
    edit(fields);
    const SandboxSpec own_spec(std::move(fields));
    auto sandbox = run([&] { return backend.acquire(key, own_spec); });
    acquired = true;
    auto subject = subject_for(sandbox, Egress::Allowlist);
    sr.results = probes(*subject);
  } catch (const ConformanceUsageError& e) {
    sr.status = asked ? SuiteStatus::Refused : SuiteStatus::NotRequested;
    sr.reason = asked ? e.what() : std::string("gate not met, so not run: ") + e.what();
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    sr.status = asked ? SuiteStatus::HarnessError : SuiteStatus::NotRequested;
    sr.reason = (asked ? "harness error raised " : "not run: ") + detail::type_name(e) + ": " + e.what();
  }
  if (acquired) {
    try {
      if (auto failure = run([&] { return backend.dispose(key, std::nullopt, std::nullopt); }))
        sr.reason += (sr.reason.empty() ? "" : "; ") + std::string("dispose: ") + failure->to_string();
    } catch (const std::exception& e) {
      sr.reason += std::string("; dispose raised: ") + e.what();
    }
  }
  return sr;
}

/// EGRESS_L7 with the run's allowlist and rules (RunnerOptions::egress_l7).
template <class SubjectFor>
SuiteReport run_egress_l7_suite(SandboxBackend& backend, const SandboxSpec& spec, const RunnerOptions& o, bool asked,
                                BlockingRunner& run, SubjectFor&& subject_for) {
  return run_on_own_sandbox(
      Suite::EgressL7, o.egress_l7.has_value(),
      "EGRESS_L7 needs its targets and rules (RunnerOptions::egress_l7; the tool's --egress-l7 FILE)", "l7", backend,
      spec, asked, run, subject_for, [&](SandboxSpec::Fields& f) { f.egress_allow = o.egress_l7->allow; },
      [&](ConformanceSubject& subject) { return run_egress_l7(subject, o.egress_l7->targets); });
}

/// ATTACHED_IDENTITY with the run's allowlist and credentials (RunnerOptions::attached_identity).
template <class SubjectFor>
SuiteReport run_attached_identity_suite(SandboxBackend& backend, const SandboxSpec& spec, const RunnerOptions& o,
                                        bool asked, BlockingRunner& run, SubjectFor&& subject_for) {
  return run_on_own_sandbox(
      Suite::AttachedIdentity, o.attached_identity.has_value(),
      "ATTACHED_IDENTITY needs its targets and credentials (RunnerOptions::attached_identity; the tool's "
      "--attached-identity FILE)",
      "ai", backend, spec, asked, run, subject_for,
      [&](SandboxSpec::Fields& f) {
        f.egress_allow = o.attached_identity->allow;
        f.attached_identity = o.attached_identity->credentials;
      },
      [&](ConformanceSubject& subject) { return run_attached_identity(subject, o.attached_identity->targets); });
}

}  // namespace

RunReport run_conformance(SandboxBackend& backend, const RunnerOptions& o, SubjectFactory make_subject) {
  const auto& declarations = backend.declarations();
  const CapabilitySet declared = declarations.capabilities;
  const bool want_egress = o.egress && (o.suites.empty() || requested(o, Suite::Egress));

  // The one network posture this subject is acquired with: EGRESS needs allowlist (and is
  // preferred when explicitly asked for), EGRESS_CLOSED needs closed.
  SandboxSpec::Fields fields;
  fields.kind = o.kind;
  fields.work_dir = o.work_dir;
  fields.image = o.image;
  fields.requires_capabilities = spec_capabilities(declared);
  std::optional<Egress> enforced;
  if (want_egress && declarations.egress_modes.contains(Egress::Allowlist) &&
      (requested(o, Suite::Egress) || !declarations.egress_modes.contains(Egress::Closed))) {
    fields.egress = Egress::Allowlist;
    fields.egress_allow = {url_host(o.egress->allowed_url)};
    enforced = Egress::Allowlist;
  } else if (declarations.egress_modes.contains(Egress::Closed)) {
    fields.egress = Egress::Closed;
    enforced = Egress::Closed;
  } else if (declarations.egress_modes.contains(Egress::Unrestricted)) {
    fields.egress = Egress::Unrestricted;
  }
  const SandboxSpec spec(std::move(fields));

  RunReport report;
  report.backend = backend.name();
  const SandboxKey key{"conformance", random_hex(16), "agent", ""};
  report.key = to_string(key);

  BlockingRunner run;
  auto sandbox = run([&] { return backend.acquire(key, spec); });
  auto dispose = [&] {
    try {
      if (auto failure = run([&] { return backend.dispose(key, std::nullopt, std::nullopt); }))
        note_disposal_failure(report, to_string(key) + ": " + failure->to_string());
    } catch (const std::exception& e) {
      note_disposal_failure(report, to_string(key) + ": dispose raised: " + e.what());
    }
  };

  auto subject_for = [&](std::shared_ptr<Sandbox> of, std::optional<Egress> egress_of = std::nullopt) {
    const std::optional<Egress> mode = egress_of ? egress_of : enforced;
    std::unique_ptr<ConformanceSubject> made =
        make_subject ? make_subject(run, of, declared, mode, o.exec_timeout)
                     : std::make_unique<PosixGuestSubject>(run, of, declared, mode);
    if (auto* posix = dynamic_cast<PosixGuestSubject*>(made.get())) {
      posix->set_exec_timeout(o.exec_timeout);
      if (!o.raw_frame_tool.empty()) posix->set_raw_frame_tool(o.raw_frame_tool);
      posix->set_host_boundary(o.host_boundary ? *o.host_boundary : default_host_boundary_claims(backend.isolation()));
    }
    return made;
  };
  // HOST_TOOLS's deadline probe may take its sandbox with it (Docker removes the container
  // whose exec overran), so that suite runs on a sandbox of its own, disposed after it.
  const SandboxKey own_key{"conformance", random_hex(16), "agent-host-tools", ""};
  bool own_acquired = false;
  auto dispose_own = [&] {
    if (!own_acquired) return;
    own_acquired = false;
    try {
      if (auto failure = run([&] { return backend.dispose(own_key, std::nullopt, std::nullopt); }))
        note_disposal_failure(report, to_string(own_key) + ": " + failure->to_string());
    } catch (const std::exception& e) {
      note_disposal_failure(report, to_string(own_key) + ": dispose raised: " + e.what());
    }
  };

  try {
    std::unique_ptr<ConformanceSubject> subject = subject_for(sandbox);
    report.work_dir = subject->working_directory();

    for (Suite suite : kAllSuites) {
      const bool asked = requested(o, suite);
      if (!o.suites.empty() && !asked) continue;
      SuiteReport sr{suite, SuiteStatus::Ran, {}, {}};
      try {
        if (suite == Suite::EgressL7) {
          sr = run_egress_l7_suite(backend, spec, o, asked, run, subject_for);
          report.suites.push_back(std::move(sr));
          continue;
        }
        if (suite == Suite::AttachedIdentity) {
          sr = run_attached_identity_suite(backend, spec, o, asked, run, subject_for);
          report.suites.push_back(std::move(sr));
          continue;
        }
        require_gate(*subject, suite);
        if (suite == Suite::Egress && !o.egress) {
          sr.status = asked ? SuiteStatus::Refused : SuiteStatus::NotRequested;
          sr.reason = "EGRESS needs --allowed-url and --denied-url (endpoints known to answer 2xx)";
        } else if (suite == Suite::HostTools) {
          own_acquired = true;
          auto own = subject_for(run([&] { return backend.acquire(own_key, spec); }));
          sr.results = run_suite(suite, *own, nullptr);
          dispose_own();
        } else if (suite == Suite::Snapshot) {
          const SnapshotForkTarget fork{&backend, &spec};
          sr.results = run_snapshot(*subject, fork);
        } else {
          sr.results = run_suite(suite, *subject, o.egress ? &*o.egress : nullptr);
        }
      } catch (const ConformanceUsageError& e) {
        sr.status = asked ? SuiteStatus::Refused : SuiteStatus::NotRequested;
        sr.reason = asked ? e.what() : std::string("gate not met, so not run: ") + e.what();
      } catch (const Cancelled&) {
        throw;
      } catch (const std::exception& e) {
        sr.status = SuiteStatus::HarnessError;
        sr.reason = "harness error (planting or setup) raised " + detail::type_name(e) + ": " + e.what();
      }
      report.suites.push_back(std::move(sr));
    }
    // LIMITS acquires sandboxes of its own, one per bound: only when asked (`--suite limits`).
    if (requested(o, Suite::Limits)) report.suites.push_back(run_limits_suite(backend, spec, run, report));
  } catch (...) {
    dispose_own();
    dispose();
    throw;
  }
  dispose_own();
  dispose();
  return report;
}

std::string render_table(const RunReport& report) {
  struct Row {
    std::string suite, id, name, result, reason;
  };
  std::vector<Row> rows;
  for (const auto& s : report.suites) {
    const std::string label(suite_label(s.suite));
    if (s.status != SuiteStatus::Ran) {
      rows.push_back({label, "-", "-", row_result(s, nullptr), s.reason});
      continue;
    }
    for (const auto& r : s.results) rows.push_back({label, r.id, r.name, row_result(s, &r), r.message});
  }
  Row header{"SUITE", "ID", "NAME", "RESULT", "REASON"};
  std::size_t w[4] = {header.suite.size(), header.id.size(), header.name.size(), header.result.size()};
  for (const auto& r : rows) {
    w[0] = std::max(w[0], r.suite.size());
    w[1] = std::max(w[1], r.id.size());
    w[2] = std::max(w[2], r.name.size());
    w[3] = std::max(w[3], r.result.size());
  }
  auto pad = [](const std::string& s, std::size_t n) { return s + std::string(n - std::min(n, s.size()), ' '); };
  auto line = [&](const Row& r) {
    return pad(r.suite, w[0]) + "  " + pad(r.id, w[1]) + "  " + pad(r.name, w[2]) + "  " +
           (r.reason.empty() ? r.result : pad(r.result, w[3]) + "  " + r.reason) + "\n";
  };
  std::string out = "backend " + report.backend + ", subject " + report.key + ", working directory " +
                    report.work_dir + "\n\n" + line(header);
  for (const auto& r : rows) out += line(r);

  std::size_t passed = 0, failed = 0, skipped = 0, refused = 0, errors = 0;
  std::string rationale;
  for (const auto& s : report.suites) {
    refused += s.status == SuiteStatus::Refused ? 1 : 0;
    errors += s.status == SuiteStatus::HarnessError ? 1 : 0;
    for (const auto& r : s.results) {
      passed += r.passed() ? 1 : 0;
      skipped += r.skipped() ? 1 : 0;
      if (r.failed()) {
        ++failed;
        rationale += "  " + r.id + " " + r.name + ": " + r.why + "\n";
      }
    }
  }
  if (!rationale.empty()) out += "\nWhy the failed probes matter:\n" + rationale;
  if (report.disposal_failure) out += "\nNot disposed: " + *report.disposal_failure + "\n";
  out += "\n" + std::to_string(passed) + " passed, " + std::to_string(failed) + " failed, " + std::to_string(skipped) +
         " skipped; " + std::to_string(refused) + " suite(s) refused, " + std::to_string(errors) +
         " harness error(s) -> " + (report.ok() ? "GREEN" : "RED") + "\n";
  return out;
}

nlohmann::json to_json(const RunReport& report) {
  nlohmann::json suites = nlohmann::json::array();
  for (const auto& s : report.suites) {
    nlohmann::json probes = nlohmann::json::array();
    for (const auto& r : s.results)
      probes.push_back({{"id", r.id}, {"name", r.name}, {"outcome", to_string(r.outcome)}, {"message", r.message},
                        {"why", r.why}});
    suites.push_back({{"suite", suite_label(s.suite)}, {"status", to_string(s.status)}, {"reason", s.reason},
                      {"probes", probes}});
  }
  nlohmann::json j{{"backend", report.backend}, {"key", report.key},         {"work_dir", report.work_dir},
                   {"ok", report.ok()},         {"exit_code", report.exit_code()}, {"suites", suites}};
  j["disposal_failure"] = report.disposal_failure ? nlohmann::json(*report.disposal_failure) : nlohmann::json(nullptr);
  return j;
}

}  // namespace maf::sandbox::conformance
