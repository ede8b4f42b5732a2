#include "maf/sandbox/conformance/results.hpp"

#include <array>
#include <utility>

namespace maf::sandbox::conformance {
namespace {

struct SuiteNames {
  Suite suite;
  std::string_view label;
  std::string_view option;
};
constexpr std::array<SuiteNames, 20> kSuiteNames{{
    {Suite::FilesOut, "FILES_OUT", "files_out"},
    {Suite::FilesIn, "FILES_IN", "files_in"},
    {Suite::Exec, "EXEC", "exec"},
    {Suite::FilesDelete, "FILES_DELETE", "files_delete"},
    {Suite::Egress, "EGRESS", "egress"},
    {Suite::EgressClosed, "EGRESS_CLOSED", "egress_closed"},
    {Suite::ReadCap, "READ_CAP", "read_cap"},
    {Suite::HostIntegrity, "HOST_INTEGRITY", "host_integrity"},
    {Suite::Cleanup, "CLEANUP", "cleanup"},
    {Suite::HostTools, "HOST_TOOLS", "host_tools"},
    {Suite::Limits, "LIMITS", "limits"},
    {Suite::Stream, "STREAM", "stream"},
    {Suite::Background, "BACKGROUND", "background"},
    {Suite::EgressL7, "EGRESS_L7", "egress_l7"},
    {Suite::AttachedIdentity, "ATTACHED_IDENTITY", "attached_identity"},
    {Suite::ExecEnv, "EXEC_ENV", "exec_env"},
    {Suite::ExecStdin, "EXEC_STDIN", "exec_stdin"},
    {Suite::Context, "CONTEXT", "context"},
    {Suite::Snapshot, "SNAPSHOT", "snapshot"},
    {Suite::Pool, "POOL", "pool"},
}};

std::string render_failure(Suite suite, const std::vector<ProbeResult>& results) {
  std::size_t failed = 0;
  for (const auto& r : results) failed += r.failed() ? 1 : 0;
  std::string text = std::to_string(failed) + " of " + std::to_string(results.size()) + " " +
                     std::string(suite_label(suite)) + " probes failed:";
  for (const auto& r : results) {
    if (!r.failed()) continue;
    text += "\n  " + r.id + " " + r.name + ": " + r.message + "\n      why: " + r.why;
  }
  return text;
}

}  // namespace

std::string_view suite_label(Suite suite) noexcept {
  for (const auto& n : kSuiteNames)
    if (n.suite == suite) return n.label;
  return "?";
}

std::string_view suite_option_name(Suite suite) noexcept {
  for (const auto& n : kSuiteNames)
    if (n.suite == suite) return n.option;
  return "?";
}

Suite parse_suite(std::string_view text) {
  for (const auto& n : kSuiteNames)
    if (text == n.option || text == n.label) return n.suite;
  std::string valid;
  for (const auto& n : kSuiteNames) {
    if (!valid.empty()) valid += ", ";
    valid += n.option;
  }
  throw ValueError("'" + std::string(text) + "' is not a conformance suite (valid: " + valid + ")");
}

std::string_view to_string(Outcome outcome) noexcept {
  switch (outcome) {
    case Outcome::Pass: return "pass";
    case Outcome::Fail: return "fail";
    case Outcome::Skip: return "skip";
  }
  return "?";
}

std::vector<std::string> ids_with(const std::vector<ProbeResult>& results, Outcome outcome) {
  std::vector<std::string> ids;
  for (const auto& r : results)
    if (r.outcome == outcome) ids.push_back(r.id);
  return ids;
}

ConformanceFailure::ConformanceFailure(Suite suite, std::vector<ProbeResult> results)
    : std::logic_error(render_failure(suite, results)), suite_(suite), results_(std::move(results)) {}

std::vector<ProbeResult> ConformanceFailure::failures() const {
  std::vector<ProbeResult> out;
  for (const auto& r : results_)
    if (r.failed()) out.push_back(r);
  return out;
}

}  // namespace maf::sandbox::conformance
