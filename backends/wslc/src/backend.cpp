// WslcSandboxBackend: declarations and acquire's get-or-create (wslc.md W-1…W-19, W-42).
// The ALLOWLIST topology lives in egress.cpp, disposal in disposal.cpp, the work base's
// creation in the sandbox (wslc_sandbox.cpp, W-18 over the core's walk, ACQ-4).
#include "maf/sandbox/wslc/backend.hpp"

#include <chrono>
#include <exception>

#include <spdlog/spdlog.h>

#include "egress.hpp"
#include "maf/sandbox/egress_proxy/launch.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/wslc/error_codes.hpp"
#include "maf/sandbox/wslc/errors.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "said.hpp"
#include "wslc_sandbox.hpp"

namespace maf::sandbox::wslc {

using boost::asio::awaitable;

namespace {

BackendDeclarations wslc_declarations(const WslcConfig& config) {
  const bool proxy_configured = config.egress_proxy_image.has_value();
  BackendDeclarations d;
  // W-2's {EXEC, FILES_IN}, plus RECLAIM (issue 26 supersedes W-2 there): the core's rm -rf
  // over `wslc exec` as the container's user, proven by CLEANUP through the shim
  // (docs/backends/wslc.md "Cleanup"). Never SNAPSHOT.
  d.capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::Reclaim};
  // ExecStream (docs/streaming.md, wslc.md "Streaming exec"): `container exec`'s pipes read
  // as they fill, the program's group stopped by a second exec; proven through the shim by
  // test_wslc_stream.
  d.capabilities.insert(Capability::ExecStream);
  d.os_families = OsFamilySet{OsFamily::Posix};                          // W-3
  // W-4: ALLOWLIST only with a proxy to enforce it; never UNRESTRICTED.
  d.egress_modes = proxy_configured ? EgressSet{Egress::Closed, Egress::Allowlist} : EgressSet{Egress::Closed};
  // Issue 45: method/path rules only behind a proxy the operator says terminates TLS; every
  // acquire with rules checks the proxy itself (its readiness line carries the CA, W-44).
  if (proxy_configured && config.egress_proxy_terminates) {
    d.capabilities.insert(Capability::EgressMethods);
    d.capabilities.insert(Capability::EgressPaths);
  }
  d.isolation_scopes = IsolationScopeSet{IsolationScope::Conversation, IsolationScope::Call};  // W-5
  // LIM-3: only what wslc can put on the container and the LIMITS suite proves through the
  // shim — `--cpus` (LM-3). Not memory (its --memory does not bound swap: a hog may swap
  // rather than be killed, LM-1), processes (no --pids-limit), ttl (the 2.9.4 listing reports
  // no labels, so no host can read a lifetime back), idle_timeout (no engine record of a last
  // use) — C-23 and docs/backends/wslc.md "Resource bounds". A spec asking one of those is
  // refused by the core (the router, and ACQ-1 before do_acquire) with this set as "it
  // enforces"; the page says why.
  d.resource_bounds = ResourceBoundSet{ResourceBound::Cpus};
  return d;  // limits undeclared: the core defaults apply (W-6)
}

std::string version_text(const std::array<int, 4>& v) {
  return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]) + "." + std::to_string(v[3]);
}

}  // namespace

WslcSandboxBackend::WslcSandboxBackend(WslcConfig config, std::shared_ptr<WslcRunner> runner)
    : config_(std::move(config)),
      runner_(runner ? std::move(runner) : make_process_runner(config_.wslc_path)),
      declarations_(wslc_declarations(config_)) {}

WslcSandboxBackend::~WslcSandboxBackend() = default;

std::string WslcSandboxBackend::container_name(const SandboxKey& key, const std::string& kind,
                                               const std::string& work_base,
                                               const std::vector<std::string>& allow_hosts,
                                               const ResourceLimits& resources) {
  // W-10, W-31: the allow: part only behind the proxy (sorted by sandbox_name), so a closed
  // sandbox and an allowlisted one of the same key never share a container; the base
  // joins only when not the default.
  support::NameQualifiers q;
  q.egress_allow = allow_hosts;
  if (work_base != kDefaultWorkDir) q.work_base = work_base;
  // LIM-5: a container's bounds are fixed at create, so other bounds are another container.
  if (!resources.empty()) q.resources = resources.to_string();
  return support::sandbox_name(kContainerPrefix, key, kind, q);
}

bool WslcSandboxBackend::behind_proxy(const SandboxSpec& spec) const {
  return config_.egress_proxy_image && spec.egress() == Egress::Allowlist && !spec.egress_allow().empty();
}

void WslcSandboxBackend::remember(const SandboxKey& key, const std::string& name) {
  std::lock_guard guard(state_mutex_);
  auto& entry = acquired_[support::length_prefixed({key.scope, key.thread_id, key.agent_id, key.call_id})];
  entry.first = key;
  entry.second.insert(name);
}

std::set<std::string> WslcSandboxBackend::remembered(const SandboxKey& key,
                                                     const std::optional<std::string>& scope_thread_only) {
  std::lock_guard guard(state_mutex_);
  std::set<std::string> out;
  for (const auto& [id, entry] : acquired_) {
    const SandboxKey& k = entry.first;
    const bool match = scope_thread_only ? (k.scope == key.scope && k.thread_id == key.thread_id) : k == key;
    if (match) out.insert(entry.second.begin(), entry.second.end());
  }
  return out;
}

std::optional<SandboxKey> WslcSandboxBackend::remembered_key(const std::string& name) {
  std::lock_guard guard(state_mutex_);
  for (const auto& [id, entry] : acquired_)
    if (entry.second.contains(name)) return entry.first;
  return std::nullopt;
}

void WslcSandboxBackend::forget(const std::string& name) {
  std::lock_guard guard(state_mutex_);
  for (auto it = acquired_.begin(); it != acquired_.end();) {
    it->second.second.erase(name);
    it = it->second.second.empty() ? acquired_.erase(it) : std::next(it);
  }
}

awaitable<WslcOutcome> WslcSandboxBackend::lifecycle(std::vector<std::string> args) {
  WslcCall call;
  const std::string verb = args.size() >= 2 ? args[0] + " " + args[1] : args.at(0);
  call.args = std::move(args);
  call.timeout = config_.command_timeout();
  co_return co_await run_lifecycle(*runner_, std::move(call), verb);
}

awaitable<void> WslcSandboxBackend::check_version() {
  if (version_checked_) co_return;
  // GCC 12 mis-destroys temporaries built inside a co_await expression: every argument
  // that crosses a co_await is a named local in this backend.
  auto args = version_args();
  WslcOutcome r = co_await lifecycle(std::move(args));
  const auto version = parse_wslc_version(r.stdout_bytes);
  if (r.exit_code != 0 || !version)
    throw WslcBackendUnavailable(said("'") + config_.wslc_path + " version' gave no version (exit " +
                                 std::to_string(r.exit_code) + "): " + r.stdout_bytes + r.stderr_bytes);
  if (*version < kMinimumWslcVersion)
    throw WslcBackendUnavailable(said("wslc ") + version_text(*version) + " is below the floor " +
                                 version_text(kMinimumWslcVersion) +
                                 " (2.9.3 lacks container cp); update WSL with `wsl --update`");
  version_checked_ = true;
}

awaitable<std::vector<ListedContainer>> WslcSandboxBackend::list(const ListSelector& selector) {
  WslcCall call;
  call.args = list_args(selector);
  call.timeout = config_.command_timeout();
  call.max_stdout = std::size_t{16} << 20;
  WslcOutcome r = co_await run_lifecycle(*runner_, std::move(call), "container list");
  if (!r.ok()) raise_wslc_failure("wslc container list", r.exit_code, r.stderr_bytes);
  co_return parse_container_list(r.stdout_bytes);
}

awaitable<bool> WslcSandboxBackend::start(const std::string& name) {
  auto args = start_args(name);
  WslcOutcome r = co_await lifecycle(std::move(args));
  if (r.exit_code == 0) co_return true;
  logger()->warn("backend 'wslc': starting stopped container {} failed: {}", name, r.stderr_bytes);
  co_return false;
}

awaitable<void> WslcSandboxBackend::create(const std::string& name, const SandboxKey& key, const SandboxSpec& spec,
                                           const std::string& image, bool proxied) {
  const LabelList labels = detail::resource_labels(key, spec);
  // W-32 (5): behind the proxy the workload gets N-net and the proxy's address, nothing else.
  const std::string network = proxied ? name + "-net" : "none";
  const LabelList env = proxied ? detail::proxy_env(name, egress_proxy::spec_has_rules(spec)) : LabelList{};
  // LIM-5: the spec's CPU bound over the configuration's. The LIMITS broken double applies
  // the configuration's alone.
  const std::optional<double> spec_cpus =
      config_.test_only_unapplied_resource_bounds ? std::nullopt : spec.resources().cpus();
  const std::optional<double> cpus = spec_cpus ? spec_cpus : config_.cpus;
  const std::string what = "wslc container run of " + name + " from image '" + image + "' for kind '" + spec.kind() + "'";
  // W-17, issue 54: another process created it first — adopt it. The engine reserves a name
  // before it lists the container (and its creator starts it after the create), so a lost
  // race is asked again, bounded as one lifecycle call: listed running → adopted; listed
  // stopped → started; not listed → the create is sent again (the name may have been freed).
  const auto deadline = std::chrono::steady_clock::now() + config_.command_timeout();
  for (;;) {
    auto args = run_args(name, labels, image, network, env, cpus);
    WslcOutcome r = co_await lifecycle(std::move(args));
    if (r.exit_code == 0) {
      logger()->info("backend 'wslc': created container {} for kind '{}' (thread '{}', agent '{}')", name, spec.kind(),
                     key.thread_id, key.agent_id);
      co_return;
    }
    if (find_symbol(r.stderr_bytes) != WslcSymbol::AlreadyExists) raise_wslc_failure(what, r.exit_code, r.stderr_bytes);
    const ListSelector running{.all = false, .name = name};
    const ListSelector any{.all = true, .name = name};
    auto now_running = co_await list(running);
    if (find_exact(now_running, name)) co_return;
    auto present = co_await list(any);
    if (find_exact(present, name) && co_await start(name)) co_return;
    if (std::chrono::steady_clock::now() >= deadline)
      raise_wslc_failure(what + " (name taken, and adopting it failed)", r.exit_code, r.stderr_bytes);
    co_await support::sleep_for(std::chrono::milliseconds(50));
  }
}

awaitable<std::shared_ptr<Sandbox>> WslcSandboxBackend::do_acquire(SandboxKey key, SandboxSpec spec,
                                                                  AcquirePlan plan) {
  // The core has refused what the declarations do not serve (ACQ-1: capabilities, egress
  // mode, resource bounds — LIM-3 — …) and a work_dir that is not an absolute, normalised
  // POSIX path (ACQ-2), and holds this identity's acquire lock (ACQ-3, W-13). What is left
  // here is wslc's own, before any wslc call.
  const std::string image = spec.image_id().value_or(spec.image().value_or(config_.image.value_or("")));
  if (image.empty())
    throw ValueError(said("workload kind '") + spec.kind() +
                     "' names no image (set spec.image, spec.image_id or the backend's `image`)");
  // W-4, W-31: CLOSED and an empty allowlist run closed; hosts need the proxy; never
  // UNRESTRICTED. The declarations say exactly that (ALLOWLIST only with a proxy image), so
  // ACQ-1 has refused every other egress before this runs: no second refusal here.
  const bool proxied = behind_proxy(spec);
  const std::vector<std::string> allow_hosts = proxied ? detail::allow_identities(spec) : std::vector<std::string>{};
  // ACQ-2 settled the base, "/" refused with every backend's (W-10 names the base).
  const std::string& base = plan.storage_base;
  support::sandbox_labels(key, spec.kind(), spec.labels());  // refuses a bad label key (W-11) now
  // W-13 is the core's ACQ-3 lock, per (key, kind): every field the name hashes beyond those
  // (allowlist hosts, base, bounds) only splits one identity into several containers, so
  // one container's get-or-create is still never run twice at once in this process.
  const std::string name = container_name(key, spec.kind(), base, allow_hosts, spec.resources());
  co_await check_version();

  // W-14, W-15: running -> reuse; stopped -> start, else remove and create; missing -> create.
  const ListedContainer* entry = nullptr;
  const ListSelector running_probe{.all = false, .name = name};
  const ListSelector any_probe{.all = true, .name = name};
  auto running = co_await list(running_probe);
  entry = find_exact(running, name);
  std::vector<ListedContainer> listed;
  bool stopped = false;
  if (!entry) {
    listed = co_await list(any_probe);
    stopped = find_exact(listed, name) != nullptr;
  }
  // W-32: on every allowlisting acquire (create, restart and reuse) the proxy is replaced,
  // so its allowlist is this spec's, before the workload is created or started.
  const bool fresh = !entry && !stopped;
  std::optional<std::string> egress_ca;
  if (proxied) egress_ca = co_await ensure_egress(name, key, spec, fresh);
  if (entry) {
    logger()->info("backend 'wslc': reusing container {} for kind '{}' (thread '{}', agent '{}')", name, spec.kind(),
                   key.thread_id, key.agent_id);
  } else {
    if (stopped && co_await start(name)) {
      logger()->info("backend 'wslc': restarted container {} for kind '{}' (thread '{}', agent '{}')", name,
                     spec.kind(), key.thread_id, key.agent_id);
    } else {
      if (stopped) co_await remove(name);
      std::exception_ptr failure;
      try {
        co_await create(name, key, spec, image, proxied);
      } catch (const Error&) {
        failure = std::current_exception();
      }
      if (failure) {
        // No co_await inside a handler (C++20): the fresh scaffolding goes here, then the
        // create's own error leaves.
        if (proxied && fresh) co_await remove_egress(name, /*with_network=*/true);
        std::rethrow_exception(failure);
      }
    }
    running = co_await list(running_probe);
    entry = find_exact(running, name);
    if (!entry)
      throw WslcCommandFailed(said("container ") + name + " for workload kind '" + spec.kind() +
                                  "' is not running after create or start",
                              "", "");
  }
  remember(key, name);
  // W-44: each acquire's proxy made a new CA; the workload trusts this one.
  if (egress_ca) co_await install_egress_ca(name, spec, *egress_ca);
  // W-18: the core walks the base next (ACQ-4), one engine stat per component through the
  // sandbox's do_lstat, and its do_prepare_storage_base makes what is missing.

  detail::WslcSandboxParts parts;
  parts.runner = runner_;
  parts.container = name;
  parts.kind = spec.kind();
  parts.instance_id = entry->id.empty() ? name : entry->id;
  parts.storage_base = base;
  parts.capabilities = declarations_.capabilities;
  parts.command_timeout = config_.command_timeout();
  co_return std::make_shared<detail::WslcSandbox>(std::move(parts));
}

}  // namespace maf::sandbox::wslc
