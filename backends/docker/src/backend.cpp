// DockerSandboxBackend: declarations, construction, and the engine work of an acquire
// (do_acquire; docs/backends/docker.md "Acquire, step by step"). The rooms it calls on:
// image.cpp (D-9), container.cpp (D-10, D-11, D-30), probes.cpp (D-24), guest_user.cpp
// (D-25), work_dir.cpp (D-14; the core's walk, ACQ-4, ends in DockerSandbox's hook);
// disposal.cpp, reap.cpp and lifetime.cpp over teardown.hpp (D-26…D-28, LIM-7).
#include "maf/sandbox/docker/backend.hpp"

#include <spdlog/spdlog.h>

#include "docker_sandbox.hpp"
#include "egress_observers.hpp"
#include "egress_topology.hpp"
#include "live_egress.hpp"
#include "freeze.hpp"
#include "maf/sandbox/docker/api_transport.hpp"
#include "maf/sandbox/docker/cli_transport.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "memory.hpp"
#include "said.hpp"

namespace maf::sandbox::docker {

using boost::asio::awaitable;

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

BackendDeclarations base_declarations() {
  BackendDeclarations d;
  // Reclaim: the core's rm -rf over `docker exec` as the container's own user, proven by the
  // CLEANUP suite on a real engine (both transports). No Snapshot: a reset costs more than a
  // cold acquire (docs/backends/docker.md "SNAPSHOT, measured").
  d.capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::FilesDelete,
                                 Capability::HostTools, Capability::Reclaim};
  // Background: proven by the BACKGROUND suite on a real engine, both transports (docs/background.md BG-9).
  d.capabilities.insert(Capability::Background);
  // ExecStream (docs/streaming.md, docker.md "Streaming exec"): both transports read the
  // exec's output as it comes and stop the program's group in the guest on every ending but
  // its own exit; proven on a real engine by test_docker_stream (each transport).
  d.capabilities.insert(Capability::ExecStream);
  // ExecEnv, ExecStdin (docs/exec-input.md ENV-4, STDIN-4): the Engine API's Env and attached
  // stdin, the CLI's --env-file descriptor and -i; proven by EXEC_ENV and EXEC_STDIN on a real
  // engine by test_docker_exec_input (each transport).
  d.capabilities.insert(Capability::ExecEnv);
  d.capabilities.insert(Capability::ExecStdin);
  // Pause (issue 49, docs/backends/docker.md "Snapshots and pause"): the freeze every tar-plane
  // call already needs (`docker pause`), held from pause() to resume().
  d.capabilities.insert(Capability::Pause);
  // ExecStdinStream (STDIN-6): the CLI's `-i` on the stream's pipe, the API's hijacked
  // connection fed from it; proven by EXEC_STDIN's SI-6…SI-8 in test_docker_exec_input.
  d.capabilities.insert(Capability::ExecStdinStream);
  // "Declarations": 64 MiB per file, 256 MiB total, 256 files, in each direction.
  const TransferLimits limits{64 * kMiB, 256 * kMiB, 256};
  d.limits = SandboxLimits{limits, limits};
  d.egress_modes = EgressSet{Egress::Closed};
  d.isolation_scopes = IsolationScopeSet{IsolationScope::Conversation, IsolationScope::Call};
  // LIM-3: the engine's own cgroup limits, set at create on both transports and proven by the
  // LIMITS suite on a real engine. The ttl is kept from the engine's own record (the
  // container's Created, its ttl label); no idle timeout: the engine records no last use
  // that every host sees and the guest cannot forge (docs/limits.md "Decisions").
  d.resource_bounds =
      ResourceBoundSet{ResourceBound::Memory, ResourceBound::Cpus, ResourceBound::Processes, ResourceBound::Ttl};
  return d;
}

}  // namespace

DockerSandboxBackend::DockerSandboxBackend(DockerConfig config, std::shared_ptr<DockerTransport> transport)
    : config_(std::move(config)),
      transport_choice_(transport ? TransportChoice{config_.transport, "injected by the host"}
                                  : choose_transport(config_)),
      transport_(transport ? std::move(transport) : make_transport(config_, transport_choice_.kind)),
      declarations_(base_declarations()),
      memory_(std::make_shared<detail::DockerMemory>()) {
  if (config_.transport == DockerTransportKind::Auto && !transport)
    logger()->info("backend 'docker': the {} transport ({})", to_string(transport_choice_.kind),
                   transport_choice_.reason);
  // D-5: ALLOWLIST iff a proxy image is configured — and the transport can build
  // the topology (both shipped transports can; a test double may not).
  if (config_.egress_proxy_image && transport_->has_egress_plane()) declarations_.egress_modes.insert(Egress::Allowlist);
  // Issue 45: method/path rules only with a proxy image that terminates TLS. Without an
  // engine call the configuration says so (checked on the image at every acquire); create()
  // reads the image's features label instead.
  if (config_.egress_proxy_terminates && declarations_.egress_modes.contains(Egress::Allowlist)) {
    declarations_.capabilities.insert(Capability::EgressMethods);
    declarations_.capabilities.insert(Capability::EgressPaths);
    // Issue 46: the configuration's word; the image's feature label is checked at acquire.
    declarations_.capabilities.insert(Capability::AttachedIdentity);
  }
  // Issue 49: SNAPSHOT at work_tree fidelity only when configured (every acquire then keeps
  // its RESET tree); `memory` is never declared (docs/backends/docker.md "Snapshots and pause").
  memory_->snapshots.configure(config_.snapshot_budget_bytes, config_.snapshot_ttl);
  if (config_.snapshots) {
    declarations_.capabilities.insert(Capability::Snapshot);
    declarations_.snapshot_fidelity = detail::kDockerSnapshotFidelity;
  }
  // The proxy's decisions reach the router's observers too (docs/observability.md).
  config_.egress_observer = detail::with_core_observers(std::move(config_.egress_observer), observer_hub());
}

std::vector<std::pair<std::string, std::string>> DockerSandboxBackend::facts() const {
  const bool injected = transport_choice_.reason == "injected by the host";
  return {{"transport", injected ? "injected" : to_string(transport_choice_.kind)},
          {"transport_reason", transport_choice_.reason}};
}

awaitable<std::shared_ptr<DockerSandboxBackend>> DockerSandboxBackend::create(DockerConfig config,
                                                                              std::shared_ptr<DockerTransport> transport) {
  auto backend = std::make_shared<DockerSandboxBackend>(std::move(config), std::move(transport));
  co_await backend->transport_->endpoint();  // binds now; a failed binding propagates (D-29)
  std::string os;
  try {
    os = co_await backend->transport_->server_os();
  } catch (const Error& e) {
    logger()->warn("backend 'docker': could not ask the daemon its OS ({}); declaring no os_families", e.what());
  }
  // windows declares nothing: every guest path here is POSIX (D-30).
  if (os == "linux") backend->declarations_.os_families = OsFamilySet{OsFamily::Posix};
  backend->os_checked_ = true;
  if (backend->declarations_.egress_modes.contains(Egress::Allowlist) &&
      co_await detail::proxy_image_terminates(*backend->transport_, backend->config_)) {
    backend->declarations_.capabilities.insert(Capability::EgressMethods);
    backend->declarations_.capabilities.insert(Capability::EgressPaths);
    // Issue 46: ATTACHED_IDENTITY only for a proxy image that lists brokered credentials.
    const auto labels = co_await backend->transport_->image_labels(*backend->config_.egress_proxy_image);
    if (labels && detail::labels_list_feature(*labels, detail::kBrokerFeature))
      backend->declarations_.capabilities.insert(Capability::AttachedIdentity);
  }
  co_return backend;
}

std::shared_ptr<DockerSandboxBackend> DockerSandboxBackend::deferred(DockerConfig config,
                                                                    std::shared_ptr<DockerTransport> transport) {
  auto backend = std::make_shared<DockerSandboxBackend>(std::move(config), std::move(transport));
  backend->declarations_.os_families = OsFamilySet{OsFamily::Posix};
  backend->os_checked_ = true;  // the claim is checked against the daemon at each cold acquire
  return backend;
}

std::string DockerSandboxBackend::container_name(const SandboxKey& key, const std::string& kind) {
  // The CLOSED name; an ALLOWLIST sandbox behind the proxy also folds its hosts in
  // (D-7, acquire).
  return support::sandbox_name(kContainerPrefix, key, kind);
}

awaitable<std::shared_ptr<Sandbox>> DockerSandboxBackend::do_acquire(SandboxKey key, SandboxSpec spec, AcquirePlan plan) {
  // 1. Preconditions, before any engine call.
  const std::string image = spec.image_id().value_or(spec.image().value_or(""));
  if (image.empty())
    throw ValueError(said("workload kind '" + spec.kind() +
                          "' names no image (set spec.image or spec.image_id)"));
  const bool proxied = detail::behind_proxy(config_, *transport_, spec);
  // ACQ-1 has refused an egress mode the declarations lack (unrestricted is never declared:
  // docs/backends/docker.md "egress_modes"); this is what only the configuration can tell
  // (an allowlist needs the proxy image and an egress plane).
  if (spec.egress() == Egress::Allowlist && !spec.egress_allow().empty() && !proxied)
    throw SandboxEgressNotEnforced("backend 'docker' cannot enforce the 'allowlist' egress workload kind '" +
                                   spec.kind() + "' asks for (" +
                                   (declarations_.egress_modes.contains(Egress::Allowlist)
                                        ? "it enforces closed and allowlist"
                                        : "it enforces closed; allowlist needs egress_proxy_image") +
                                   ")");
  // C-55: the allowlist is part of the identity, so a changed policy is another sandbox.
  support::NameQualifiers qualifiers;
  if (proxied)
    for (const auto& entry : spec.egress_allow()) qualifiers.egress_allow.push_back(detail::entry_identity(entry));
  // Issue 46: so are the credentials (a placeholder is fixed when the workload is created).
  for (const auto& c : spec.attached_identity())
    qualifiers.egress_allow.push_back("credential " + c.name() + " env=" + c.env() + " " + c.header() + ": " +
                                      c.format() + " hosts=" + detail::join_hosts(c.hosts()) +
                                      (c.allow_http() ? " http" : ""));
  // LIM-5: so are the resource bounds (a container's limits are fixed when it is created).
  if (!spec.resources().empty()) qualifiers.resources = spec.resources().to_string();
  const std::string container = support::sandbox_name(kContainerPrefix, key, spec.kind(), qualifiers);

  // ACQ-3 serialises this identity inside the process; other processes are met by adoption
  // (create_container) and their freezes waited out (recover_paused; issue 54).
  // 2-3. State; a paused container reports Running too, so Running alone is not usable.
  auto freeze = detail::freeze_slot(co_await transport_->endpoint(), container);
  auto state = co_await transport_->container_state(container);
  if (state && (state->paused || freeze->possibly_frozen || freeze->pause_held)) {  // issue 49: held pause
    co_await recover_paused(container);
    state = co_await transport_->container_state(container);
  }
  // LIM-7: a container past its ttl is disposed, never handed out; a fresh one follows. A
  // disposal that fails fails the acquire.
  if (state && spec.resources().ttl() && co_await past_ttl(container)) {
    logger()->info("backend 'docker': disposing container {} of kind '{}': past its ttl of {} s", container,
                   spec.kind(), spec.resources().ttl()->count());
    if (auto failure = co_await remove_workload(container, key))
      throw OSError(said("container " + container + " of workload kind '" + spec.kind() +
                         "' is past its ttl and could not be disposed, so it is not handed out: " + failure->to_string()));
    state.reset();
  }
  const bool warm = state && state->running && !state->paused;
  if (!warm) co_await check_os_family(spec);  // 4. cold: create or restart
  // 5. Egress scaffolding, re-ensured on every acquire, warm reuse included.
  std::optional<std::string> egress_ca;  // the per-sandbox CA, when the spec has rules or credentials
  // Issue 46 (CRED-6, CRED-7): a placeholder per credential — the workload's own when it
  // exists, new ones for a new workload — and the values from the host's source, which go to
  // the proxy only.
  detail::Brokering brokering;
  if (proxied && !spec.attached_identity().empty()) {
    if (state) {
      const auto doc = co_await transport_->inspect_container(container);
      brokering.placeholders = detail::placeholders_in_inspect(spec, doc.value_or("{}"));
    } else {
      for (const auto& c : spec.attached_identity()) brokering.placeholders.push_back(detail::new_placeholder(c.name()));
    }
    brokering.values = supply_credentials(key, spec);
    std::lock_guard lock(credential_env_mutex_);
    credential_env_[container] = detail::credential_env(spec, brokering.placeholders);
  }
  // EGU-7: a proxy image with the control channel gets it, so the sandbox can change live.
  const bool live_policy = proxied && co_await detail::proxy_image_live(*transport_, config_);
  if (proxied)
    egress_ca = co_await detail::ensure_egress_topology(*transport_, config_, container, key, spec, !state.has_value(),
                                                        brokering, live_policy);
  brokering.values.clear();  // wiped (SecretValue): the proxy holds them now
  bool fresh = false;  // created by this acquire: nothing but the image has run in it
  if (warm) {
    logger()->info("backend 'docker': reusing running container {} for kind '{}'", container, spec.kind());
  } else {
    fresh = co_await ensure_running(container, spec, image, key, plan, state);
    state = co_await transport_->container_state(container);
    // Adopted mid-freeze: its creator (or another replica) prepares its work directory
    // under a freeze; waited out, never lifted while its holder lives (issue 54). Paused
    // again by the time it is read, it is another replica's live freeze: the container runs,
    // and every call below waits such a freeze out (freeze.hpp).
    if (state && state->paused) {
      co_await recover_paused(container);
      state = co_await transport_->container_state(container);
    }
    if (!state || !state->running)
      throw OSError(said("container " + container + " for workload kind '" + spec.kind() +
                         "' is not running after start (status '" + (state ? state->status : "absent") + "')"));
  }
  memory_->remember(key, container);
  {
    std::lock_guard lock(credential_env_mutex_);
    credential_env_.erase(container);  // created by now, or never will be by this acquire
  }
  if (egress_ca) co_await detail::install_egress_ca(*transport_, container, *egress_ca);  // a new CA per proxy

  // 7. Probes and the image user; the work directory follows, walked by the core (ACQ-4)
  // and prepared by the sandbox (do_prepare_storage_base), in that order.
  const std::string fresh_image = fresh ? state->image_id : std::string();
  co_await run_probes(container, state->id, fresh_image, spec, image);
  detail::GuestUser user{0, 0, false};
  if (plan.uses_storage_base) user = co_await resolve_guest_user(container, state->id, fresh_image, spec);

  detail::DockerSandboxParts parts;
  parts.transport = transport_;
  parts.freeze = freeze;
  parts.container = container;
  parts.kind = spec.kind();
  parts.container_id = state->id;
  parts.storage_base = plan.storage_base;
  parts.capabilities = declarations_.capabilities;
  parts.uid = user.uid;
  parts.gid = user.gid;
  parts.cap_drop_all = config_.cap_drop_all;
  parts.max_exec_output_bytes = config_.max_exec_output_bytes;
  parts.command_timeout = config_.command_timeout();
  parts.watch_oom_kills = spec.resources().memory_bytes().has_value();
  parts.config = std::make_shared<const DockerConfig>(config_);
  parts.key = key;
  parts.memory = memory_;
  parts.fresh_image = fresh_image;
  parts.live_egress_refusal =
      !proxied       ? "it runs behind no egress proxy (egress '" + std::string(to_string(spec.egress())) + "')"
      : !live_policy ? "proxy image '" + config_.egress_proxy_image.value_or("") + "' does not list the feature " +
                           detail::kLivePolicyFeature + " (rebuild it with scripts/egress-proxy-image)"
      : !spec.attached_identity().empty()
          ? "it brokers credential '" + spec.attached_identity().front().name() + "', whose hosts are fixed for its life"
          : std::string();
  parts.hub = observer_hub();
  parts.keeps_reset_tree = config_.snapshots;
  co_return std::make_shared<detail::DockerSandbox>(std::move(parts));
}

}  // namespace maf::sandbox::docker
