// ALLOWLIST topology for one wslc sandbox (wslc.md W-31…W-34): an internal network N-net,
// the filtering proxy N-proxy on it, dual-homed onto wslc's `bridge` for its outbound leg,
// and the workload on N-net only. Rebuilt around the workload on every allowlisting acquire.
#include "egress.hpp"


#include <exception>

#include <spdlog/spdlog.h>

#include "maf/sandbox/egress_proxy/launch.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/proxy_log.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "maf/sandbox/wslc/backend.hpp"
#include "maf/sandbox/wslc/error_codes.hpp"
#include "maf/sandbox/wslc/errors.hpp"
#include "file_plane.hpp"
#include "said.hpp"

namespace maf::sandbox::wslc {

using boost::asio::awaitable;

namespace detail {

LabelList resource_labels(const SandboxKey& key, const SandboxSpec& spec) {
  LabelList labels;
  for (auto& [label, value] : support::key_selector(key, spec.kind())) labels.emplace_back(label, value);
  for (auto& [label, value] : support::sandbox_labels(key, spec.kind(), spec.labels()))
    if (label.rfind(support::kLabelUserPrefix, 0) == 0) labels.emplace_back(label, value);
  return labels;
}

std::vector<std::string> allow_identities(const SandboxSpec& spec) {
  std::vector<std::string> out;
  for (const auto& entry : spec.egress_allow()) out.push_back(egress_proxy::entry_identity(entry));
  return out;
}

LabelList proxy_env(const std::string& container, bool terminating) {
  return egress_proxy::guest_proxy_env("http://" + container + "-proxy:" + std::to_string(kProxyPort), terminating);
}

}  // namespace detail

namespace {

// W-32 (4): up to 20 polls of the proxy's log, 250 ms apart, each read capped at 64 KiB.
constexpr int kReadinessPolls = 20;
constexpr std::chrono::milliseconds kReadinessInterval{250};
constexpr std::size_t kLogReadCap = 64 * 1024;
// What backends/egress-proxy writes to stderr before it exits without listening.
constexpr const char* kProxyRefusal = "maf-sandbox-egress-proxy: refusing to start";
// OBS-7: the decisions' read takes the last 1000 lines, at most 1 MiB per stream — Docker's
// bounds for the same proxy (docs/backends/docker.md "Disposal, in order").
constexpr int kDecisionTailLines = 1000;
constexpr std::size_t kDecisionLogCap = std::size_t{1} << 20;

std::string tail(const std::string& text, std::size_t n = 2000) {
  return text.size() <= n ? text : "…" + text.substr(text.size() - n);
}

}  // namespace

awaitable<std::optional<std::string>> WslcSandboxBackend::ensure_egress(const std::string& name, const SandboxKey& key,
                                                                        const SandboxSpec& spec, bool fresh) {
  const std::string network = name + "-net";
  const std::string proxy = name + "-proxy";
  const std::string& image = *config_.egress_proxy_image;
  const LabelList labels = detail::resource_labels(key, spec);
  const std::string for_kind = " for kind '" + spec.kind() + "'";
  // W-32 (2), W-44: what the proxy is told — the hosts allowed whole, and the method/path
  // rules with the operator's upstream trust store (read now: an unreadable file refuses).
  const bool terminating = egress_proxy::spec_has_rules(spec);
  LabelList proxy_env{{egress_proxy::kAllowVariable, egress_proxy::whole_hosts(spec)}};
  if (terminating) {
    proxy_env.emplace_back(egress_proxy::kRulesVariable, egress_proxy::rules_json(spec));
    if (config_.egress_upstream_ca_file) {
      auto pem = egress_proxy::upstream_ca_pem(*config_.egress_upstream_ca_file);
      if (!pem)
        throw OSError(said("egress_upstream_ca_file '") + *config_.egress_upstream_ca_file +
                      "' cannot be read or holds no PEM certificate");
      proxy_env.emplace_back(egress_proxy::kUpstreamCaVariable, std::move(*pem));
    }
  }
  std::optional<std::string> ca_certificate;

  // (1) The internal network; one that exists (an earlier acquire, another process) is adopted.
  auto create_args = network_create_args(network, labels);
  WslcOutcome made = co_await lifecycle(std::move(create_args));
  if (made.exit_code != 0 && find_symbol(made.stderr_bytes) != WslcSymbol::AlreadyExists)
    raise_wslc_failure("wslc network create --internal of " + network + for_kind, made.exit_code, made.stderr_bytes);

  std::exception_ptr failure;
  try {
    // (2) Replace the proxy, so its allowlist is this spec's. Its name derives from this key
    // (W-10), so what the old one decided is this key's (OBS-7).
    Removal old = co_await remove_proxy(proxy, key);
    if (old.failure)
      throw WslcCommandFailed(said("could not replace egress proxy ") + proxy + for_kind + ": " +
                                  old.failure->detail,
                              "", "");
    auto run = proxy_run_args(proxy, network, proxy_env, labels, image);
    WslcOutcome started = co_await lifecycle(std::move(run));
    if (started.exit_code != 0)
      raise_wslc_failure("wslc container run of egress proxy " + proxy + " from egress_proxy_image '" + image + "'" +
                             for_kind + " (build the image with `wslc build -t " + image +
                             " <context>`, the context holding the proxy's Dockerfile and static binary; "
                             "scripts/egress-proxy-image prepares one in build/egress-proxy-image)",
                         started.exit_code, started.stderr_bytes);
    // (3) The outbound leg. Without it ALLOWLIST would silently become CLOSED: fail instead.
    auto connect = network_connect_args(proxy);
    WslcOutcome connected = co_await lifecycle(std::move(connect));
    if (connected.exit_code != 0)
      raise_wslc_failure("wslc network connect bridge " + proxy + for_kind +
                             " (without its outbound leg the allowlist would silently be closed)",
                         connected.exit_code, connected.stderr_bytes);
    // (4) Readiness: the workload is created or started only once the proxy listens.
    bool ready = false;
    WslcOutcome logs;
    const std::string verb = "container logs";  // a named local: nothing temporary crosses co_await
    for (int attempt = 0; attempt < kReadinessPolls && !ready; ++attempt) {
      WslcCall call;
      call.args = logs_args(proxy);
      call.timeout = config_.command_timeout();
      call.max_stdout = call.max_stderr = kLogReadCap;
      logs = co_await run_lifecycle(*runner_, std::move(call), verb);
      ready = logs.exit_code == 0 && proxy_reports_listening(logs.stdout_bytes);
      // A proxy that refused to start has said why and exited: report its words now (issue 22).
      if (!ready && (logs.stdout_bytes + logs.stderr_bytes).find(kProxyRefusal) != std::string::npos)
        throw WslcCommandFailed(said("egress proxy ") + proxy + " from '" + image + "'" + for_kind +
                                    " refused to start: " + tail(logs.stdout_bytes + logs.stderr_bytes),
                                "", logs.stderr_bytes);
      if (!ready && attempt + 1 < kReadinessPolls) co_await support::sleep_for(kReadinessInterval);
    }
    if (!ready)
      throw WslcCommandFailed(said("egress proxy ") + proxy + " from '" + image + "'" + for_kind +
                                  " never reported `listening on " + std::to_string(kProxyPort) + "` in " +
                                  std::to_string(kReadinessPolls) + " polls of its log; last output: " +
                                  tail(logs.stdout_bytes + logs.stderr_bytes),
                              "", logs.stderr_bytes);
    // W-44: a spec with method/path rules needs a proxy that terminates TLS; one that does
    // prints its CA in the readiness line. wslc cannot read the image's features label, so
    // this is the check: no CA, no rules enforced — refused, never run as a plain tunnel.
    if (terminating) {
      ca_certificate = support::ca_certificate_in_readiness(logs.stdout_bytes + "\n" + logs.stderr_bytes);
      if (!ca_certificate)
        throw SandboxEgressNotEnforced(said("cannot enforce the method/path rules of workload kind '") + spec.kind() +
                                       "': egress proxy " + proxy + " from '" + image +
                                       "' started without terminating TLS (its readiness line has no CA "
                                       "certificate); `egress_proxy_terminates` names an image that does not");
    }
  } catch (const Error&) {
    failure = std::current_exception();
  }
  if (failure) {
    // No co_await inside a handler (C++20). W-33: a fresh create also loses its network.
    co_await remove_egress(name, fresh);
    std::rethrow_exception(failure);
  }
  logger()->info("backend 'wslc': egress proxy {} ready on {} for {} allowlist entr{}{}", proxy, network,
                 spec.egress_allow().size(), spec.egress_allow().size() == 1 ? "y" : "ies",
                 terminating ? ", terminating TLS for its method/path rules" : "");
  co_return ca_certificate;
}

awaitable<void> WslcSandboxBackend::install_egress_ca(const std::string& name, const SandboxSpec& spec,
                                                      const std::string& ca_pem) {
  // The guest's own bundle, read as the guest (the guest owns that file and can only spoil
  // its own trust with it), bounded; none readable → the CA alone (terminated hosts only).
  std::string bundle;
  for (const std::string path : egress_proxy::kGuestBundleSources) {
    WslcCall call;
    call.args = exec_args(name, "/", {"cat", path}, std::nullopt);
    call.timeout = config_.command_timeout();
    call.max_stdout = 8 << 20;
    call.max_stderr = 4096;
    const std::string verb = "container exec";  // a named local: nothing temporary crosses co_await
    WslcOutcome got = co_await run_lifecycle(*runner_, std::move(call), verb);
    if (!got.ok()) continue;
    bundle = std::move(got.stdout_bytes);
    break;
  }
  const detail::FilePlane plane{runner_.get(), name, spec.kind(), config_.command_timeout()};
  co_await detail::upload_tar(plane, egress_proxy::guest_ca_tar(std::move(bundle), ca_pem), egress_proxy::kGuestCaFile);
}

awaitable<std::optional<support::ProxyDecisions>> WslcSandboxBackend::read_proxy_decisions(const std::string& proxy) {
  WslcCall call;
  call.args = logs_args(proxy, kDecisionTailLines);
  call.timeout = config_.command_timeout();
  call.max_stdout = call.max_stderr = kDecisionLogCap;
  const std::string verb = "container logs";  // a named local: nothing temporary crosses co_await
  WslcOutcome logs;
  try {
    logs = co_await run_lifecycle(*runner_, std::move(call), verb);
  } catch (const Error& e) {
    logger()->warn("backend 'wslc': reading egress proxy {}'s log failed ({}); its decisions are lost", proxy,
                   e.what());
    co_return std::nullopt;
  }
  if (logs.exit_code != 0) {
    // Already gone (nothing to read) or unreadable: either way nothing to report.
    if (find_symbol(logs.stderr_bytes) != WslcSymbol::ContainerNotFound)
      logger()->warn("backend 'wslc': reading egress proxy {}'s log failed (exit {}): {}; its decisions are lost",
                     proxy, logs.exit_code, tail(logs.stderr_bytes));
    co_return std::nullopt;
  }
  // stdout then stderr, as Docker's log read gives them; a last line without its newline
  // does not run into the next stream's first.
  std::string log = std::move(logs.stdout_bytes);
  if (!log.empty() && log.back() != '\n') log += '\n';
  log += logs.stderr_bytes;
  co_return support::parse_proxy_decisions(log, logs.stdout_overflowed || logs.stderr_overflowed,
                                           static_cast<std::size_t>(kDecisionTailLines));
}

awaitable<WslcSandboxBackend::Removal> WslcSandboxBackend::remove_proxy(const std::string& proxy,
                                                                        std::optional<SandboxKey> key) {
  // No `container stop` (W-39): the log is read from the running proxy, so a decision it has
  // not written yet (an allowed link is logged when it closes) is missed.
  std::optional<support::ProxyDecisions> read;
  if (!observer_hub()->empty()) read = co_await read_proxy_decisions(proxy);
  Removal removed = co_await remove(proxy);
  // As Docker's drain (D-27): delivered only once the proxy is gone, never for one kept.
  if (read && removed.removed)
    support::notify_proxy_decisions(*observer_hub(), kBackendName, key, proxy, read->decisions, read->truncated);
  co_return removed;
}

awaitable<void> WslcSandboxBackend::remove_egress(const std::string& name, bool with_network) {
  const std::string proxy = name + "-proxy";
  Removal r = co_await remove(proxy);
  if (r.failure) {
    logger()->warn("backend 'wslc': cleaning up egress proxy {} failed: {}", proxy, r.failure->detail);
    co_return;  // its endpoint would block the network's removal anyway
  }
  if (!with_network) co_return;
  std::vector<DisposalFailure> failures;
  co_await remove_network(name + "-net", failures);
  for (const auto& f : failures) logger()->warn("backend 'wslc': cleaning up egress scaffolding failed: {}", f.to_string());
}

}  // namespace maf::sandbox::wslc
