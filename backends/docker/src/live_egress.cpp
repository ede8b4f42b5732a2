// Live egress on Docker (live_egress.hpp): the image's feature, and DockerSandbox's LiveEgress.
#include "live_egress.hpp"

#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "brokered_credentials.hpp"
#include "docker_sandbox.hpp"
#include "maf/sandbox/egress_proxy/launch.hpp"
#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::docker::detail {

using boost::asio::awaitable;

awaitable<bool> proxy_image_live(DockerTransport& transport, const DockerConfig& config) {
  if (!config.egress_proxy_image || !transport.has_egress_plane()) co_return false;
  static std::mutex mutex;
  static std::map<std::string, bool> seen;
  {
    std::lock_guard lock(mutex);
    if (auto it = seen.find(*config.egress_proxy_image); it != seen.end()) co_return it->second;
  }
  const auto labels = co_await transport.image_labels(*config.egress_proxy_image);
  const bool live = labels && labels_list_feature(*labels, kLivePolicyFeature);
  std::lock_guard lock(mutex);
  seen[*config.egress_proxy_image] = live;
  co_return live;
}

std::vector<std::string> control_args() { return {"--control", kControlAddress}; }

std::optional<std::string> DockerSandbox::live_egress_refusal() const {
  if (p_.live_egress_refusal.empty()) return std::nullopt;
  return p_.live_egress_refusal;
}

awaitable<EgressUpdateReport> DockerSandbox::apply_egress(SandboxSpec spec) {
  if (!p_.live_egress_refusal.empty())
    throw SandboxCapabilityNotSupported("backend 'docker': container " + p_.container + ": " + p_.live_egress_refusal);
  const std::string proxy = p_.container + "-proxy";
  // Host names only (never a value): the same text the proxy's environment held at start.
  const nlohmann::json request = {{"op", "update"}, {"id", 1}, {"allow", egress_proxy::whole_hosts(spec)}};
  ExecCall call;
  call.container = proxy;
  call.argv = {kProxyBinary, "--control-send", kControlAddress, request.dump()};
  call.working_directory = "/";
  call.timeout = p_.command_timeout;
  call.max_stdout = 64 * 1024;
  const ExecOutcome out = co_await p_.transport->exec(std::move(call));
  const auto reply = nlohmann::json::parse(out.stdout_bytes, nullptr, false);
  if (out.exit_code == 2 || out.could_not_start)
    throw SandboxCapabilityNotSupported(said("proxy " + proxy + " has no control channel (" +
                                             out.stderr_bytes.substr(0, 300) +
                                             "); it was started by a build without live-policy"));
  if (out.exit_code != 0 || !reply.is_object() || !reply.value("ok", false))
    throw OSError(said("proxy " + proxy + " refused the egress update: " +
                       (reply.is_object() ? reply.value("error", std::string("no reason")) : out.stderr_bytes.substr(0, 300))));
  EgressUpdateReport report{reply.value("allowing", std::string()), reply.value("closed", std::size_t{0})};
  if (p_.hub) {
    NetworkDecisionEvent event;
    event.context.key = p_.key;
    event.context.backend = "docker";
    event.context.kind = p_.kind;
    event.context.instance_id = p_.container;
    event.context.time = std::chrono::system_clock::now();
    event.decision = "POLICY-UPDATED";
    event.host = report.allowing;
    event.proxy = proxy;
    event.reason = "closed " + std::to_string(report.closed_tunnels) + " open tunnel(s) to hosts no longer allowed";
    p_.hub->notify(SandboxEvent{std::move(event)});
  }
  co_return report;
}

}  // namespace maf::sandbox::docker::detail
