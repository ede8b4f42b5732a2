// The proxy's decision log (decision_log.hpp).
#include "decision_log.hpp"

#include <nlohmann/json.hpp>

namespace maf::sandbox::egress_proxy {

std::string decision_json(const Decision& d) {
  nlohmann::ordered_json j;
  j["event"] = "decision";
  j["decision"] = d.decision;
  j["method"] = d.method;
  j["host"] = d.host;
  j["port"] = d.port;
  j["status"] = d.status;
  j["bytes_up"] = d.bytes_up;
  j["bytes_down"] = d.bytes_down;
  if (!d.path.empty()) j["path"] = d.path;
  if (!d.rule.empty()) j["rule"] = d.rule;
  if (!d.credential.empty()) j["credential"] = d.credential;
  if (!d.reason.empty()) j["reason"] = d.reason;
  // Client-controlled text can hold any byte: replace invalid UTF-8 rather than throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void DecisionLog::line(const std::string& json) {
  std::lock_guard lock(mutex_);
  std::fputs(json.c_str(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

}  // namespace maf::sandbox::egress_proxy
