// The egress proxy's decision lines (support/proxy_log.hpp; docs/backends/egress-proxy.md).
#include "maf/sandbox/support/proxy_log.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "maf/sandbox/observer.hpp"

namespace maf::sandbox::support {

namespace {

constexpr std::array<std::string_view, 4> kDecisions{"ALLOW", "DENY", "DENY-NONGLOBAL", "UNREACHABLE"};

std::optional<std::string> decision_name(std::string_view word) {
  std::string upper(word);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (std::find(kDecisions.begin(), kDecisions.end(), upper) == kDecisions.end()) return std::nullopt;
  return upper;
}

/// The `port` member when it is an integer of 0-65535, else 0: a float or huge number never
/// reaches an int conversion (which would be undefined for a double out of range).
int port_of(const nlohmann::json& line) {
  const auto it = line.find("port");
  if (it == line.end() || !it->is_number_integer()) return 0;
  if (it->is_number_unsigned()) {
    const auto v = it->get<std::uint64_t>();
    return v <= 65535 ? static_cast<int>(v) : 0;
  }
  const auto v = it->get<std::int64_t>();
  return v >= 0 && v <= 65535 ? static_cast<int>(v) : 0;
}

/// One log line as a decision, or nullopt for anything else (readiness, errors, noise).
std::optional<ProxyDecision> decision_of(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.empty() && line.front() == '{') {
    try {
      const auto j = nlohmann::json::parse(line);
      if (!j.is_object() || j.value("event", "") != "decision") return std::nullopt;
      auto name = decision_name(j.value("decision", ""));
      if (!name) return std::nullopt;
      ProxyDecision d{*name, j.value("host", ""), port_of(j)};
      // Only where a rule decided: a host-only decision keeps its old shape (method CONNECT).
      if (j.contains("rule")) {
        const auto text = [&j](const char* key) {
          const auto it = j.find(key);
          return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
        };
        d.method = text("method");
        d.path = text("path");
        d.rule = text("rule");
        d.reason = text("reason");
      }
      return d;
    } catch (const nlohmann::json::exception&) {
      return std::nullopt;
    }
  }
  // The Python proxy's form: `<DECISION> host:port`.
  const auto space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto name = decision_name(line.substr(0, space));
  const std::string_view target = line.substr(space + 1);
  const auto colon = target.rfind(':');
  if (!name || colon == std::string_view::npos || colon + 1 == target.size()) return std::nullopt;
  int port = 0;
  for (char c : target.substr(colon + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
    if (port > 65535) return std::nullopt;  // checked after each digit: never past 655359
  }
  std::string_view host = target.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return ProxyDecision{*name, std::string(host), port};
}

}  // namespace

ProxyDecisions parse_proxy_decisions(std::string_view log, bool read_cut, std::size_t tail_lines) {
  ProxyDecisions out;
  out.truncated = read_cut;
  std::size_t lines = 0;
  while (!log.empty()) {
    const auto nl = log.find('\n');
    const std::string_view line = log.substr(0, nl);
    log = nl == std::string_view::npos ? std::string_view() : log.substr(nl + 1);
    ++lines;
    if (auto d = decision_of(line)) {
      if (out.decisions.size() < kMaxProxyDecisions)
        out.decisions.push_back(std::move(*d));
      else
        out.truncated = true;
    }
  }
  if (tail_lines > 0 && lines >= tail_lines) out.truncated = true;  // the tail may have cut the head off
  return out;
}

void notify_proxy_decisions(const ObserverHub& hub, std::string_view backend, const std::optional<SandboxKey>& key,
                            const std::string& proxy, const std::vector<ProxyDecision>& decisions, bool truncated) {
  for (const auto& d : decisions) {
    NetworkDecisionEvent e;
    if (key) e.context.key = *key;
    e.context.call_id = e.context.key.call_id;
    e.context.backend = std::string(backend);
    e.decision = d.decision;
    e.host = d.host;
    e.port = d.port;
    e.proxy = proxy;
    e.truncated = truncated;
    e.method = d.method;
    e.path = d.path;
    e.rule = d.rule;
    e.reason = d.reason;
    hub.notify(std::move(e));
  }
}

std::optional<std::string> ca_certificate_in_readiness(std::string_view log) {
  std::size_t start = 0;
  while (start < log.size()) {
    const auto end = std::min(log.find('\n', start), log.size());
    const auto line = log.substr(start, end - start);
    start = end + 1;
    if (line.find("\"listening\"") == std::string_view::npos) continue;
    try {
      const auto j = nlohmann::json::parse(line);
      if (j.value("event", "") == "listening" && j.contains("ca_certificate") && j["ca_certificate"].is_string())
        return j["ca_certificate"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
  }
  return std::nullopt;
}

}  // namespace maf::sandbox::support
