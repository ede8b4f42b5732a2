#pragma once
/// @file decision_log.hpp
/// One JSON object per line for every decision the proxy makes, flushed as written, so a
/// drained `docker logs` (D-27) or a tailing operator sees each one whole.
///
/// Fields: `event` ("decision"), `decision` (allow | deny | deny-nonglobal | unreachable |
/// bad-request | busy), `method`, `host`, `port`, `status` (the status answered, 0 when a
/// tunnel or forward ran), `bytes_up` / `bytes_down` (client→upstream / upstream→client, for
/// an allowed connection when it closed), `reason` (why, for refusals). Inside a terminated
/// tunnel each request is a decision of its own and adds `path` (canonical, never the query)
/// and `rule` (the rule that decided); nothing of a request's body or headers is logged. The
/// readiness line is `{"event":"listening",...}` (with `ca_certificate`, the per-sandbox
/// CA's certificate in PEM, when rules are set); the Docker backend polls for `listening`.

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace maf::sandbox::egress_proxy {

struct Decision {
  std::string decision;
  std::string method;
  std::string host;
  std::uint16_t port = 0;
  int status = 0;
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::string reason;
  std::string path;  ///< terminated or plain-HTTP rule checks: the canonical path
  std::string rule;  ///< the rule that decided (L7Rule::describe)
  std::string credential;  ///< brokered credentials swapped in or refused, by name (never a value)
};

/// The JSON line (without the newline) for one decision.
std::string decision_json(const Decision& d);

class DecisionLog {
public:
  /// Writes to `out` (not owned; stdout by default).
  explicit DecisionLog(std::FILE* out = stdout) : out_(out) {}
  void write(const Decision& d) { line(decision_json(d)); }
  void line(const std::string& json);

private:
  std::FILE* out_;
  std::mutex mutex_;
};

}  // namespace maf::sandbox::egress_proxy
