// The container of an acquire (D-10, D-11, D-30): the OS re-check before a create or
// restart, a frozen leftover's recovery, and create / adopt / start.
#include <spdlog/spdlog.h>

#include "egress_topology.hpp"
#include "freeze.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "said.hpp"

namespace maf::sandbox::docker {

using boost::asio::awaitable;

awaitable<void> DockerSandboxBackend::check_os_family(const SandboxSpec& spec) {
  if (!os_checked_) co_return;  // the plain constructor never asks (docs/backends/docker.md "OS family")
  const std::string os = co_await transport_->server_os();
  const OsFamilySet now = os == "linux" ? OsFamilySet{OsFamily::Posix} : OsFamilySet{};
  if (now != declarations_.os_families)
    throw SandboxOsFamilyNotSupported(said("the daemon reports OS '" + os +
                                           "', which does not match the os_families this backend declared (" +
                                           declarations_.os_families.to_string("none") +
                                           "); refusing to create a container for workload kind '" + spec.kind() + "'"));
}

awaitable<void> DockerSandboxBackend::recover_paused(const std::string& container) {
  // A container a dead host left frozen (D-11). Under the freeze slot's
  // mutex no live claim of this process can exist, so unpausing cannot lift a live freeze.
  auto slot = detail::freeze_slot(co_await transport_->endpoint(), container);
  auto hold = co_await slot->mutex.scoped();
  auto state = co_await transport_->container_state(container);
  if (state && state->paused) {
    try {
      co_await transport_->unpause(container);
    } catch (const Error& e) {
      throw OSError(said("container " + container +
                         " was left paused and could not be recovered; refusing to hand it out: " + e.what()));
    }
  }
  slot->possibly_frozen = false;
}

awaitable<bool> DockerSandboxBackend::create_container(const std::string& container, const SandboxSpec& spec,
                                                       const std::string& image, const SandboxKey& key,
                                                       const AcquirePlan& plan) {
  co_await ensure_image(image, spec);
  CreateRequest request;
  request.name = container;
  request.image = image;
  for (auto& [label, value] : support::key_selector(key, spec.kind())) request.labels.emplace_back(label, value);
  for (auto& [label, value] : support::sandbox_labels(key, spec.kind(), spec.labels()))
    if (label.rfind(support::kLabelUserPrefix, 0) == 0) request.labels.emplace_back(label, value);
  // LIM-5: the spec's bounds over the configuration's (both transports map these three:
  // --pids-limit/--memory/--cpus, HostConfig PidsLimit/Memory/NanoCpus).
  const ResourceLimits asked = config_.test_only_unapplied_resource_bounds ? ResourceLimits{} : spec.resources();
  request.pids_limit = asked.processes() ? static_cast<int>(*asked.processes()) : config_.pids_limit;
  request.cap_drop_all = config_.cap_drop_all;
  request.cap_drop = detail::workload_cap_drop();
  request.init = config_.init;
  request.memory = asked.memory_bytes() ? std::optional<std::string>(std::to_string(*asked.memory_bytes())) : config_.memory;
  request.cpus = asked.cpus() ? std::optional<std::string>(format_cpus(*asked.cpus())) : config_.cpus_argument();
  // LIM-7: the lifetime bound rides on the container, so any host's acquire or reap reads it.
  if (asked.ttl()) request.labels.emplace_back(support::kLabelTtl, std::to_string(asked.ttl()->count()));
  if (detail::behind_proxy(config_, *transport_, spec)) {
    // Only N, and the proxy variables; enforcement is the topology, not the variables.
    request.network = container + "-net";
    request.env = detail::workload_proxy_env(container, detail::spec_has_rules(spec));
  }
  CreateResult created;
  if (transport_->creates_unstarted()) {
    // Issue 24: create, then (for an image whose facts are known) the work directory while
    // nothing runs in the container, then start — what create_and_start does, with the
    // upload between its two exchanges instead of under a freeze after them.
    created = co_await transport_->create_unstarted(request);
    if (created.outcome == CreateOutcome::Created) {
      co_await prepare_before_start(container, spec, plan);
      std::string detail;
      const StartOutcome started = co_await transport_->start_created(container, detail);
      // Like `docker run -d`, a failed start leaves the created container (the next acquire
      // starts or recreates it).
      if (started == StartOutcome::Failed)
        throw OSError(said("creating container " + container + " from image '" + image +
                           "' for workload kind '" + spec.kind() + "' failed: " + detail));
      // Someone else started it first (another process adopting the name): commands may have
      // run in it, so it is not fresh — probed by its own ID, its work directory checked
      // and created under the freeze as for any container.
      co_return started == StartOutcome::Started;
    }
  } else {
    created = co_await transport_->create_and_start(request);
  }
  if (created.outcome == CreateOutcome::Created) co_return true;
  if (created.outcome == CreateOutcome::NameInUse) {
    // Another process created it first: adopt (D-10). Not fresh: that
    // process may already have run commands in it.
    auto state = co_await transport_->container_state(container);
    if (state && state->running && !state->paused) co_return false;
    if (state) {
      std::string detail;
      if (co_await transport_->start(container, detail)) co_return false;
      throw OSError(said("could not start adopted container " + container + ": " + detail));
    }
  }
  throw OSError(said("creating container " + container + " from image '" + image +
                     "' for workload kind '" + spec.kind() + "' failed: " + created.detail));
}

awaitable<bool> DockerSandboxBackend::ensure_running(const std::string& container, const SandboxSpec& spec,
                                                     const std::string& image, const SandboxKey& key,
                                                     const AcquirePlan& plan,
                                                     const std::optional<ContainerState>& state) {
  // `state` is the acquire's own read, made under the identity lock just before (issue 24:
  // this inspected a second time). Another process may have acted since, as it may after
  // any read: creation meets it by NameInUse (adopt), a start by its 304.
  if (state && !state->running) {
    std::string detail;
    if (co_await transport_->start(container, detail)) co_return false;
    logger()->warn("backend 'docker': starting stopped container {} failed ({}); recreating it", container, detail);
    co_await transport_->remove_container(container);
  } else if (state) {
    co_return false;
  }
  co_return co_await create_container(container, spec, image, key, plan);
}

}  // namespace maf::sandbox::docker
