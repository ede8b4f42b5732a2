// ALLOWLIST topology for one sandbox (egress_topology.hpp; D-31, D-32).
#include "egress_topology.hpp"
#include "live_egress.hpp"


#include <algorithm>
#include <array>
#include <chrono>
#include <exception>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "maf/sandbox/egress_proxy/namespace_settings.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/proxy_log.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "maf/sandbox/support/subprocess.hpp"
#include "host_lock.hpp"
#include "key_attribution.hpp"
#include "proxy_drain.hpp"
#include "said.hpp"
#include "tar_plane.hpp"

namespace maf::sandbox::docker::detail {

using boost::asio::awaitable;

namespace {

constexpr const char* kGatewayV4 = "com.docker.network.bridge.gateway_mode_ipv4";
constexpr const char* kGatewayV6 = "com.docker.network.bridge.gateway_mode_ipv6";
constexpr const char* kInhibitV4 = "com.docker.network.bridge.inhibit_ipv4";
constexpr const char* kBridgeName = "com.docker.network.bridge.name";
constexpr int kFirstIsolatingEngine = 28;  // gateway_mode_*=isolated (D-32)

std::vector<std::string> allow_hosts(const SandboxSpec& spec) {
  std::vector<std::string> hosts;
  for (const auto& entry : spec.egress_allow()) hosts.push_back(egress_entry_host(entry));
  return hosts;
}

/// A comma-separated host list (MAF_SANDBOX_ALLOW's form), sorted; empty for "".
std::vector<std::string> sorted_hosts(const std::string& list) {
  std::vector<std::string> hosts;
  for (std::size_t at = 0; at < list.size();) {
    const auto comma = std::min(list.find(',', at), list.size());
    hosts.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  std::sort(hosts.begin(), hosts.end());
  return hosts;
}

/// The operator's upstream trust store for terminated hosts (egress_upstream_ca_file).
std::string read_upstream_ca(const DockerConfig& config) {
  auto pem = egress_proxy::upstream_ca_pem(*config.egress_upstream_ca_file);
  if (!pem)
    throw OSError(said("egress_upstream_ca_file '" + *config.egress_upstream_ca_file +
                       "' cannot be read or holds no PEM certificate"));
  return std::move(*pem);
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

[[noreturn]] void not_enforced(const std::string& container, const SandboxSpec& spec, const std::string& why) {
  throw SandboxEgressNotEnforced("backend 'docker' cannot enforce the allowlist of workload kind '" + spec.kind() +
                                 "' (sandbox " + container + "): " + why);
}

/// The proxy's log for a message: trimmed, the last 2000 bytes, "(none)" when empty.
std::string proxy_output(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return "(none)";
  return text.size() <= 2000 ? text : "..." + text.substr(text.size() - 2000);
}

/// The runtime's refusal of an IPv6 setting on a kernel without IPv6 ("open
/// /proc/sys/net/ipv6/conf/all/forwarding: no such file or directory").
bool without_ipv6(const std::string& detail) {
  return detail.find("/proc/sys/net/ipv6") != std::string::npos &&
         (detail.find("no such file") != std::string::npos || detail.find("No such file") != std::string::npos);
}

/// The host's view of a bridge device, by `ip -j addr show dev <bridge>`. Only a client on
/// the engine's host can look, which is why a non-local endpoint cannot be verified.
awaitable<std::vector<std::string>> bridge_addresses(const std::string& bridge) {
  support::SubprocessOptions o;
  o.argv = {"ip", "-j", "addr", "show", "dev", bridge};
  o.timeout = std::chrono::seconds(10);
  o.max_stdout = 1 << 20;
  support::SubprocessResult r;
  try {
    r = co_await support::run_subprocess(std::move(o));
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    throw OSError(std::string("could not run `ip -j addr show dev ") + bridge + "`: " + e.what());
  }
  if (r.exit_code != 0)
    throw OSError("`ip -j addr show dev " + bridge + "` exited " + std::to_string(r.exit_code) + ": " + r.stderr_bytes);
  co_return addresses_in_ip_json(r.stdout_bytes);
}

}  // namespace

std::vector<std::string> workload_cap_drop() { return {"NET_RAW"}; }

bool behind_proxy(const DockerConfig& config, const DockerTransport& transport, const SandboxSpec& spec) {
  return config.egress_proxy_image && transport.has_egress_plane() && spec.egress() == Egress::Allowlist &&
         !spec.egress_allow().empty();
}

std::vector<std::pair<std::string, std::string>> workload_proxy_env(const std::string& container, bool terminating) {
  return egress_proxy::guest_proxy_env("http://" + container + "-proxy:" + std::to_string(kProxyPort), terminating);
}

bool labels_say_terminating(const std::string& labels_json) {
  try {
    const auto j = nlohmann::json::parse(labels_json);
    if (!j.is_object()) return false;
    const std::string features = j.value(egress_proxy::kFeaturesLabel, "");
    std::size_t start = 0;
    while (start <= features.size()) {
      const auto comma = std::min(features.find(',', start), features.size());
      if (features.substr(start, comma - start) == egress_proxy::kTerminationFeature) return true;
      start = comma + 1;
    }
  } catch (const nlohmann::json::exception&) {
  }
  return false;
}

awaitable<bool> proxy_image_terminates(DockerTransport& transport, const DockerConfig& config) {
  if (!config.egress_proxy_image || !transport.has_egress_plane()) co_return false;
  const auto labels = co_await transport.image_labels(*config.egress_proxy_image);
  co_return labels && labels_say_terminating(*labels);
}

awaitable<void> install_egress_ca(DockerTransport& transport, const std::string& container, const std::string& ca_pem) {
  std::string bundle;
  for (const std::string path : egress_proxy::kGuestBundleSources) {
    const auto got = co_await transport.archive_get(container, path, 8 << 20);
    if (got.status != ArchiveStatus::Ok || got.cut) continue;
    const auto first = parse_first_entry(got.bytes, got.cut, /*want_body=*/true, path);
    if (first.need_more || first.entry.type != support::TarEntryType::file) continue;
    bundle = first.body;
    break;
  }
  co_await transport.archive_put(container, "/", egress_proxy::guest_ca_tar(std::move(bundle), ca_pem));
}

std::optional<int> engine_major(const std::string& version) {
  std::size_t i = 0;
  int major = 0;
  while (i < version.size() && i < 4 && version[i] >= '0' && version[i] <= '9') major = major * 10 + (version[i++] - '0');
  if (i == 0 || i >= version.size() || version[i] != '.') return std::nullopt;
  return major;
}

std::vector<std::string> addresses_in_ip_json(const std::string& json_text) {
  std::vector<std::string> out;
  try {
    const auto j = nlohmann::json::parse(json_text);
    if (!j.is_array()) throw OSError("`ip -j addr` answered no array");
    for (const auto& dev : j)
      if (auto info = dev.find("addr_info"); info != dev.end() && info->is_array())
        for (const auto& a : *info) {
          // An IPv6 link-local address appears as soon as the bridge is up. It is no path
          // for the workload: N has IPv6 off (verified), so the engine disables IPv6 in
          // every endpoint's namespace (measured on 20.10: disable_ipv6=1 in the container).
          if (a.value("family", "") == "inet6" && a.value("scope", "") == "link") continue;
          out.push_back(a.value("family", "?") + " " + a.value("local", "?"));
        }
  } catch (const nlohmann::json::exception& e) {
    throw OSError(std::string("unreadable `ip -j addr` answer: ") + e.what());
  }
  return out;
}

bool spec_terminates(const SandboxSpec& spec) { return spec_has_rules(spec) || !spec.attached_identity().empty(); }

awaitable<std::optional<std::string>> ensure_egress_topology(DockerTransport& transport, const DockerConfig& config,
                                                             const std::string& container, const SandboxKey& key,
                                                             const SandboxSpec& spec, bool fresh,
                                                             const Brokering& brokering, bool control_channel) {
  // Method/path rules need the proxy to terminate TLS: checked on the image itself at every
  // acquire, whatever was declared (a deferred backend declared from configuration).
  const bool terminating = spec_terminates(spec);
  const bool brokers = !spec.attached_identity().empty();
  if (brokers) {
    const auto labels = co_await transport.image_labels(config.egress_proxy_image.value_or(""));
    if (!labels || !labels_list_feature(*labels, kBrokerFeature))
      throw SandboxCapabilityNotSupported(
          "backend 'docker' cannot broker credential '" + spec.attached_identity().front().name() +
          "' of workload kind '" + spec.kind() + "': proxy image '" + config.egress_proxy_image.value_or("") +
          "' does not list the feature " + kBrokerFeature + " (rebuild it with scripts/egress-proxy-image); nothing "
          "is written into the guest instead");
    if (brokering.placeholders.size() != spec.attached_identity().size())
      throw RuntimeError("backend 'docker': no placeholders were made for the credentials of kind '" + spec.kind() + "'");
  }
  std::vector<std::string> proxy_args = config.egress_proxy_args;
  for (auto& a : proxy_credential_args(spec)) proxy_args.push_back(std::move(a));
  if (control_channel)
    for (auto& a : control_args()) proxy_args.push_back(std::move(a));
  const std::string credentials_json = proxy_credentials_json(spec, brokering.placeholders);
  if (spec_has_rules(spec) && !co_await proxy_image_terminates(transport, config))
    not_enforced(container, spec,
                 "method and path rules need a proxy image that terminates TLS (label " +
                     std::string(egress_proxy::kFeaturesLabel) + " naming " + egress_proxy::kTerminationFeature + "); '" +
                     config.egress_proxy_image.value_or("") + "' does not say so (rebuild it with scripts/egress-proxy-image)");
  std::optional<std::string> ca_certificate;
  const std::string network = container + "-net";
  const std::string proxy = container + "-proxy";
  const std::string endpoint = co_await transport.endpoint();
  const bool local_engine = endpoint.rfind("unix://", 0) == 0;
  // Issue 54: replicas on this host build one sandbox's topology one at a time — the engine's
  // network create does not refuse a duplicate name atomically (20.10: CheckDuplicate is a
  // check, then a create), so two at once could make two networks of one name. The first
  // makes the network and the proxy; the others find them and keep them.
  auto topology_lock = co_await wait_for_host_lock("egress\n" + endpoint + "\n" + container,
                                                   std::chrono::steady_clock::now() + 2 * config.command_timeout(),
                                                   "the egress topology of " + container);

  // D-32: gate on the version *before* creating N; 20.10 silently ignores gateway_mode_*.
  const std::string version = co_await transport.server_version();
  const auto major = engine_major(version);
  const bool isolating = major && *major >= kFirstIsolatingEngine;
  NetworkRequest request;
  request.name = network;
  request.internal = true;
  request.ipv6 = false;
  if (isolating) {
    request.options = {{kGatewayV4, "isolated"}, {kGatewayV6, "isolated"}};
  } else if (config.egress_inhibit_ipv4_fallback && local_engine) {
    request.options = {{kInhibitV4, "true"}};
  } else {
    not_enforced(container, spec,
                 "Docker Engine " + version + " predates 28.0, whose gateway_mode_*=isolated keeps the internal "
                 "bridge free of host addresses" +
                     (config.egress_inhibit_ipv4_fallback
                          ? std::string("; the inhibit_ipv4 fallback needs a local engine (unix://) to verify the "
                                        "bridge, and this one is ") + endpoint
                          : std::string("; set egress_inhibit_ipv4_fallback to use the verified inhibit_ipv4 network")));
  }
  for (const auto& [label, value] : support::sandbox_labels(key, spec.kind(), spec.labels()))
    request.labels.emplace_back(label, value);

  bool created_network = false;
  bool created_proxy = false;
  auto cleanup = [&]() -> awaitable<void> {
    // Proxy first, then the network: attached endpoints block a network's removal. A warm
    // sandbox's proxy is removed only when this acquire made it: a replica's working proxy is
    // never taken from under its workload (issue 54); a network with a workload on it is
    // kept by the engine.
    if (created_proxy || fresh) co_await transport.remove_container(proxy);
    if (fresh || created_network) co_await transport.remove_network(network);
  };

  std::exception_ptr failure;
  try {
    CreateResult made = co_await transport.create_network(request);
    if (made.outcome == CreateOutcome::Failed)
      throw OSError(said("creating network " + network + " failed: " + made.detail));
    created_network = made.outcome == CreateOutcome::Created;

    // Verify what the engine made (or what we adopt): never trust that options took.
    auto doc = co_await transport.inspect_network(network);
    if (!doc) throw OSError(said("network " + network + " vanished after creation"));
    const auto j = nlohmann::json::parse(*doc);
    const auto options = j.value("Options", nlohmann::json::object());
    const auto labels = j.value("Labels", nlohmann::json::object());
    if (!j.value("Internal", false) || j.value("EnableIPv6", true))
      not_enforced(container, spec, "network " + network + " is not internal with IPv6 off");
    for (const auto& [k, v] : request.options)
      if (!options.is_object() || options.value(k, "") != v)
        not_enforced(container, spec, "network " + network + " lacks option " + k + "=" + v +
                                          " (created by another configuration?)");
    for (const auto& [label, value] : support::key_selector(key, spec.kind()))
      if (!labels.is_object() || labels.value(label, "") != value)
        not_enforced(container, spec, "network " + network + " does not carry this sandbox's labels");
    const std::string id = j.value("Id", "");
    const std::string bridge = options.is_object() && options.contains(kBridgeName) ? options.value(kBridgeName, "")
                                                                                     : "br-" + id.substr(0, 12);

    // Host-side check: the bridge must hold no address the workload could reach.
    auto verify_bridge = [&]() -> awaitable<void> {
      if (!local_engine) co_return;  // an Engine >= 28 remote daemon: the gate is all we have
      std::vector<std::string> addresses;
      try {
        addresses = co_await bridge_addresses(bridge);
      } catch (const OSError& e) {
        not_enforced(container, spec, "could not verify bridge " + bridge + " of " + network + ": " + e.what());
      }
      if (!addresses.empty())
        not_enforced(container, spec, "bridge " + bridge + " of network " + network + " holds host address(es) " +
                                          join(addresses, ", ") + "; the workload could reach the host");
    };
    co_await verify_bridge();

    // Issue 54: a proxy that serves this sandbox already — running, this key's, this
    // image's and allowlist's, on N and the outbound network, listening — is kept: replicas
    // share it, and replacing it would cut the tunnels of a replica's running command. Any
    // other is drained (D-27) and replaced.
    const auto serving = [&](const nlohmann::json& p, std::string& why) {
      const auto theirs_labels = p.value("/Config/Labels"_json_pointer, nlohmann::json::object());
      for (const auto& [label, value] : support::key_selector(key, spec.kind()))
        if (!theirs_labels.is_object() || theirs_labels.value(label, "") != value)
          return (why = "label " + label + " differs", false);
      if (!theirs_labels.is_object() || theirs_labels.value(std::string(support::kLabelRole), "") != "proxy")
        return (why = "not a proxy", false);
      if (p.value("/Config/Image"_json_pointer, std::string()) != *config.egress_proxy_image)
        return (why = "another image", false);
      // The proxy's own environment, read once: the hosts it allows whole and its rules
      // (issue 45: the proxy serving method/path rules must hold exactly this spec's).
      std::string their_allow, their_rules;
      for (const auto& e : p.value("/Config/Env"_json_pointer, nlohmann::json::array())) {
        if (!e.is_string()) continue;
        const auto& pair = e.get_ref<const std::string&>();
        const auto eq = pair.find('=');
        if (eq == std::string::npos) continue;
        if (pair.compare(0, eq, egress_proxy::kAllowVariable) == 0) their_allow = pair.substr(eq + 1);
        if (pair.compare(0, eq, egress_proxy::kRulesVariable) == 0) their_rules = pair.substr(eq + 1);
      }
      if (sorted_hosts(their_allow) != sorted_hosts(egress_proxy::whole_hosts(spec)))
        return (why = "another allowlist", false);
      if (their_rules != (terminating ? egress_proxy::rules_json(spec) : std::string()))
        return (why = "other method/path rules", false);
      // Brokered credentials (issue 46): the same credentials under the same placeholders.
      std::string their_credentials;
      for (const auto& e : p.value("/Config/Env"_json_pointer, nlohmann::json::array()))
        if (e.is_string() && e.get<std::string>().rfind("MAF_SANDBOX_CREDENTIALS=", 0) == 0)
          their_credentials = e.get<std::string>().substr(std::string("MAF_SANDBOX_CREDENTIALS=").size());
      if (their_credentials != credentials_json) return (why = "other brokered credentials", false);
      if (p.value("/Config/Cmd"_json_pointer, nlohmann::json::array()) != nlohmann::json(proxy_args) &&
          !(proxy_args.empty() && p.value("/Config/Cmd"_json_pointer, nlohmann::json()).is_null()))
        return (why = "other proxy arguments", false);
      if (!p.value("/State/Running"_json_pointer, false) || p.value("/State/Paused"_json_pointer, false))
        return (why = "not running", false);
      const auto networks = p.value("/NetworkSettings/Networks"_json_pointer, nlohmann::json::object());
      if (!networks.is_object() || !networks.contains(network) || !networks.contains(config.outbound_network))
        return (why = "not on both " + network + " and " + config.outbound_network, false);
      return true;
    };
    const auto listening = [&]() -> awaitable<bool> {
      co_return (co_await transport.container_logs(proxy, 64 * 1024)).find("listening") != std::string::npos;
    };
    bool kept = false;
    std::string why_not = "absent";
    if (auto found = co_await transport.inspect_container(proxy)) {
      const auto p = nlohmann::json::parse(*found);
      why_not.clear();
      if (serving(p, why_not)) {
        const bool heard = co_await listening();  // not inside && (a GCC 12 coroutine bug)
        kept = heard;
        if (!kept) why_not = "not listening";
      }
    }
    if (kept) {
      logger()->info("backend 'docker': egress proxy {} serves {} already; kept", proxy, container);
    } else {
      if (why_not != "absent") logger()->info("backend 'docker': replacing egress proxy {} ({})", proxy, why_not);
      std::string old_proxy = proxy;
      std::optional<SandboxKey> caller = key;
      auto removed = co_await drain_and_remove_proxy(transport, config, std::move(old_proxy), std::move(caller));
      if (removed.outcome == RemoveOutcome::Refused)
        throw OSError(said("could not replace proxy " + proxy + ": " + removed.detail));
      if (!co_await transport.image_present(*config.egress_proxy_image))
        throw OSError(said("egress proxy image '" + *config.egress_proxy_image +
                           "' is not present; build it locally with scripts/egress-proxy-image " + *config.egress_proxy_image));
      CreateRequest run;
      run.name = proxy;
      run.image = *config.egress_proxy_image;
      run.network = network;
      run.env = {{egress_proxy::kAllowVariable, egress_proxy::whole_hosts(spec)}};
      if (terminating) {
        run.env.emplace_back(egress_proxy::kRulesVariable, egress_proxy::rules_json(spec));
        if (config.egress_upstream_ca_file)
          run.env.emplace_back(egress_proxy::kUpstreamCaVariable, read_upstream_ca(config));
      }
      run.labels = request.labels;
      run.labels.emplace_back(std::string(support::kLabelRole), "proxy");
      run.labels.emplace_back(std::string(kLabelKeyV1), encode_key_v1(key));  // D-8: lossless attribution
      run.pids_limit = config.pids_limit;
      run.cap_drop_all = true;  // it binds 3128 as nobody and needs no capability
      run.sysctls = egress_proxy::proxy_sysctls();  // a proxy, never a router (issue 22)
      if (brokers) run.env.emplace_back("MAF_SANDBOX_CREDENTIALS", credentials_json);  // no value in it (CRED-7)
      run.command = proxy_args;
      CreateResult started = co_await transport.create_and_start(run);
      if (started.outcome == CreateOutcome::Failed && without_ipv6(started.detail)) {
        // A kernel booted without IPv6 has no net.ipv6.* settings (the runtime cannot write
        // them) and nothing IPv6 to forward: run again with the IPv4 settings alone. The
        // proxy's own check still refuses to serve if IPv4 forwarding is on.
        co_await transport.remove_container(proxy);
        std::erase_if(run.sysctls, [](const auto& kv) { return kv.first.rfind("net.ipv6.", 0) == 0; });
        started = co_await transport.create_and_start(run);
      }
      if (started.outcome == CreateOutcome::NameInUse) {
        // A replica on another host made it first: its maker connects and readies it; it is
        // adopted once it serves, within the readiness bound below.
        bool adopted = false;
        for (int attempt = 0; attempt < 40 && !adopted; ++attempt) {
          auto found = co_await transport.inspect_container(proxy);
          if (found) {
            if (serving(nlohmann::json::parse(*found), why_not)) {
              const bool heard = co_await listening();
              adopted = heard;
            } else if (why_not.rfind("label", 0) == 0) {
              not_enforced(container, spec, "proxy " + proxy + " was made by another configuration (" + why_not + ")");
            }
          }
          if (!adopted) co_await support::sleep_for(std::chrono::milliseconds(250));
        }
        if (!adopted)
          throw OSError(said("proxy " + proxy + ", made by another process, never served this sandbox (" + why_not + ")"));
        kept = true;
      } else if (started.outcome != CreateOutcome::Created) {
        throw OSError(said("starting proxy " + proxy + " from '" + *config.egress_proxy_image +
                           "' failed: " + started.detail));
      } else {
        created_proxy = true;
      }
    }
    if (!kept) {
      // Without the outbound leg ALLOWLIST would quietly become CLOSED: fail instead.
      co_await transport.connect_network(config.outbound_network, proxy);
      // CRED-7: the values, as a file in the proxy's container only; it waits for it, reads
      // it once and unlinks it before it listens.
      if (brokers) {
        if (brokering.values.size() != spec.attached_identity().size())
          throw RuntimeError("backend 'docker': proxy " + proxy + " was made without the values of its credentials");
        co_await transport.archive_put(proxy, "/", credential_values_tar(spec, brokering));
      }

      bool ready = false;
      std::string output;
      for (int attempt = 0; attempt < 20 && !ready; ++attempt) {
        output = co_await transport.container_logs(proxy, 64 * 1024);
        ready = output.find("listening") != std::string::npos;
        if (ready) break;
        // A proxy that refused to start (a bad allow entry, a forwarding namespace) has exited:
        // its own words are the reason, not "never listened" 5 s later (issue 22).
        if (auto state = co_await transport.container_state(proxy); !state || !state->running) {
          output = co_await transport.container_logs(proxy, 64 * 1024);
          throw OSError(said("proxy " + proxy + " from '" + *config.egress_proxy_image +
                             "' exited: " + proxy_output(output)));
        }
        co_await support::sleep_for(std::chrono::milliseconds(250));
      }
      if (!ready)
        throw OSError(said("proxy " + proxy + " never reported `listening`; its output: " +
                           proxy_output(output)));
    }
    if (terminating) {
      // The CA is the proxy's own (made in memory when it started): read from its readiness
      // line, whether this acquire made the proxy or a replica's is kept (issue 45, 54).
      const std::string log = co_await transport.container_logs(proxy, 64 * 1024);
      ca_certificate = support::ca_certificate_in_readiness(log);
      if (!ca_certificate)
        throw OSError(said("proxy " + proxy + " terminates TLS but printed no CA certificate in its readiness line"));
    }
    co_await verify_bridge();  // again, now that endpoints are attached and the bridge is up
  } catch (const Cancelled&) {
    throw;
  } catch (const nlohmann::json::exception& e) {
    failure = std::make_exception_ptr(OSError(said("unreadable inspect of network " + network + ": " + e.what())));
  } catch (const Error&) {
    failure = std::current_exception();
  }
  if (failure) {
    // No co_await inside a handler (C++20): clean up here, then re-raise the first failure.
    try {
      co_await cleanup();
    } catch (const Error& e) {
      logger()->warn("backend 'docker': cleaning up egress scaffolding of {} failed: {}", container, e.what());
    }
    std::rethrow_exception(failure);
  }
  logger()->info("backend 'docker': egress proxy {} ready on {} for {}{}", proxy, network, join(allow_hosts(spec), ","),
                 terminating ? (brokers ? " (brokered credentials: every host TLS terminated)"
                                        : " (method/path rules: TLS terminated)")
                             : "");
  co_return ca_certificate;
}

}  // namespace maf::sandbox::docker::detail
