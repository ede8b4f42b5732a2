// The proxy drain (proxy_drain.hpp; D-27).
#include "proxy_drain.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "key_attribution.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"

namespace maf::sandbox::docker::detail {

using boost::asio::awaitable;

namespace {

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
  support::ProxyDecisions parsed =
      support::parse_proxy_decisions(*log, log->size() >= kProxyLogBytes, static_cast<std::size_t>(kLogTailLines));
  if (!parsed.decisions.empty() || parsed.truncated)
    publish(config, EgressEvent{attributed_key(inspected.labels, caller), name, std::move(parsed.decisions),
                                parsed.truncated});
  co_return removed;
}

}  // namespace maf::sandbox::docker::detail
