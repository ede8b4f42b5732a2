// DockerSandboxBackend: declarations, create(), and acquire's get-or-create (D-5, D-9…D-11,
// D-24, D-25, D-30). Disposal and reap live in disposal.cpp.
#include "maf/sandbox/docker/backend.hpp"

#include <algorithm>
#include <random>
#include <sstream>

#include <spdlog/spdlog.h>

#include "maf/sandbox/support/async_mutex.hpp"
#include "docker_sandbox.hpp"
#include "egress_observers.hpp"
#include "freeze.hpp"
#include "maf/sandbox/docker/api_transport.hpp"
#include "maf/sandbox/docker/cli_transport.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "egress_topology.hpp"
#include "tar_plane.hpp"

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

bool is_number(const std::string& s) {
  return !s.empty() && s.size() <= 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(field);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

/// The passwd line for `name` (by name) or for `uid` (by number): {uid, primary gid}.
std::optional<std::pair<long long, long long>> passwd_lookup(const std::string& text, const std::string& user,
                                                             bool by_uid) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = split(line, ':');
    if (f.size() < 4 || !is_number(f[2]) || !is_number(f[3])) continue;
    if ((by_uid ? f[2] : f[0]) == user) return std::pair{std::stoll(f[2]), std::stoll(f[3])};
  }
  return std::nullopt;
}

std::optional<long long> group_lookup(const std::string& text, const std::string& group) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = split(line, ':');
    if (f.size() >= 3 && f[0] == group && is_number(f[2])) return std::stoll(f[2]);
  }
  return std::nullopt;
}

std::string random_hex() {
  std::random_device rd;
  std::ostringstream out;
  out << std::hex;
  for (int i = 0; i < 4; ++i) out << rd();
  return out.str();
}

bool needs_work_dir(const SandboxSpec& spec) {
  const auto r = spec.requires_capabilities();
  return r.contains(Capability::Exec) || r.contains(Capability::FilesIn) || r.contains(Capability::FilesOut) ||
         r.contains(Capability::FilesList) || r.contains(Capability::FilesDelete);
}

/// The work directory's one tar (D-14) for the missing suffix chain[first_missing..]: intermediate directories
/// root's, the base the image user's, all 0755.
std::string work_dir_tar(const std::vector<std::string>& chain, std::size_t first_missing, long long uid,
                         long long gid) {
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  support::TarWriter tar;
  for (std::size_t i = first_missing; i < chain.size(); ++i) {
    const bool is_base = i + 1 == chain.size();
    tar.add_directory(chain[i].substr(1), {.mode = 0755, .uid = static_cast<std::uint64_t>(is_base ? uid : 0),
                                           .gid = static_cast<std::uint64_t>(is_base ? gid : 0), .mtime = now});
  }
  return std::move(tar).finish();
}

/// The probes a spec needs, by the names run_probes caches them under (D-24).
std::vector<std::string> probe_names(CapabilitySet needs) {
  std::vector<std::string> out;
  if (needs.contains(Capability::HostTools)) out.emplace_back("host-tools");
  else if (needs.contains(Capability::Exec) || needs.contains(Capability::ExecStream)) out.emplace_back("sh");
  if (needs.contains(Capability::FilesDelete)) out.emplace_back("rm");
  return out;
}

std::string capability_names(CapabilitySet set) {
  std::string out;
  for (Capability c : {Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::FilesDelete,
                       Capability::HostTools})
    if (set.contains(c)) out += (out.empty() ? "" : ", ") + std::string(to_string(c));
  return out;
}

}  // namespace

DockerSandboxBackend::DockerSandboxBackend(DockerConfig config, std::shared_ptr<DockerTransport> transport)
    : config_(std::move(config)),
      transport_choice_(transport ? TransportChoice{config_.transport, "injected by the host"}
                                  : choose_transport(config_)),
      transport_(transport ? std::move(transport) : make_transport(config_, transport_choice_.kind)),
      declarations_(base_declarations()) {
  if (config_.transport == DockerTransportKind::Auto && !transport)
    logger()->info("backend 'docker': the {} transport ({})", to_string(transport_choice_.kind),
                   transport_choice_.reason);
  // D-5: ALLOWLIST iff a proxy image is configured — and the transport can build
  // the topology (both shipped transports can; a test double may not).
  if (config_.egress_proxy_image && transport_->has_egress_plane()) declarations_.egress_modes.insert(Egress::Allowlist);
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

void DockerSandboxBackend::remember(const SandboxKey& key, const std::string& container) {
  std::lock_guard lock(state_mutex_);
  registry_[support::length_prefixed({key.scope, key.thread_id, key.agent_id, key.call_id})].insert(container);
}

std::vector<std::string> DockerSandboxBackend::remembered(const SandboxKey& key, bool forget) {
  std::lock_guard lock(state_mutex_);
  auto it = registry_.find(support::length_prefixed({key.scope, key.thread_id, key.agent_id, key.call_id}));
  if (it == registry_.end()) return {};
  std::vector<std::string> out(it->second.begin(), it->second.end());
  if (forget) registry_.erase(it);
  return out;
}

awaitable<void> DockerSandboxBackend::check_os_family(const SandboxSpec& spec) {
  if (!os_checked_) co_return;  // the plain constructor never asks (docs/backends/docker.md "OS family")
  const std::string os = co_await transport_->server_os();
  const OsFamilySet now = os == "linux" ? OsFamilySet{OsFamily::Posix} : OsFamilySet{};
  if (now != declarations_.os_families)
    throw SandboxOsFamilyNotSupported("backend 'docker': the daemon reports OS '" + os +
                                      "', which does not match the os_families this backend declared (" +
                                      declarations_.os_families.to_string("none") +
                                      "); refusing to create a container for workload kind '" + spec.kind() + "'");
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
      throw OSError("backend 'docker': container " + container +
                    " was left paused and could not be recovered; refusing to hand it out: " + e.what());
    }
  }
  slot->possibly_frozen = false;
}

awaitable<bool> DockerSandboxBackend::create_container(const std::string& container, const SandboxSpec& spec,
                                                       const std::string& image, const SandboxKey& key,
                                                       const std::string& base) {
  if (!co_await transport_->image_present(image)) {
    // Explicit pull under its own timeout; `run` never pulls (D-9).
    try {
      co_await transport_->pull_image(image);
    } catch (const Error& e) {
      throw OSError("backend 'docker': image '" + image + "' for workload kind '" + spec.kind() +
                    "' is not present locally and could not be pulled: " + e.what());
    }
  }
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
    request.env = detail::workload_proxy_env(container);
  }
  CreateResult created;
  if (transport_->creates_unstarted()) {
    // Issue 24: create, then (for an image whose facts are known) the work directory while
    // nothing runs in the container, then start — what create_and_start does, with the
    // upload between its two exchanges instead of under a freeze after them.
    created = co_await transport_->create_unstarted(request);
    if (created.outcome == CreateOutcome::Created) {
      co_await prepare_before_start(container, spec, base);
      std::string detail;
      const StartOutcome started = co_await transport_->start_created(container, detail);
      // Like `docker run -d`, a failed start leaves the created container (the next acquire
      // starts or recreates it).
      if (started == StartOutcome::Failed)
        throw OSError("backend 'docker': creating container " + container + " from image '" + image +
                      "' for workload kind '" + spec.kind() + "' failed: " + detail);
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
      throw OSError("backend 'docker': could not start adopted container " + container + ": " + detail);
    }
  }
  throw OSError("backend 'docker': creating container " + container + " from image '" + image +
                "' for workload kind '" + spec.kind() + "' failed: " + created.detail);
}

awaitable<bool> DockerSandboxBackend::ensure_running(const std::string& container, const SandboxSpec& spec,
                                                     const std::string& image, const SandboxKey& key,
                                                     const std::string& base,
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
  co_return co_await create_container(container, spec, image, key, base);
}

bool DockerSandboxBackend::probes_known_locked(const std::string& image_key, const SandboxSpec& spec) const {
  const auto passed = [&](const std::string& name) { return probes_passed_.contains({image_key, name}); };
  for (const auto& name : probe_names(spec.requires_capabilities()))
    if (!passed(name) && !(name == "sh" && passed("host-tools"))) return false;
  return true;
}

awaitable<void> DockerSandboxBackend::prepare_before_start(const std::string& container, const SandboxSpec& spec,
                                                           const std::string& base) {
  if (!needs_work_dir(spec) || base == "/") co_return;
  {
    // Nothing known for this base yet (the first fresh container): not even the inspect.
    std::lock_guard lock(state_mutex_);
    if (std::none_of(work_dir_suffix_.begin(), work_dir_suffix_.end(),
                     [&](const auto& fact) { return fact.first.second == base; }))
      co_return;
  }
  // [port decision] (issue 24) A created container runs nothing: no guest can swap a
  // component between a check and the upload, which is what the work directory's freeze guards
  // against, so the upload needs no freeze here — a stronger condition than one. It holds
  // exactly its image's files, so which components of `base` it has (real directories, the
  // rest missing) and its image user are what an earlier fresh container of the same image
  // ID showed (checked there under its freeze). Taken only when every probe the spec needs
  // passed for that image too, so the order of docs/backends/docker.md "Acquire, step by step" 7 (probes, identity, work directory)
  // has nothing left that could refuse before the directory exists. After the start the
  // acquire checks the chain again (prepare_work_dir): a base under a mount made at start
  // (/dev, /proc, …) is not seen there and is created under the freeze as before.
  auto state = co_await transport_->container_state(container);
  if (!state || state->image_id.empty()) co_return;
  const std::string image_key = "image:" + state->image_id;
  std::size_t first_missing = 0;
  GuestUser identity;
  {
    std::lock_guard lock(state_mutex_);
    auto suffix = work_dir_suffix_.find({state->image_id, base});
    auto known = guest_users_.find(image_key);
    if (suffix == work_dir_suffix_.end() || known == guest_users_.end() || !probes_known_locked(image_key, spec))
      co_return;
    first_missing = suffix->second;
    identity = known->second;
  }
  const auto chain = detail::cumulative_components(base);
  if (first_missing >= chain.size()) co_return;  // the image has it all
  std::string tar = work_dir_tar(chain, first_missing, identity.uid, identity.gid);
  co_await transport_->archive_put(container, "/", std::move(tar));
}

awaitable<void> DockerSandboxBackend::run_probes(const std::string& container, const std::string& id,
                                                 const std::string& fresh_image, const SandboxSpec& spec,
                                                 const std::string& image) {
  const auto needs = spec.requires_capabilities();
  struct Probe {
    const char* name;
    std::vector<std::string> argv;
  };
  std::vector<Probe> probes;
  const std::string scratch = "/.maf-command-probe-" + random_hex();
  if (needs.contains(Capability::HostTools))
    probes.push_back({"host-tools",
                      {"sh", "-c",
                       "mkdir -p / || exit 11\n"
                       "mv -f " + scratch + " " + scratch + "-to 2>/dev/null; [ $? -eq 1 ] || exit 12\n"
                       "nohup sh -c 'exit 0' </dev/null >/dev/null 2>&1 || exit 13\n"}});
  else if (needs.contains(Capability::Exec))
    probes.push_back({"sh", {"sh", "-c", "exit 0"}});
  if (needs.contains(Capability::FilesDelete)) probes.push_back({"rm", {"rm", "-rf", "--"}});
  auto slot = detail::freeze_slot(co_await transport_->endpoint(), container);
  // Successes are cached per container ID (D-24), and — for a container this acquire just
  // created — per image ID as well: a fresh container of an image holds exactly that
  // image's files, so it passes what the image passed (issue 24; a failure is never cached).
  const std::string image_key = fresh_image.empty() ? std::string() : "image:" + fresh_image;
  const auto passed = [&](const std::string& name) {
    return probes_passed_.contains({id, name}) || (!image_key.empty() && probes_passed_.contains({image_key, name}));
  };
  for (auto& probe : probes) {
    {
      std::lock_guard lock(state_mutex_);
      // host-tools passing also verifies sh (D-24).
      if (passed(probe.name) || (std::string(probe.name) == "sh" && passed("host-tools"))) {
        probes_passed_.insert({id, probe.name});
        continue;
      }
    }
    const std::string what = "backend 'docker' cannot serve capabilities {" + capability_names(needs) +
                             "} for workload kind '" + spec.kind() + "' on image '" + image + "': command probe '" +
                             probe.name + "' ";
    ExecOutcome outcome;
    try {
      outcome = co_await detail::exec_respecting_freeze(*transport_, *slot, [&] {
        ExecCall call;
        call.container = container;
        call.argv = probe.argv;
        call.working_directory = "/";
        call.timeout = config_.command_timeout();
        call.max_stdout = call.max_stderr = 64 * 1024;
        return call;
      });
    } catch (const Error& e) {
      throw SandboxCapabilityNotSupported(what + "did not complete (" + e.what() + "); the next acquire retries");
    }
    if (outcome.exit_code != 0)
      throw SandboxCapabilityNotSupported(what + "exited " + std::to_string(outcome.exit_code) +
                                          ", expected 0; the next acquire retries");
    std::lock_guard lock(state_mutex_);
    probes_passed_.insert({id, probe.name});
    if (!image_key.empty()) probes_passed_.insert({image_key, probe.name});
  }
}

awaitable<std::optional<std::string>> DockerSandboxBackend::read_account_file(const std::string& container,
                                                                              const std::string& path) {
  // A tar-plane read (D-25): bounded, regular file only; anything else, or any
  // failure, counts as unreadable and resolution moves on.
  constexpr std::size_t kMaxAccountFile = 1 << 20;
  try {
    ArchiveGet got = co_await transport_->archive_get(container, path, detail::kRetryPrefix + kMaxAccountFile);
    if (got.status == ArchiveStatus::Absent) co_return std::nullopt;
    auto first = detail::parse_first_entry(got.bytes, got.cut, true, path);
    if (first.need_more || first.entry.type != support::TarEntryType::file) co_return std::nullopt;
    co_return first.body;
  } catch (const Error&) {
    co_return std::nullopt;
  }
}

awaitable<DockerSandboxBackend::GuestUser> DockerSandboxBackend::resolve_guest_user(const std::string& container,
                                                                                 const std::string& id,
                                                                                 const std::string& fresh_image,
                                                                                 const SandboxSpec& spec) {
  // Per container ID, and per image ID for a container this acquire created: the image
  // user comes from the image's Config.User and its account files (we pass no --user), so a
  // fresh container of the same image resolves alike (issue 24).
  const std::string image_key = fresh_image.empty() ? std::string() : "image:" + fresh_image;
  {
    std::lock_guard lock(state_mutex_);
    auto it = guest_users_.find(id);
    if (it == guest_users_.end() && !image_key.empty()) it = guest_users_.find(image_key);
    if (it != guest_users_.end()) {
      guest_users_[id] = it->second;
      co_return guest_users_[id];
    }
  }
  // Order: Config.User, /etc/passwd, /etc/group, then `id` (D-25).
  std::optional<long long> uid, gid;
  std::string user;
  bool user_readable = true;
  try {
    user = co_await transport_->config_user(container);
  } catch (const Error&) {
    user_readable = false;
  }
  if (user_readable && user.empty()) {
    uid = 0;
    gid = 0;
  } else if (user_readable) {
    const auto colon = user.find(':');
    const std::string user_part = user.substr(0, colon);
    const std::optional<std::string> group_part =
        colon == std::string::npos ? std::nullopt : std::optional(user.substr(colon + 1));
    if (is_number(user_part)) uid = std::stoll(user_part);
    if (group_part && is_number(*group_part)) gid = std::stoll(*group_part);
    const bool need_passwd = !uid || (!group_part && !gid);
    if (need_passwd) {
      if (auto passwd = co_await read_account_file(container, "/etc/passwd")) {
        // [port decision] a numeric uid with no group: the passwd entry *by uid* gives the gid.
        if (auto entry = passwd_lookup(*passwd, uid ? std::to_string(*uid) : user_part, uid.has_value())) {
          if (!uid) uid = entry->first;
          if (!group_part) gid = entry->second;
        }
      }
    }
    if (group_part && !gid)
      if (auto group = co_await read_account_file(container, "/etc/group")) gid = group_lookup(*group, *group_part);
  }
  auto ask_id = [&](const char* flag) -> awaitable<std::optional<long long>> {
    try {
      auto slot = detail::freeze_slot(co_await transport_->endpoint(), container);
      auto outcome = co_await detail::exec_respecting_freeze(*transport_, *slot, [&] {
        ExecCall call;
        call.container = container;
        call.argv = {"id", flag};
        call.working_directory = "/";
        call.timeout = config_.command_timeout();
        call.max_stdout = call.max_stderr = 4096;
        return call;
      });
      std::string out = outcome.stdout_bytes;
      while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
      if (outcome.exit_code == 0 && is_number(out)) co_return std::stoll(out);
    } catch (const Error&) {
    }
    co_return std::nullopt;
  };
  if (!uid) uid = co_await ask_id("-u");
  if (!gid) gid = co_await ask_id("-g");
  if (uid && gid) {
    GuestUser resolved{*uid, *gid, true};
    std::lock_guard lock(state_mutex_);
    guest_users_[id] = resolved;
    if (!image_key.empty()) guest_users_[image_key] = resolved;
    co_return resolved;
  }
  const auto needs = spec.requires_capabilities();
  if (needs.contains(Capability::FilesOut) || needs.contains(Capability::HostTools))
    throw SandboxCapabilityNotSupported(
        "backend 'docker' cannot serve workload kind '" + spec.kind() + "' in container " + container +
        ": the image user '" + user +
        "' does not resolve to a uid and gid (Config.User, /etc/passwd, /etc/group, id), so inputs cannot be owned "
        "by the guest; files_out and host_tools need that. The next acquire retries");
  logger()->warn("backend 'docker': the image user '{}' of container {} does not resolve; workload kind '{}' gets "
                 "root-owned (0:0) inputs",
                 user, container, spec.kind());
  co_return GuestUser{0, 0, false};  // not cached: resolution is retried on the next acquire
}

awaitable<void> DockerSandboxBackend::prepare_work_dir(const std::string& container, const std::string& id,
                                                       const std::string& fresh_image, const std::string& base,
                                                       const GuestUser& identity) {
  const auto chain = detail::cumulative_components(base);
  // What a fresh container of an image showed is that image's (prepare_before_start). Only
  // the first finding is kept: a later fresh container whose directory was uploaded before
  // its start shows the upload, not the image.
  const auto record = [&](std::size_t first_missing) {
    if (fresh_image.empty()) return;
    std::lock_guard lock(state_mutex_);
    work_dir_suffix_.try_emplace({fresh_image, base}, first_missing);
  };
  // [port decision] (issue 24) First unfrozen: a check that finds every component a real
  // directory writes nothing, and the freeze guards only a check that licenses a write — the
  // `cp` below. What this check grants (the chain was real directories when looked at) is
  // all the frozen one granted too: the guest may swap a component the moment either ends,
  // and every file operation walks the work directory's ancestors again under its own
  // freeze. Any other finding — a missing, linked or odd component — is decided below,
  // under the freeze, as before; a stat that throws fails the acquire as it would there
  // (docker.md "What the default path skips").
  bool complete = true;
  for (std::size_t i = 0; i < chain.size() && complete; ++i) {
    auto entry = co_await detail::probe(*transport_, container, id, chain[i]);
    complete = entry && entry->kind == EntryKind::Directory;
  }
  if (complete) {
    record(chain.size());
    co_return;
  }
  // Under one freeze: stat every component from "/" down, leave existing directories
  // exactly as they are, send one tar for the missing suffix (D-14).
  auto slot = detail::freeze_slot(co_await transport_->endpoint(), container);
  co_await detail::run_frozen(*transport_, *slot, container, [&]() -> awaitable<void> {
    std::size_t first_missing = chain.size();
    for (std::size_t i = 0; i < chain.size(); ++i) {
      // The body-less stat where the transport has one: a tar stream per component made a
      // warm acquire (this check, every time) ~5x its engine calls' bare cost.
      auto entry = co_await detail::probe(*transport_, container, id, chain[i]);
      if (!entry) {
        first_missing = i;
        break;
      }
      if (entry->kind == EntryKind::Symlink)
        throw ValueError("backend 'docker': work directory component '" + chain[i] + "' of '" + base +
                         "' in container " + container + " is a symbolic link, not a real directory");
      if (entry->kind != EntryKind::Directory)
        throw NotADirectoryError("backend 'docker': work directory component '" + chain[i] + "' of '" + base +
                                 "' in container " + container + " is not a directory");
    }
    if (first_missing == chain.size()) {
      record(chain.size());
      co_return;
    }
    std::string tar = work_dir_tar(chain, first_missing, identity.uid, identity.gid);
    co_await transport_->archive_put(container, "/", std::move(tar));
    record(first_missing);
  });
}

awaitable<std::shared_ptr<Sandbox>> DockerSandboxBackend::acquire(SandboxKey key, SandboxSpec spec) {
  // 1. Preconditions, before any engine call.
  const std::string image = spec.image_id().value_or(spec.image().value_or(""));
  if (image.empty())
    throw ValueError("backend 'docker': workload kind '" + spec.kind() +
                     "' names no image (set spec.image or spec.image_id)");
  const bool proxied = detail::behind_proxy(config_, *transport_, spec);
  if (spec.egress() == Egress::Unrestricted ||
      (spec.egress() == Egress::Allowlist && !spec.egress_allow().empty() && !proxied))
    throw SandboxEgressNotEnforced("backend 'docker' cannot enforce the '" + std::string(to_string(spec.egress())) +
                                   "' egress workload kind '" + spec.kind() + "' asks for (" +
                                   (declarations_.egress_modes.contains(Egress::Allowlist)
                                        ? "it enforces closed and allowlist"
                                        : "it enforces closed; allowlist needs egress_proxy_image") +
                                   ")");
  std::string base = kDefaultWorkDir;
  if (spec.work_dir()) {
    base = *spec.work_dir();
    if (base.empty() || base[0] != '/' || normalize_guest_path(base) != base || base.find('\\') != std::string::npos)
      throw ValueError("backend 'docker': spec.work_dir '" + base + "' of workload kind '" + spec.kind() +
                       "' must be a normalised absolute POSIX path");
  }
  // C-55: the allowlist is part of the identity, so a changed policy is another sandbox.
  support::NameQualifiers qualifiers;
  if (proxied)
    for (const auto& entry : spec.egress_allow()) qualifiers.egress_allow.push_back(egress_entry_host(entry));
  // LIM-5: so are the resource bounds (a container's limits are fixed when it is created).
  if (!spec.resources().empty()) qualifiers.resources = spec.resources().to_string();
  const std::string container = support::sandbox_name(kContainerPrefix, key, spec.kind(), qualifiers);

  // Serialise per identity inside this process; other processes are met by adoption.
  std::shared_ptr<support::AsyncMutex> identity_lock;
  {
    std::lock_guard lock(state_mutex_);
    auto& slot = identity_locks_[container];
    if (!slot) slot = std::make_shared<support::AsyncMutex>();
    identity_lock = std::static_pointer_cast<support::AsyncMutex>(slot);
  }
  auto hold = co_await identity_lock->scoped();

  // 2-3. State; a paused container reports Running too, so Running alone is not usable.
  auto freeze = detail::freeze_slot(co_await transport_->endpoint(), container);
  auto state = co_await transport_->container_state(container);
  if (state && (state->paused || freeze->possibly_frozen)) {
    co_await recover_paused(container);
    state = co_await transport_->container_state(container);
  }
  // LIM-7: a container past its ttl is disposed, never handed out; a fresh one follows. A
  // disposal that fails fails the acquire.
  if (state && spec.resources().ttl() && co_await past_ttl(container)) {
    logger()->info("backend 'docker': disposing container {} of kind '{}': past its ttl of {} s", container,
                   spec.kind(), spec.resources().ttl()->count());
    if (auto failure = co_await remove_workload(container, key))
      throw OSError("backend 'docker': container " + container + " of workload kind '" + spec.kind() +
                    "' is past its ttl and could not be disposed, so it is not handed out: " + failure->to_string());
    state.reset();
  }
  const bool warm = state && state->running && !state->paused;
  if (!warm) co_await check_os_family(spec);  // 4. cold: create or restart
  // 5. Egress scaffolding, re-ensured on every acquire, warm reuse included.
  if (proxied) co_await detail::ensure_egress_topology(*transport_, config_, container, key, spec, !state.has_value());
  bool fresh = false;  // created by this acquire: nothing but the image has run in it
  if (warm) {
    logger()->info("backend 'docker': reusing running container {} for kind '{}'", container, spec.kind());
  } else {
    fresh = co_await ensure_running(container, spec, image, key, base, state);
    state = co_await transport_->container_state(container);
    if (!state || !state->running || state->paused)
      throw OSError("backend 'docker': container " + container + " for workload kind '" + spec.kind() +
                    "' is not running after start (status '" + (state ? state->status : "absent") + "')");
  }
  remember(key, container);

  // 7. Probes, identity, work directory, in that order.
  const std::string fresh_image = fresh ? state->image_id : std::string();
  co_await run_probes(container, state->id, fresh_image, spec, image);
  GuestUser identity{0, 0, false};
  if (needs_work_dir(spec) || spec.requires_capabilities().contains(Capability::HostTools))
    identity = co_await resolve_guest_user(container, state->id, fresh_image, spec);
  if (needs_work_dir(spec) && base != "/")
    co_await prepare_work_dir(container, state->id, fresh_image, base, identity);

  detail::DockerSandboxParts parts;
  parts.transport = transport_;
  parts.freeze = freeze;
  parts.container = container;
  parts.kind = spec.kind();
  parts.container_id = state->id;
  parts.storage_base = base;
  parts.capabilities = declarations_.capabilities;
  parts.uid = identity.uid;
  parts.gid = identity.gid;
  parts.cap_drop_all = config_.cap_drop_all;
  parts.max_exec_output_bytes = config_.max_exec_output_bytes;
  parts.command_timeout = config_.command_timeout();
  parts.watch_oom_kills = spec.resources().memory_bytes().has_value();
  parts.config = std::make_shared<const DockerConfig>(config_);
  parts.key = key;
  co_return std::make_shared<detail::DockerSandbox>(std::move(parts));
}

}  // namespace maf::sandbox::docker
