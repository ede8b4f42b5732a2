// The proxy drain (proxy_drain.hpp; docker.md §8.1, §11.3, D-27).
#include "proxy_drain.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "key_attribution.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"

namespace maf::sandbox::docker::detail {

using boost::asio::awaitable;

namespace {

constexpr std::array<std::string_view, 4> kDecisions{"ALLOW", "DENY", "DENY-NONGLOBAL", "UNREACHABLE"};

std::optional<std::string> decision_name(std::string_view word) {
  std::string upper(word);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (std::find(kDecisions.begin(), kDecisions.end(), upper) == kDecisions.end()) return std::nullopt;
  return upper;
}

/// One log line as a decision, or nullopt for anything else (readiness, errors, noise).
std::optional<EgressDecision> decision_of(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!line.empty() && line.front() == '{') {
    try {
      const auto j = nlohmann::json::parse(line);
      if (!j.is_object() || j.value("event", "") != "decision") return std::nullopt;
      auto name = decision_name(j.value("decision", ""));
      if (!name) return std::nullopt;
      return EgressDecision{*name, j.value("host", ""), j.value("port", 0)};
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
    if (c < '0' || c > '9' || port > 65535) return std::nullopt;
    port = port * 10 + (c - '0');
  }
  std::string_view host = target.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return EgressDecision{*name, std::string(host), port};
}

void publish(const DockerConfig& config, const EgressEvent& event) {
  if (!config.egress_observer) return;
  // An observer's failure is its own: it never changes the disposal's result.
  try {
    config.egress_observer(event);
  } catch (const std::exception& e) {
    logger()->warn("backend 'docker': the egress observer failed on proxy {}: {}", event.proxy, e.what());
  } catch (...) {
    logger()->warn("backend 'docker': the egress observer failed on proxy {}", event.proxy);
  }
}

}  // namespace

LabelledResource inspected_container(const std::string& doc) {
  const auto j = nlohmann::json::parse(doc);
  LabelledResource r;
  r.id = j.value("Id", "");
  r.name = j.value("Name", "");
  if (!r.name.empty() && r.name[0] == '/') r.name.erase(0, 1);
  if (auto c = j.find("Config"); c != j.end() && c->is_object())
    if (auto l = c->find("Labels"); l != c->end() && l->is_object())
      for (auto& [k, v] : l->items())
        if (v.is_string()) r.labels[k] = v.get<std::string>();
  return r;
}

ParsedDecisions parse_decisions(std::string_view log, bool read_cut) {
  ParsedDecisions out;
  out.truncated = read_cut;
  int lines = 0;
  while (!log.empty()) {
    const auto nl = log.find('\n');
    const std::string_view line = log.substr(0, nl);
    log = nl == std::string_view::npos ? std::string_view() : log.substr(nl + 1);
    ++lines;
    if (auto d = decision_of(line)) {
      if (out.decisions.size() < kMaxEgressDecisions)
        out.decisions.push_back(std::move(*d));
      else
        out.truncated = true;
    }
  }
  if (lines >= kLogTailLines) out.truncated = true;  // the tail may have cut the head off
  return out;
}

awaitable<RemoveResult> drain_and_remove_proxy(DockerTransport& transport, const DockerConfig& config,
                                               std::string proxy, std::optional<SandboxKey> caller) {
  std::optional<std::string> doc = co_await transport.inspect_container(proxy);
  if (!doc) co_return RemoveResult{RemoveOutcome::Absent, {}};
  // Everything below acts on the inspected ID, so a same-named replacement is never touched.
  LabelledResource inspected{proxy, proxy, {}, {}};
  try {
    inspected = inspected_container(*doc);
    if (inspected.id.empty()) inspected.id = proxy;
    if (inspected.name.empty()) inspected.name = proxy;
  } catch (const nlohmann::json::exception& e) {
    logger()->warn("backend 'docker': unreadable inspect of proxy {} ({}); draining it by name, unattributed", proxy,
                   e.what());
  }
  const std::string& id = inspected.id;
  const std::string& name = inspected.name;

  // Stop first, so the log is complete; then read it. Either failing loses the decisions,
  // never the teardown.
  std::optional<std::string> log;
  try {
    const std::chrono::seconds grace = kProxyStopGrace;
    co_await transport.stop_container(id, grace);
    log = co_await transport.container_logs(id, kProxyLogBytes);
  } catch (const Error& e) {
    logger()->warn("backend 'docker': draining proxy {} failed ({}); its egress decisions are lost", name, e.what());
  }

  RemoveResult removed = co_await transport.remove_container(id);
  if (removed.outcome == RemoveOutcome::Refused || !log) co_return removed;  // D-27: nothing published
  ParsedDecisions parsed = parse_decisions(*log, log->size() >= kProxyLogBytes);
  if (!parsed.decisions.empty() || parsed.truncated)
    publish(config, EgressEvent{attributed_key(inspected.labels, caller), name, std::move(parsed.decisions),
                                parsed.truncated});
  co_return removed;
}

}  // namespace maf::sandbox::docker::detail
