// WslcSandboxBackend: declarations and acquire's get-or-create (wslc.md W-1…W-19, W-42).
// Disposal lives in disposal.cpp.
#include "maf/sandbox/wslc/backend.hpp"

#include <spdlog/spdlog.h>

#include "file_plane.hpp"
#include "key_lock.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "maf/sandbox/wslc/error_codes.hpp"
#include "maf/sandbox/wslc/errors.hpp"
#include "wslc_sandbox.hpp"

namespace maf::sandbox::wslc {

using boost::asio::awaitable;

namespace {

BackendDeclarations wslc_declarations() {
  BackendDeclarations d;
  d.capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn};  // W-2, exactly
  d.os_families = OsFamilySet{OsFamily::Posix};                          // W-3
  d.egress_modes = EgressSet{Egress::Closed};                            // W-4 (no proxy image)
  d.isolation_scopes = IsolationScopeSet{IsolationScope::Conversation, IsolationScope::Call};  // W-5
  return d;  // limits undeclared: the core defaults apply (W-6)
}

bool needs_base(const SandboxSpec& spec) {
  const auto r = spec.requires_capabilities();
  return r.contains(Capability::Exec) || r.contains(Capability::FilesIn) || r.contains(Capability::FilesOut) ||
         r.contains(Capability::FilesList) || r.contains(Capability::FilesDelete);
}

std::string version_text(const std::array<int, 4>& v) {
  return std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]) + "." + std::to_string(v[3]);
}

}  // namespace

WslcSandboxBackend::WslcSandboxBackend(WslcConfig config, std::shared_ptr<WslcRunner> runner)
    : config_(std::move(config)),
      runner_(runner ? std::move(runner) : make_process_runner(config_.wslc_path)),
      declarations_(wslc_declarations()) {}

WslcSandboxBackend::~WslcSandboxBackend() = default;

std::string WslcSandboxBackend::container_name(const SandboxKey& key, const std::string& kind,
                                               const std::string& work_base) {
  // Closed egress only: the allow: slot stays empty; the base joins only when not default.
  support::NameQualifiers q;
  if (work_base != kDefaultWorkDir) q.work_base = work_base;
  return support::sandbox_name(kContainerPrefix, key, kind, q);
}

std::shared_ptr<detail::KeyLock> WslcSandboxBackend::lock_for(const std::string& name) {
  std::lock_guard guard(state_mutex_);
  auto& slot = locks_[name];
  if (!slot) slot = std::make_shared<detail::KeyLock>();
  return slot;
}

void WslcSandboxBackend::remember(const SandboxKey& key, const std::string& name) {
  std::lock_guard guard(state_mutex_);
  auto& entry = registry_[support::length_prefixed({key.scope, key.thread_id, key.agent_id, key.call_id})];
  entry.first = key;
  entry.second.insert(name);
}

std::set<std::string> WslcSandboxBackend::remembered(const SandboxKey& key,
                                                     const std::optional<std::string>& scope_thread_only) {
  std::lock_guard guard(state_mutex_);
  std::set<std::string> out;
  for (const auto& [id, entry] : registry_) {
    const SandboxKey& k = entry.first;
    const bool match = scope_thread_only ? (k.scope == key.scope && k.thread_id == key.thread_id) : k == key;
    if (match) out.insert(entry.second.begin(), entry.second.end());
  }
  return out;
}

void WslcSandboxBackend::forget(const std::string& name) {
  std::lock_guard guard(state_mutex_);
  for (auto it = registry_.begin(); it != registry_.end();) {
    it->second.second.erase(name);
    it = it->second.second.empty() ? registry_.erase(it) : std::next(it);
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
    throw WslcBackendUnavailable("backend 'wslc': '" + config_.wslc_path + " version' gave no version (exit " +
                                 std::to_string(r.exit_code) + "): " + r.stdout_bytes + r.stderr_bytes);
  if (*version < kMinimumWslcVersion)
    throw WslcBackendUnavailable("backend 'wslc': wslc " + version_text(*version) + " is below the floor " +
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
                                           const std::string& image) {
  std::vector<std::pair<std::string, std::string>> labels;
  for (auto& [label, value] : support::key_selector(key, spec.kind())) labels.emplace_back(label, value);
  for (auto& [label, value] : support::sandbox_labels(key, spec.kind(), spec.labels()))
    if (label.rfind(support::kLabelUserPrefix, 0) == 0) labels.emplace_back(label, value);
  auto args = run_args(name, labels, image);
  WslcOutcome r = co_await lifecycle(std::move(args));
  if (r.exit_code == 0) {
    logger()->info("backend 'wslc': created container {} for kind '{}' (thread '{}', agent '{}')", name, spec.kind(),
                   key.thread_id, key.agent_id);
    co_return;
  }
  const std::string what = "wslc container run of " + name + " from image '" + image + "' for kind '" + spec.kind() + "'";
  if (find_symbol(r.stderr_bytes) != WslcSymbol::AlreadyExists) raise_wslc_failure(what, r.exit_code, r.stderr_bytes);
  // W-17: another process created it first — adopt once.
  const ListSelector running{.all = false, .name = name};
  const ListSelector any{.all = true, .name = name};
  auto now_running = co_await list(running);
  if (find_exact(now_running, name)) co_return;
  auto present = co_await list(any);
  if (find_exact(present, name) && co_await start(name)) co_return;
  raise_wslc_failure(what + " (name taken, and adopting it failed)", r.exit_code, r.stderr_bytes);
}

awaitable<void> WslcSandboxBackend::ensure_base(const std::string& name, const std::string& kind,
                                                const std::string& base) {
  // W-18: walk from the first component under `/`; existing directories stay exactly as
  // they are; the first missing one ends the walk with one tar holding the base alone.
  detail::FilePlane plane{runner_.get(), name, kind, config_.command_timeout()};
  std::string prefix;
  std::size_t pos = 1;
  while (pos <= base.size()) {
    const std::size_t slash = std::min(base.find('/', pos), base.size());
    prefix = base.substr(0, slash);
    pos = slash + 1;
    auto st = co_await detail::engine_stat(plane, prefix);
    if (!st) {
      const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
      support::TarWriter tar;
      tar.add_directory(base.substr(1), {.mode = 0755, .uid = 0, .gid = 0, .mtime = now});
      std::string archive = std::move(tar).finish();
      co_await detail::upload_tar(plane, std::move(archive), base);
      co_return;
    }
    if (st->kind == EntryKind::Symlink)
      throw ValueError("backend 'wslc': work base component '" + prefix + "' of '" + base + "' in container " + name +
                       " is a symbolic link; the base is not confined");
    if (st->kind != EntryKind::Directory)
      throw NotADirectoryError("backend 'wslc': work base component '" + prefix + "' of '" + base +
                               "' in container " + name + " is not a directory");
  }
}

awaitable<std::shared_ptr<Sandbox>> WslcSandboxBackend::acquire(SandboxKey key, SandboxSpec spec) {
  // Preconditions, before any wslc call.
  const std::string image = spec.image_id().value_or(spec.image().value_or(config_.image.value_or("")));
  if (image.empty())
    throw ValueError("backend 'wslc': workload kind '" + spec.kind() +
                     "' names no image (set spec.image, spec.image_id or the backend's `image`)");
  if (spec.egress() != Egress::Closed && !(spec.egress() == Egress::Allowlist && spec.egress_allow().empty()))
    throw SandboxEgressNotEnforced("backend 'wslc' cannot enforce the '" + std::string(to_string(spec.egress())) +
                                   "' egress workload kind '" + spec.kind() +
                                   "' asks for (no egress proxy image; it enforces closed)");
  const std::string base = spec.work_dir().value_or(kDefaultWorkDir);
  if (base.empty() || base[0] != '/' || base == "/" || normalize_guest_path(base) != base ||
      base.find('\\') != std::string::npos)
    throw ValueError("backend 'wslc': spec.work_dir '" + base + "' of workload kind '" + spec.kind() +
                     "' must be a normalised absolute POSIX path below /");
  support::sandbox_labels(key, spec.kind(), spec.labels());  // refuses a bad label key (W-11) now
  const std::string name = container_name(key, spec.kind(), base);

  auto key_lock = lock_for(name);
  auto held = co_await key_lock->acquire();
  co_await check_version();

  // W-14, W-15: running -> reuse; stopped -> start, else remove and create; missing -> create.
  const ListedContainer* entry = nullptr;
  const ListSelector running_probe{.all = false, .name = name};
  const ListSelector any_probe{.all = true, .name = name};
  auto running = co_await list(running_probe);
  entry = find_exact(running, name);
  std::vector<ListedContainer> listed;
  if (entry) {
    logger()->info("backend 'wslc': reusing container {} for kind '{}' (thread '{}', agent '{}')", name, spec.kind(),
                   key.thread_id, key.agent_id);
  } else {
    listed = co_await list(any_probe);
    if (find_exact(listed, name)) {
      if (co_await start(name)) {
        logger()->info("backend 'wslc': restarted container {} for kind '{}' (thread '{}', agent '{}')", name,
                       spec.kind(), key.thread_id, key.agent_id);
      } else {
        co_await remove(name);
        co_await create(name, key, spec, image);
      }
    } else {
      co_await create(name, key, spec, image);
    }
    running = co_await list(running_probe);
    entry = find_exact(running, name);
    if (!entry)
      throw WslcCommandFailed("backend 'wslc': container " + name + " for workload kind '" + spec.kind() +
                                  "' is not running after create or start",
                              "", "");
  }
  remember(key, name);
  if (needs_base(spec)) co_await ensure_base(name, spec.kind(), base);

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
