// NL-1: the engine's inventory before and after a call that disposes, compared as sets.
#include "maf/sandbox/conformance/fingerprint.hpp"

#include <algorithm>
#include <set>

#include "probe_support.hpp"

namespace maf::sandbox::conformance {
namespace {

constexpr std::string_view kId = "NL-1";
constexpr std::string_view kName = "nothing_left_behind";  // underscores, as upstream spells it
constexpr std::string_view kWhy =
    "a disposal that leaves engine state behind leaks the call's data and the host's resources; only the engine can "
    "tell";

ProbeResult result(Outcome outcome, std::string message) {
  return ProbeResult{Suite::Cleanup, std::string(kId), std::string(kName), std::string(kWhy), outcome,
                     std::move(message)};
}

std::string listed(const std::vector<std::string>& items) {
  constexpr std::size_t kShown = 20;
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kShown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > kShown) out += ", … (" + std::to_string(items.size() - kShown) + " more)";
  return out;
}

}  // namespace

FingerprintSubject::~FingerprintSubject() = default;

ProbeResult run_nothing_left_behind(FingerprintSubject& subject, const std::function<void()>& call) {
  std::optional<EngineFingerprint> before;
  try {
    before = subject.fingerprint();
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    return result(Outcome::Fail, "the baseline fingerprint of " + subject.describe() + " raised " +
                                     detail::type_name(e) + ": " + e.what());
  }
  if (!before) return result(Outcome::Skip, "engine fingerprint is unsupported (" + subject.describe() + ")");
  try {
    call();
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    return result(Outcome::Fail, "the call raised " + detail::type_name(e) + ": " + e.what());
  }
  std::optional<EngineFingerprint> after;
  try {
    after = subject.fingerprint();
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    return result(Outcome::Fail, "the fingerprint after the call raised " + detail::type_name(e) + ": " + e.what());
  }
  if (!after) return result(Outcome::Fail, "the fingerprint after the call is unsupported, though the baseline was not");
  const std::set<std::string> a(before->items.begin(), before->items.end());
  const std::set<std::string> b(after->items.begin(), after->items.end());
  std::vector<std::string> added, removed;
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(added));
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(removed));
  std::string problems;
  if (!added.empty()) problems = "left behind on the engine (" + subject.describe() + "): " + listed(added);
  if (!removed.empty())
    problems += (problems.empty() ? "" : "; ") + std::string("removed from the engine, though the call did not own it: ") +
                listed(removed);
  return problems.empty() ? result(Outcome::Pass, {}) : result(Outcome::Fail, problems);
}

ProbeResult assert_nothing_left_behind(FingerprintSubject& subject, const std::function<void()>& call) {
  auto r = run_nothing_left_behind(subject, call);
  if (r.failed()) throw ConformanceFailure(Suite::Cleanup, {r});
  return r;
}

}  // namespace maf::sandbox::conformance
