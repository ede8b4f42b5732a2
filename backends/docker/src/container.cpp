// The container of an acquire (D-10, D-11, D-30): the OS re-check before a create or
// restart, a frozen leftover's recovery, and create / adopt / start.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>

#include "egress_topology.hpp"
#include "freeze.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/sleep.hpp"
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
  // A frozen container (D-11): a live holder's freeze — another process's, on this host or
  // elsewhere — is waited for; a dead holder's is lifted (freeze.hpp, issue 54). Never a
  // live claim's: under the slot's mutex this process holds none.
  auto slot = detail::freeze_slot(co_await transport_->endpoint(), container);
  co_await detail::await_unfrozen(*transport_, *slot, container);
}

awaitable<bool> DockerSandboxBackend::adopt_container(const std::string& container, const SandboxSpec& spec,
                                                      const SandboxKey& key,
                                                      std::chrono::steady_clock::time_point deadline) {
  constexpr auto kPoll = std::chrono::milliseconds(50);
  for (;;) {
    const auto doc = co_await transport_->inspect_container(container);
    if (!doc) {
      // The engine reserves a name before it registers the container: the winner's create
      // is still in flight, or it failed and freed the name. Asking to create again tells.
      if (std::chrono::steady_clock::now() >= deadline)
        throw OSError(said("the name of container " + container + " stayed in use by no container the engine shows for " +
                           std::to_string(config_.command_timeout().count()) + " ms; workload kind '" + spec.kind() +
                           "' was not created"));
      co_await support::sleep_for(kPoll);
      co_return false;
    }
    std::string status;
    try {
      const auto j = nlohmann::json::parse(*doc);
      const auto labels = j.value("/Config/Labels"_json_pointer, nlohmann::json::object());
      // The name is derived from the key and kind (D-7), so a holder of the name that is
      // not this key's and kind's is no sandbox of ours to hand out.
      for (const auto& [label, value] : support::key_selector(key, spec.kind())) {
        const std::string found = labels.is_object() ? labels.value(label, std::string("(absent)")) : "(absent)";
        if (found != value)
          throw OSError(said("container " + container + " holds the name of workload kind '" + spec.kind() +
                             "' but its label " + label + " is '" + found + "', not '" + value +
                             "'; it is not adopted"));
      }
      status = j.value("/State/Status"_json_pointer, std::string());
    } catch (const nlohmann::json::exception& e) {
      throw OSError(said("unreadable inspect of container " + container + ": " + e.what()));
    }
    // Running or paused (its creator's freeze around the work directory): the acquire
    // waits out a freeze before it hands the container out (do_acquire).
    if (status == "running" || status == "paused") co_return true;
    const bool late = std::chrono::steady_clock::now() >= deadline;
    if (status == "exited" || status == "dead" || (status == "created" && late)) {
      // Its creator's start failed, or it died between create and start: start it here.
      std::string detail;
      if (co_await transport_->start(container, detail)) co_return true;
      throw OSError(said("could not start adopted container " + container + " of workload kind '" + spec.kind() +
                         "': " + detail));
    }
    if (late)
      throw OSError(said("adopted container " + container + " of workload kind '" + spec.kind() + "' stayed '" +
                         status + "' for " + std::to_string(config_.command_timeout().count()) + " ms"));
    // created (its creator is preparing it, issue 24, or about to start it), restarting,
    // removing: asked again.
    co_await support::sleep_for(kPoll);
  }
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
    request.env = detail::workload_proxy_env(container, detail::spec_terminates(spec));
    // Issue 46: the placeholders (CRED-6) — never a value.
    std::lock_guard lock(credential_env_mutex_);
    if (auto it = credential_env_.find(container); it != credential_env_.end())
      request.env.insert(request.env.end(), it->second.begin(), it->second.end());
  }
  // Issue 54: a create that loses the name race to another process adopts the winner's
  // container; one that finds the name freed again creates again. Bounded as one lifecycle call.
  const auto deadline = std::chrono::steady_clock::now() + config_.command_timeout();
  for (;;) {
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
    if (created.outcome != CreateOutcome::NameInUse)
      throw OSError(said("creating container " + container + " from image '" + image +
                         "' for workload kind '" + spec.kind() + "' failed: " + created.detail));
    // Another process created it first: adopt (D-10). Not fresh: that process may already
    // have run commands in it.
    if (co_await adopt_container(container, spec, key, deadline)) {
      logger()->info("backend 'docker': container {} of kind '{}' was created by another process; adopted it",
                     container, spec.kind());
      co_return false;
    }
  }
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
