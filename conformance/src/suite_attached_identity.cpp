// ATTACHED_IDENTITY (AI-1…AI-4; issue 46, docs/policy.md CRED-1…CRED-5, docs/backends/
// egress-proxy.md CRED-6…CRED-9): a sandbox whose spec binds one credential to one host. The
// guest's own curl builds the header from the placeholder variable, as guest code would; the
// host's side (what its upstreams received, where the value shows) comes through the
// targets. The value itself never enters the guest, not even to search for it: every search
// runs on the host, over text the guest or the engine handed back.
#include <array>
#include <chrono>
#include <random>
#include <thread>

#include "maf/sandbox/conformance/subject.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

const AttachedIdentityTargets& targets(ProbeContext& c) {
  if (!c.attached_identity) throw ConformanceUsageError("ATTACHED_IDENTITY needs AttachedIdentityTargets");
  return *c.attached_identity;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

/// `curl -sS -w '\n%{http_code}'` from the guest with the header built from the placeholder
/// variable (`with_placeholder`), else without it; answers status and body.
std::pair<std::string, std::string> curl(ProbeContext& c, const std::string& url, bool with_placeholder) {
  const auto& t = targets(c);
  const std::string header = with_placeholder ? t.header_prefix + "${" + t.env + "}" : std::string("X-Probe: 1");
  const auto r = exec(c,
                      Command(std::vector<std::string>{
                          "sh", "-c",
                          "command -v curl >/dev/null 2>&1 || { echo 'no curl in the guest' >&2; exit 127; }\n"
                          "exec curl -sS --max-time 20 -w '\\n%{http_code}' -H \"" + header + "\" \"$0\"",
                          url}),
                      {}, t.exec_timeout);
  if (r.exit_code == 127) fail("the guest has no curl; nothing was attempted: " + describe(r));
  const std::string out = r.stdout_text();
  const auto nl = out.rfind('\n');
  return {nl == std::string::npos ? out : out.substr(nl + 1), nl == std::string::npos ? std::string() : out.substr(0, nl)};
}

/// Wait, bounded, until the upstream log holds `needle` (an engine's log lags its process).
bool logged(const AttachedIdentityTargets& t, const std::string& needle) {
  for (int i = 0; i < 50; ++i) {
    if (t.upstream_log().find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void bound_host_sees_value(ProbeContext& c) {
  const auto& t = targets(c);
  const auto [status, body] = curl(c, t.bound_url, true);
  if (status.size() != 3 || status[0] != '2')
    fail("a request to the bound host with the placeholder was answered " + quoted(status) + ": " +
         quoted(body.substr(0, 300)));
  if (!logged(t, t.value))
    fail("the bound host's upstream never received the host's value (the placeholder was not swapped)");
}

void other_host_refused(ProbeContext& c) {
  const auto& t = targets(c);
  const auto before = count(t.upstream_log(), t.value);
  const auto [status, body] = curl(c, t.other_url, true);
  // A marker request without the placeholder: once it is in the log, so is anything before it.
  std::mt19937_64 random(std::random_device{}());
  const std::string marker = "maf-ai-marker-" + std::to_string(random());
  (void)curl(c, t.other_url + (t.other_url.find('?') == std::string::npos ? "?" : "&") + marker, false);
  (void)logged(t, marker);
  if (count(t.upstream_log(), t.value) != before)
    fail("the value reached the upstream of " + t.other_url + ", a host the credential is not bound to");
  if (status != "403" || body.find("credential") == std::string::npos)
    fail("the placeholder toward " + t.other_url + " was not refused with a 403 naming the credential (status " +
         quoted(status) + ", body " + quoted(body.substr(0, 300)) + ")");
}

void value_absent_from_guest(ProbeContext& c) {
  const auto& t = targets(c);
  const auto r = exec(c,
                      Command(std::vector<std::string>{
                          "sh", "-c",
                          "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' <\"$f\" "
                          "2>/dev/null; done; cat /proc/1/status 2>/dev/null; true"}),
                      {}, t.exec_timeout);
  const std::string seen = r.stdout_text();
  if (seen.find(t.value) != std::string::npos)
    fail("the value is in the guest's environment or a process's environ/command line");
  if (seen.find(t.env + "=") == std::string::npos)
    fail("the guest has no " + t.env + " placeholder variable (nothing to swap; the probe attacked nothing)");
}

void value_absent_from_host_views(ProbeContext& c) {
  const auto& t = targets(c);
  const auto found = t.where_found(t.value);
  if (!found.empty()) fail("the value shows in: " + join(found));
}

constexpr std::array<Probe, 4> kProbes{{
    {Suite::AttachedIdentity, "AI-1", "the-placeholder-becomes-the-value-toward-the-bound-host",
     "positive control: a proxy that swaps nothing passes every refusal probe", {Capability::Exec},
     bound_host_sees_value},
    {Suite::AttachedIdentity, "AI-2", "the-placeholder-toward-another-host-is-refused",
     "a credential bound to one host must not reach any other, even one egress allows", {Capability::Exec},
     other_host_refused},
    {Suite::AttachedIdentity, "AI-3", "the-value-is-not-in-the-guest",
     "guest code can print, send or leave in an output anything it can read", {Capability::Exec},
     value_absent_from_guest},
    {Suite::AttachedIdentity, "AI-4", "the-value-is-not-in-inspect-logs-or-files",
     "an engine's inspect, a log or an image layer is read by more people than the host", {Capability::Exec},
     value_absent_from_host_views},
}};

}  // namespace

std::span<const Probe> attached_identity_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
