// EGRESS_L7 (EL-1…EL-9; issue 45, C-9, C-10): a host the spec narrows with a method/path
// rule. The guest's own curl (the suite needs one: a guest without it fails EL-1, nothing
// attempted proves nothing) sends each request through the backend's proxy; "reached" is a
// 2xx answer, "refused readably" a 403 whose body names the refusal. Each probe is shown
// able to fail by a double whose proxy passes the host through (docs/conformance.md).
#include <array>

#include "maf/sandbox/conformance/subject.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

const EgressL7Targets& targets(ProbeContext& c) {
  if (!c.egress_l7) throw ConformanceUsageError("EGRESS_L7 needs EgressL7Targets");
  return *c.egress_l7;
}

struct Answer {
  std::string status;  ///< "403", "200", or "000" when no HTTP answer came
  std::string body;
  std::string detail;  ///< for messages
};

/// One request from the guest: `curl -sS` with the given arguments; the status is the last
/// line (`-w`), the body what precedes it. The guest's environment (proxy, CA variables) is
/// the backend's; nothing here adds trust.
Answer curl(ProbeContext& c, const std::vector<std::string>& args) {
  const auto& t = targets(c);
  std::vector<std::string> argv{"sh", "-c",
                                "command -v curl >/dev/null 2>&1 || { echo 'no curl in the guest' >&2; exit 127; }\n"
                                "exec curl -sS --max-time \"$0\" -w '\\n%{http_code}' \"$@\"",
                                std::to_string(std::max<long long>(1, t.exec_timeout.count() * 5 / 6 / 1000))};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = exec(c, Command(argv), {}, t.exec_timeout);
  const std::string out = r.stdout_text();
  const auto nl = out.rfind('\n');
  Answer a;
  a.status = nl == std::string::npos ? out : out.substr(nl + 1);
  a.body = nl == std::string::npos ? std::string() : out.substr(0, nl);
  a.detail = "status " + quoted(a.status) + ", body " + quoted(a.body.substr(0, 300)) + ", " + describe(r);
  if (r.exit_code == 127) fail("the guest has no curl; nothing was attempted: " + a.detail);
  return a;
}

bool reached(const Answer& a) { return a.status.size() == 3 && a.status[0] == '2'; }

void expect_readable_403(const Answer& a, const std::string& what, const std::string& names) {
  if (reached(a)) fail(what + " was answered " + a.status + ": the rule did not hold (" + a.detail + ")");
  if (a.status != "403") fail(what + " was not refused with a 403 (" + a.detail + ")");
  if (a.body.find("refused") == std::string::npos || a.body.find(names) == std::string::npos)
    fail(what + " got a 403 whose body does not say why (expected it to name " + quoted(names) + "): " + a.detail);
}

void allowed_passes(ProbeContext& c) {
  const auto a = curl(c, {targets(c).allowed_url});
  if (!reached(a)) fail("GET " + targets(c).allowed_url + ", which the rule allows, was not reached: " + a.detail);
}

void refused_method(ProbeContext& c) {
  const auto& t = targets(c);
  expect_readable_403(curl(c, {"-X", t.refused_method, t.allowed_url}), t.refused_method + " " + t.allowed_url,
                      "method " + t.refused_method);
}

void refused_path(ProbeContext& c) {
  expect_readable_403(curl(c, {targets(c).refused_path_url}), "GET " + targets(c).refused_path_url, "path");
}

void traversal_refused(ProbeContext& c) {
  const auto& t = targets(c);
  std::vector<std::string> problems;
  // Each spelling climbs out of the allowed prefix (or hides a segment) in a way one reader
  // of a path could undo and another not; the encoded '/', '.', '\', the empty segment and
  // overlong UTF-8 of '/' and '.'.
  for (const char* tail : {"..%2f..%2fadmin", "%2e%2e/%2e%2e/admin", "%2E%2E%2Fadmin", "..%5cadmin", "/..//admin",
                           "%c0%ae%c0%ae/admin", "..%c0%afadmin"}) {
    const auto a = curl(c, {"--path-as-is", t.traversal_base + tail});
    if (reached(a)) problems.push_back(t.traversal_base + tail + " was answered " + a.status);
  }
  if (!t.mixed_case_url.empty()) {
    const auto a = curl(c, {t.mixed_case_url});
    if (reached(a)) problems.push_back(t.mixed_case_url + " (case differs where it matters) was answered " + a.status);
  }
  if (!problems.empty()) fail(join(problems));
}

void second_request_checked(ProbeContext& c) {
  const auto& t = targets(c);
  // One curl, two URLs on one host: the second request rides the first one's kept-alive
  // connection (curl reuses it), so a proxy that checks only a connection's first request
  // lets it through.
  const auto a = curl(c, {t.allowed_url, t.refused_path_url});
  if (a.status != "403" || a.body.find("refused") == std::string::npos)
    fail("the second request on a kept-alive connection, to " + t.refused_path_url + ", was not refused: " + a.detail);
}

void ca_key_unreadable(ProbeContext& c) {
  const auto r = exec(c,
                      Command(std::vector<std::string>{
                          "sh", "-c",
                          "{ grep -rls 'PRIVATE KEY' /etc /tmp /root /home /run /srv /opt /var/tmp 2>/dev/null; "
                          "env | grep -l 'PRIVATE KEY' 2>/dev/null; "
                          "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' <\"$f\" 2>/dev/null | grep -q 'PRIVATE KEY' "
                          "&& echo \"$f\"; done; } | head -20"}),
                      {}, targets(c).exec_timeout);
  if (!r.stdout_text().empty())
    fail("a private key is readable in the guest: " + quoted(r.stdout_text()) +
         " (the sandbox CA's key must stay on the host side)");
}

void pinned_client_fails_closed(ProbeContext& c) {
  // A client that trusts only the distribution's CAs (as a pinning one trusts only its pin)
  // must not complete a handshake with the proxy's leaf.
  const auto a = curl(c, {"--cacert", "/etc/ssl/certs/ca-certificates.crt", "--capath", "/nonexistent",
                          targets(c).allowed_url});
  if (reached(a) || a.status != "000")
    fail("a client that does not trust the sandbox CA got an HTTP answer (" + a.detail +
         "): interception without the guest's consent, or no interception at all");
}

void host_mismatch_refused(ProbeContext& c) {
  const auto& t = targets(c);
  const auto a = curl(c, {"-H", "Host: " + t.other_host, t.allowed_url});
  if (reached(a)) fail("a request whose Host names " + t.other_host + " inside a tunnel to the rule's host was answered: " + a.detail);
}

void untrusted_upstream_502(ProbeContext& c) {
  const auto& t = targets(c);
  if (!t.untrusted_url) throw ProbeNotApplicable("no untrusted upstream was given (EgressL7Targets::untrusted_url)");
  const auto a = curl(c, {*t.untrusted_url});
  if (a.status != "502" || a.body.find("did not verify") == std::string::npos)
    fail("an upstream the proxy's trust store does not vouch for was not a 502 naming the failed verification: " +
         a.detail);
}

constexpr std::array<Probe, 9> kProbes{{
    {Suite::EgressL7, "EL-1", "an-allowed-method-and-path-passes",
     "positive control: a backend that refuses everything passes every refusal probe", {Capability::Exec},
     allowed_passes},
    {Suite::EgressL7, "EL-2", "a-refused-method-gets-a-readable-403",
     "a method rule narrows a channel only if it is enforced, and the model must read why", {Capability::Exec},
     refused_method},
    {Suite::EgressL7, "EL-3", "a-refused-path-gets-a-readable-403",
     "a path rule is what tells a clone from a push on one host", {Capability::Exec}, refused_path},
    {Suite::EgressL7, "EL-4", "the-encoded-traversal-family-is-refused",
     "a path compared in one spelling and served in another escapes its prefix", {Capability::Exec},
     traversal_refused},
    {Suite::EgressL7, "EL-5", "a-second-request-on-a-kept-alive-connection-is-checked",
     "checking only a connection's first request lets every later one through", {Capability::Exec},
     second_request_checked},
    {Suite::EgressL7, "EL-6", "the-guest-cannot-read-the-ca-key",
     "with the key the guest could mint certificates the proxy's own clients trust", {Capability::Exec},
     ca_key_unreadable},
    {Suite::EgressL7, "EL-7", "a-client-pinning-another-ca-fails-closed",
     "interception must show, never pass silently to a client that did not opt in", {Capability::Exec},
     pinned_client_fails_closed},
    {Suite::EgressL7, "EL-8", "a-host-header-naming-another-host-is-refused",
     "the host a rule matched must be the host the request is for (no fronting)", {Capability::Exec},
     host_mismatch_refused},
    {Suite::EgressL7, "EL-9", "an-untrusted-upstream-is-a-502",
     "termination must not turn a failed upstream verification into a silent pass", {Capability::Exec},
     untrusted_upstream_502},
}};

}  // namespace

std::span<const Probe> egress_l7_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
