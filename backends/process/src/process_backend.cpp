// The process backend: lifecycle. Each sandbox is `<root>/<conversation>/<name>/` with a
// `meta.json` (who owns it, when it was made) and `root/` (the guest's private root); the
// layout is sandbox_store.hpp's. Names come from support::sandbox_name, the same mapping
// every backend uses, so two keys never share a directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <spdlog/spdlog.h>

#include "bwrap.hpp"
#include "cgroup_limits.hpp"
#include "egress_proxy.hpp"
#include "maf/sandbox/egress_proxy/brokering.hpp"
#include "host_boundary.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/spec_json.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/proxy_log.hpp"
#include "guest_snapshot.hpp"
#include "process_sandbox.hpp"
#include "said.hpp"
#include "sandbox_store.hpp"
#include "pool.hpp"
#include "snapshots.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

std::string random_hex(std::size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += digits[rng() % 16];
  return out;
}

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// LIM-7: past its TTL (from creation) or its idle timeout (from the last acquire or command).
bool expired(const Record& r, std::int64_t now) {
  if (const auto& ttl = r.resources.ttl(); ttl && now >= r.created_unix + ttl->count()) return true;
  if (const auto& idle = r.resources.idle_timeout()) {
    struct stat st {};
    const std::int64_t last =
        ::stat((r.dir / "last_used").c_str(), &st) == 0 ? static_cast<std::int64_t>(st.st_mtime) : r.created_unix;
    if (now >= last + idle->count()) return true;
  }
  return false;
}

std::shared_ptr<const Boundary> make_boundary(const ProcessBackendConfig& config) {
  Boundary b = establish_boundary(config);
  b.cgroups = CgroupLimits::detect(config.cgroup_root, config.pids_limit, config.memory_limit_bytes);
  logger()->debug("backend 'process': bounding {} per sandbox", b.cgroups.describe());
  std::string no_freezer;
  b.freezer = Freezer::detect(config.cgroup_root, &no_freezer);
  if (!b.freezer) logger()->info("backend 'process': pause is not offered: {}", no_freezer);
  return std::make_shared<const Boundary>(std::move(b));
}

/// Removes the cgroups recorded in a sandbox directory (its processes are killed with them).
void release_cgroups(const fs::path& sandbox_dir) {
  for (const auto& left : remove_cgroups(recorded_cgroups(sandbox_dir.string())))
    logger()->warn("backend 'process': cgroup left behind: {}", left);
}

class ProcessBackend final : public SandboxBackend, public std::enable_shared_from_this<ProcessBackend> {
public:
  explicit ProcessBackend(ProcessBackendConfig config)
      : config_(std::make_shared<const ProcessBackendConfig>(std::move(config))),
        boundary_(make_boundary(*config_)),
        store_(config_->root) {
    check_root(*config_, *boundary_);
    // A root laid out before issue 55 is moved into the by-conversation layout once, here.
    store_.migrate_flat_layout();
    refuse_missing_required_bounds();
    // Reclaim and Snapshot: proven by the CLEANUP suite on this backend (docs/backends/process.md).
    declarations_.capabilities = {Capability::Exec,        Capability::FilesIn, Capability::FilesOut,
                                  Capability::FilesList,   Capability::FilesDelete, Capability::Reclaim,
                                  Capability::Snapshot,    Capability::HostTools};
    if (!config_->run_code_interpreter.empty()) declarations_.capabilities.insert(Capability::RunCode);
    // Background: proven by the BACKGROUND suite on this backend (docs/background.md BG-9).
    declarations_.capabilities.insert(Capability::Background);
    // ExecStream: proven by the STREAM suite on this backend (docs/streaming.md).
    declarations_.capabilities.insert(Capability::ExecStream);
    // ExecEnv, ExecStdin: proven by the EXEC_ENV and EXEC_STDIN suites (docs/exec-input.md).
    declarations_.capabilities.insert(Capability::ExecEnv);
    declarations_.capabilities.insert(Capability::ExecStdin);
    // ExecStdinStream: the stream's pipe is the guest's stdin (STDIN-6); EXEC_STDIN's SI-6…
    declarations_.capabilities.insert(Capability::ExecStdinStream);
    declarations_.os_families = {OsFamily::Posix};
    declarations_.isolation_scopes = {IsolationScope::Conversation, IsolationScope::Call};
    if (probe_network_namespace(*config_, *boundary_)) {
      declarations_.egress_modes = {Egress::Closed};
      settle_allowlist();
    } else {
      egress_unavailable_ = "the network-namespace probe did not confine a child";
    }
    // LIM-3: the cgroup controllers detected and probed at construction, and the lifetime
    // bounds this backend keeps itself (LIM-7). The test-only double declares the cgroup
    // bounds without applying the spec's (the LIMITS suite's broken double).
    declarations_.resource_bounds = boundary_->cgroups.enforceable();
    if (config_->test_only_unapplied_resource_bounds)
      declarations_.resource_bounds = {ResourceBound::Memory, ResourceBound::Cpus, ResourceBound::Processes};
    declarations_.resource_bounds.insert(ResourceBound::Ttl);
    declarations_.resource_bounds.insert(ResourceBound::IdleTimeout);
    // SNAP-4: every snapshot keeps the whole writable tree (snapshots.hpp), proven by the
    // SNAPSHOT suite; PAUSE only where a freezer was detected and probed (SNAP-9).
    declarations_.snapshot_fidelity = kProcessSnapshotFidelity;
    if (boundary_->freezer) declarations_.capabilities.insert(Capability::Pause);
    start_pools();
  }

  std::string name() const override { return "process"; }
  std::string isolation() const override { return std::string(to_string(Isolation::OsProcess)); }
  const BackendDeclarations& declarations() const override { return declarations_; }
  bool supports_reap() const noexcept override { return true; }
  bool supports_reap_expired() const noexcept override { return true; }
  std::vector<std::pair<std::string, std::string>> facts() const override {
    std::vector<std::pair<std::string, std::string>> out{{"cgroups", boundary_->cgroups.describe()}};
    for (const auto& u : boundary_->cgroups.unusable()) out.emplace_back("cgroup unusable", u);
    out.emplace_back("egress allowlist", egress_unavailable_.empty() ? "proven at construction (a proxy per sandbox)"
                                                                     : "unavailable: " + egress_unavailable_);
    out.emplace_back("pause", boundary_->freezer ? boundary_->freezer->describe() : "not offered");
    if (pools_)
      for (const auto& [thread, ready] : pools_->ready()) out.emplace_back("pool " + thread, std::to_string(ready) + " ready");
    return out;
  }

protected:
  /// The core has checked the spec, settled the base and holds this identity's lock
  /// (ACQ-1…ACQ-3); other processes are met by the staging directory's atomic rename.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec,
                                                              AcquirePlan plan) override {
    const std::string& base = plan.storage_base;
    const auto policy = egress_policy_of(spec);
    // LIM-5 and the allowlist are part of the identity: other bounds or rules, another sandbox.
    const fs::path dir = sandbox_dir_of(key, spec, base);
    // Warm: a sandbox this process holds is answered from memory, once one stat shows its
    // record is still the one read (another replica may have disposed or recreated it, or
    // its record been rewritten); the core still walks the base (ACQ-4).
    if (auto held = held_sandbox(dir)) {
      // An egress sandbox whose proxy was ended (killed, the host rebooted) takes the cold
      // path below, which starts another.
      if (!(keeps_lifetimes() && expired(held->record, now_unix())) &&
          (!held->sandbox->egress() || egress_proxy_running(dir.string()))) {
        if (held->record.resources.idle_timeout()) touch_last_used(dir.string());
        co_return held->sandbox;
      }
    }
    auto record = read_record(dir);
    if (record && keeps_lifetimes() && expired(*record, now_unix())) {
      // LIM-7: an expired sandbox is disposed at the next acquire of its key, never reused.
      if (auto failure = destroy(*record))
        throw OSError(said("sandbox ") + dir.filename().string() + " of kind '" + spec.kind() +
                      "' is past its ttl/idle timeout (" + record->resources.to_string() +
                      ") and could not be disposed: " + failure->to_string());
      logger()->info("backend 'process': disposed expired sandbox {} ({})", dir.filename().string(),
                     record->resources.to_string());
      record.reset();
    }
    // POOL-1: a ready sandbox made for exactly this spec is claimed before one is created; a
    // claimed one is this acquire's as much as a created one (its proxy starts below).
    if (!record && pools_) record = pools_->claim(spec, key, dir);
    const bool fresh = !record;
    if (!record) record = create(dir, key, spec.kind(), base, spec.resources(), policy);
    if (record->resources.idle_timeout()) touch_last_used(dir.string());
    std::optional<GuestEgress> egress;
    try {
      egress = attach_egress(*record, key, spec);
    } catch (const std::exception& e) {
      // A sandbox this acquire made and cannot serve is not left behind (its proxy never
      // started); one that existed stays for its holders and the next attempt.
      if (fresh)
        if (auto failure = destroy(*record))
          logger()->warn("backend 'process': removing {} after its proxy failed: {}", dir.string(), failure->to_string());
      throw;
    }
    co_return open(*record, std::move(egress));
  }

  /// SNAP-8: a new sandbox whose root is a copy of the source's snapshot, made like any
  /// other (staging, record, rename), so it is disposed, purged and reaped like any other.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_fork(std::shared_ptr<Sandbox> source, std::string snapshot_id,
                                                           SandboxKey key, SandboxSpec spec, AcquirePlan plan) override {
    auto* from = dynamic_cast<ProcessSandbox*>(source.get());
    if (!from) throw ValueError(said("fork: the source sandbox is not one of this backend's"));
    if (config_->test_only_broken_snapshots) co_return source;  // the SNAPSHOT suite's broken double
    const fs::path dir = sandbox_dir_of(key, spec, plan.storage_base);
    if (read_record(dir))
      throw ValueError(said("fork: ") + to_string(key) + " already has a sandbox of kind '" + spec.kind() +
                       "'; a fork makes a new sandbox and never replaces one (dispose it first)");
    const Record record = create(dir, key, spec.kind(), plan.storage_base, spec.resources(), egress_policy_of(spec),
                                 [&](const std::string& to) { from->copy_snapshot_to(snapshot_id, to); });
    if (record.resources.idle_timeout()) touch_last_used(dir.string());
    // A fork keeps its own egress policy (SNAP-8): its own proxy, started as an acquire's is;
    // a fork that cannot get one is not left behind.
    std::optional<GuestEgress> egress;
    try {
      egress = attach_egress(record, key, spec);
    } catch (const std::exception&) {
      if (auto failure = destroy(record))
        logger()->warn("backend 'process': removing fork {} after its proxy failed: {}", dir.string(), failure->to_string());
      throw;
    }
    co_return open(record, std::move(egress));
  }

public:

  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey key, std::optional<std::string> kind,
                                                                 std::optional<std::string> instance_id) override {
    // One conversation's directory is listed: the cost follows what it holds, not the root.
    std::vector<DisposalFailure> failures;
    for (const auto& r : store_.conversation_records(key.scope, key.thread_id)) {
      if (!(r.key == key) || (kind && r.kind != *kind) || (instance_id && r.instance_id != *instance_id)) continue;
      if (auto f = destroy(r)) failures.push_back(*f);
    }
    store_.forget_conversation_if_empty(key.scope, key.thread_id);
    co_return fold(failures);
  }

  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) override {
    ScopePurge result = purge([&] { return store_.conversation_records(scope, thread_id); },
                              [&](const Record& r) { return r.key.scope == scope && r.key.thread_id == thread_id; });
    store_.forget_conversation_if_empty(scope, thread_id);
    co_return result;
  }

  boost::asio::awaitable<ScopePurge> reap(std::chrono::seconds older_than, std::optional<std::string> scope) override {
    const auto cutoff = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch() - older_than)
                            .count();
    ScopePurge result = purge([&] { return store_.all_records(); },
                              [&](const Record& r) { return r.created_unix <= cutoff && (!scope || r.key.scope == *scope); });
    store_.forget_empty_conversations();
    if (auto failure = remove_abandoned(cutoff)) {
      std::vector<DisposalFailure> failures{*failure};
      if (result.undisposed) failures.insert(failures.begin(), *result.undisposed);
      result.undisposed = fold(failures);
    }
    co_return result;
  }

  boost::asio::awaitable<ScopePurge> reap_expired(std::optional<std::string> scope) override {
    const std::int64_t now = now_unix();
    // SNAP-6: snapshots past their ttl go too, in every sandbox this walk reads anyway.
    for (const auto& r : store_.all_records())
      if (!scope || r.key.scope == *scope) (void)held_snapshots(r.dir);
    co_return purge([&] { return store_.all_records(); }, [&](const Record& r) {
      return keeps_lifetimes() && expired(r, now) && (!scope || r.key.scope == *scope);
    });
  }

private:
  template <class List, class Pred>
  ScopePurge purge(List&& list, Pred&& matches) {
    ScopePurge result;
    std::vector<DisposalFailure> failures;
    std::vector<Record> all;
    try {
      all = list();
    } catch (const std::exception& e) {
      result.undisposed = DisposalFailure{kDisposalUnlisted, e.what()};
      return result;
    }
    for (const auto& r : all) {
      if (!matches(r)) continue;
      if (auto f = destroy(r)) failures.push_back(*f);
      else ++result.disposed;
    }
    result.undisposed = fold(failures);
    return result;
  }

  /// A host killed mid-acquire leaves its `.staging-` directory, one killed mid-dispose its
  /// `.trash-`: neither has a record, so only age marks them abandoned. Whatever scope the
  /// reap names, they belong to no sandbox and are not counted as disposed.
  std::optional<DisposalFailure> remove_abandoned(std::int64_t cutoff) {
    std::vector<DisposalFailure> failures;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(config_->root, ec)) {
      const std::string n = entry.path().filename().string();
      struct stat st {};
      if ((n.rfind(".staging-", 0) != 0 && n.rfind(".trash-", 0) != 0) || entry.is_symlink() ||
          ::lstat(entry.path().c_str(), &st) != 0 || st.st_mtime > cutoff)
        continue;
      try {
        kill_guest_processes((entry.path() / "root").string());
        release_freezer(entry.path());
        end_proxy(entry.path(), std::nullopt, n);  // a trash directory's, its disposer killed mid-way
        release_cgroups(entry.path());
        remove_host_tree(entry.path().string());
      } catch (const std::exception& e) {
        failures.push_back(DisposalFailure{kDisposalRefused, n + ": " + e.what()});
      }
    }
    return fold(failures);
  }

  /// `<dir>/meta.json` for `r`, written aside and renamed in, so a reader sees the old record
  /// or the new one (a claimed pooled sandbox's record is rewritten for its new key).
  static void write_meta(const fs::path& dir, const Record& r) {
    const nlohmann::json meta{{"scope", r.key.scope},     {"thread_id", r.key.thread_id},
                              {"agent_id", r.key.agent_id}, {"call_id", r.key.call_id},
                              {"kind", r.kind},           {"instance_id", r.instance_id},
                              {"work_base", r.work_base}, {"created_unix", r.created_unix},
                              {"resources", resources_to_json(r.resources)}};
    std::ofstream(dir / "meta.json.new") << meta.dump(2);
    if (::rename((dir / "meta.json.new").c_str(), (dir / "meta.json").c_str()) != 0)
      throw OSError(said("cannot write the record of '") + dir.string() + "': " + std::strerror(errno));
  }

  /// POOL-1: the pools, made once the declarations are settled; a spec this backend cannot
  /// serve is refused here rather than never claimed.
  void start_pools() {
    if (config_->pools.empty()) return;
    for (const auto& pool : config_->pools) {
      const SandboxSpec& s = pool.spec;
      if (!s.requires_capabilities().subset_of(declarations_.capabilities) ||
          !declarations_.egress_modes.contains(s.egress()) ||
          !s.resources().asked().subset_of(declarations_.resource_bounds))
        throw ValueError(said("warm pool for kind '") + s.kind() + "' asks what this backend does not serve (" +
                         pool_key(s) + ")");
    }
    WarmPools::Engine engine{
        [this](const SandboxKey& key, const SandboxSpec& spec) {
          const std::string base = normalize_guest_path(spec.work_dir().value_or(kDefaultWorkDir));
          create(sandbox_dir_of(key, spec, base), key, spec.kind(), base, spec.resources(), egress_policy_of(spec));
        },
        [this](const Record& r) {
          if (auto failure = destroy(r)) logger()->warn("backend 'process': {}", failure->to_string());
        },
        [](const Record& r) { write_meta(r.dir, r); },
        [] { return now_unix(); },
        config_->test_only_broken_pools};
    pools_ = std::make_unique<WarmPools>(store_, config_->pools, std::move(engine));
  }

  /// LIM-5: the bounds are part of the identity — other bounds, another sandbox.
  fs::path sandbox_dir_of(const SandboxKey& key, const SandboxSpec& spec, const std::string& base) const {
    const std::string name = support::sandbox_name(
        kNamePrefix, key, spec.kind(),
        support::NameQualifiers{egress_identity(spec), base == kDefaultWorkDir ? "" : base,
                                spec.resources().empty() ? "" : spec.resources().to_string()});
    return store_.sandbox_dir(key, name);
  }

  /// `seed`, when given, makes the guest's root (a fork's copy of a snapshot, SNAP-8)
  /// instead of a fresh one.
  Record create(const fs::path& dir, const SandboxKey& key, const std::string& kind, const std::string& base,
                const ResourceLimits& resources, const std::optional<EgressPolicy>& policy,
                const std::function<void(const std::string&)>& seed = {}) {
    // Build the whole sandbox in a staging directory, then rename it into place: rename is
    // atomic, so concurrent acquires — in this process or another — yield one sandbox (C-52).
    const fs::path staging = config_->root / (".staging-" + random_hex(16));
    fs::create_directories(seed ? staging : staging / "root");
    // Searchable (not listable) by the identity bubblewrap runs as, whatever the umask.
    fs::permissions(staging, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    Record r{dir, key, kind, random_hex(16), base, now_unix(), resources};
    try {
      GuestTree tree((staging / "root").string(), boundary_->views, guest_virtual_dirs(),
                     boundary_->run_as);
      if (seed) seed((staging / "root").string());
      else prepare_guest_root(tree, *config_);
      if (policy) {
        // Its proxy is started once the sandbox is in place (attach_egress), by whichever
        // process opens it: the policy is the sandbox's, on disk, for any replica.
        prepare_guest_egress_points(tree);
        write_egress_policy(staging.string(), *policy, *boundary_);
      }
      tree.ensure_directory(base);
      // SNAPSHOT: the fresh tree, before any guest ran, is what RESET restores.
      take_snapshot(staging.string());
      write_meta(staging, r);
      std::ofstream(staging / "last_used") << "used\n";  // LIM-7's idle clock starts here
      if (const int err = store_.place(staging, dir); err != 0) {
        remove_host_tree(staging.string());
        if (err == EEXIST || err == ENOTEMPTY) {
          if (auto existing = read_record(dir)) return *existing;
        }
        throw OSError(said("cannot create sandbox directory '") + dir.string() + "': " + std::strerror(err));
      }
    } catch (...) {
      remove_host_tree(staging.string());
      throw;
    }
    logger()->debug("backend 'process': created {} for {} kind '{}'", dir.string(), to_string(key), kind);
    return r;
  }

  /// What this process holds of one sandbox: the object handed out, and the record it was
  /// opened from (with the version of the record file then read).
  struct Held {
    std::weak_ptr<ProcessSandbox> sandbox;
    Record record;
    RecordVersion version;
  };
  struct Answer {
    std::shared_ptr<ProcessSandbox> sandbox;
    Record record;
  };

  /// The sandbox at `dir` this process still holds, if its record file is unchanged.
  std::optional<Answer> held_sandbox(const fs::path& dir) {
    std::lock_guard lock(mutex_);
    const auto it = live_.find(dir.string());
    if (it == live_.end()) return std::nullopt;
    auto sandbox = it->second.sandbox.lock();
    if (!sandbox) {
      live_.erase(it);
      return std::nullopt;
    }
    const auto now = record_version(dir);
    if (!now || !(*now == it->second.version)) return std::nullopt;
    return Answer{std::move(sandbox), it->second.record};
  }

  /// An egress sandbox's proxy, running (kept, or started now); nullopt for one without.
  /// Its credentials' values (if any) are asked of the host's source only when a proxy starts.
  std::optional<GuestEgress> attach_egress(const Record& r, const SandboxKey& key, const SandboxSpec& spec) {
    const auto policy = read_egress_policy(r.dir.string());
    if (!policy) return std::nullopt;
    if (!programs_)
      throw SandboxEgressNotEnforced(said("sandbox ") + r.dir.filename().string() +
                                     " has an allowlist, and this backend cannot serve one: " + egress_unavailable_);
    return ensure_egress_proxy(*config_, *boundary_, *programs_, r.dir.string(), *policy,
                               [&] { return supply_credentials(key, spec); });
  }

  std::shared_ptr<Sandbox> open(const Record& r, std::optional<GuestEgress> egress) {
    const auto version = record_version(r.dir);
    std::lock_guard lock(mutex_);
    auto& slot = live_[r.dir.string()];
    auto sandbox = slot.sandbox.lock();
    if (!sandbox || sandbox->instance_id() != r.instance_id || sandbox->egress().has_value() != egress.has_value()) {
      sandbox = std::make_shared<ProcessSandbox>(config_, boundary_, r.kind, declarations_.capabilities, r.work_base,
                                                 r.instance_id, r.dir.string(), applied_bounds(r.resources),
                                                 std::move(egress));
      slot.sandbox = sandbox;
    }
    slot.record = r;
    slot.version = version.value_or(RecordVersion{});
    // C-53 is the core's now (ACQ-4): it walks the base and calls do_prepare_storage_base.
    return sandbox;
  }

  std::optional<DisposalFailure> destroy(const Record& r) {
    try {
      // Move it out of the namespace first so no acquire can reopen a half-removed sandbox,
      // then stop its guests: the rename keeps the root's inode, so the one scan below finds
      // every process rooted there, a command that raced the rename included (no command
      // can start in it after: bubblewrap binds the root by path).
      const fs::path trash = config_->root / (".trash-" + random_hex(16));
      if (::rename(r.dir.c_str(), trash.c_str()) != 0) {
        const int err = errno;
        if (err == ENOENT) return std::nullopt;  // another replica won the race
        kill_guest_processes((r.dir / "root").string());  // it stays, but nothing runs in it
        throw OSError(std::string("rename: ") + std::strerror(err));
      }
      store_.forget_conversation_if_empty(r.dir);
      {
        std::lock_guard lock(mutex_);
        live_.erase(r.dir.string());
      }
      kill_guest_processes((trash / "root").string());
      release_freezer(trash);  // SNAP-9: a frozen guest dies only once thawed
      end_proxy(trash, r.key, r.dir.filename().string());
      release_cgroups(trash);
      remove_host_tree(trash.string());
      return std::nullopt;
    } catch (const std::exception& e) {
      logger()->warn("backend 'process': disposing {} failed: {}", r.dir.string(), e.what());
      return DisposalFailure{kDisposalRefused, r.dir.filename().string() + ": " + e.what()};
    }
  }

  /// Issue 47 item 3: `allowlist` only when the programs are found and a confined child,
  /// through a real proxy, reached an allowed listener and not a denied one; method/path
  /// rules only when that proxy terminates TLS (its `--features`, as the Docker image label).
  void settle_allowlist() {
    std::string why;
    auto programs = find_egress_programs(*config_, why);
    if (programs) why = probe_allowlist(*config_, *boundary_, *programs);
    if (!why.empty()) {
      egress_unavailable_ = why;
      logger()->warn("backend 'process': not declaring egress allowlist: {}", why);
      return;
    }
    programs_ = std::move(programs);
    declarations_.egress_modes.insert(Egress::Allowlist);
    const std::string features = proxy_features(*config_, *programs_);
    if (features.find(egress_proxy::kTerminationFeature) != std::string::npos) {
      declarations_.capabilities.insert(Capability::EgressMethods);
      declarations_.capabilities.insert(Capability::EgressPaths);
      // Issue 47 (CRED-6…CRED-9, PE-10): brokering when the same proxy swaps placeholders.
      if (features.find(egress_proxy::kBrokerFeature) != std::string::npos)
        declarations_.capabilities.insert(Capability::AttachedIdentity);
    }
  }

  /// Ends a sandbox's proxy (if it has one) and publishes its decisions (OBS-7), attributed
  /// to the sandbox's key when the record named it.
  void end_proxy(const fs::path& sandbox_dir, const std::optional<SandboxKey>& key, const std::string& sandbox_name) {
    const auto read = end_egress_proxy(sandbox_dir.string());
    if (read.decisions.empty()) return;
    support::notify_proxy_decisions(*observer_hub(), "process", key, sandbox_name + "-proxy", read.decisions,
                                    read.truncated);
  }

  /// LIM-8: a host that requires bounds learns at construction that this tree cannot keep them.
  void refuse_missing_required_bounds() const {
    const ResourceBoundSet missing = config_->required_resource_bounds.difference(boundary_->cgroups.enforceable());
    if (missing.empty()) return;
    std::string why;
    for (const auto& u : boundary_->cgroups.unusable()) why += (why.empty() ? "" : "; ") + u;
    throw SandboxBoundaryUnavailable(said("required_resource_bounds ") + missing.to_string() +
                                     " cannot be enforced with this host's cgroup tree (" +
                                     (why.empty() ? std::string("no usable controller") : why) +
                                     "); see docs/backends/process.md \"Resources\"");
  }

  /// False only for the test-only double, which declares TTL and idle timeout and keeps neither.
  bool keeps_lifetimes() const noexcept { return !config_->test_only_unapplied_resource_bounds; }

  /// What the cgroups are given: the sandbox's bounds — except for the test-only double,
  /// which declares them and applies only the configuration's.
  ResourceLimits applied_bounds(const ResourceLimits& asked) const {
    return config_->test_only_unapplied_resource_bounds ? ResourceLimits{} : asked;
  }

  std::shared_ptr<const ProcessBackendConfig> config_;
  std::shared_ptr<const Boundary> boundary_;
  BackendDeclarations declarations_;
  std::optional<EgressPrograms> programs_;  ///< set iff `allowlist` is declared
  std::string egress_unavailable_;          ///< why it is not, when it is not
  SandboxStore store_;
  std::mutex mutex_;
  std::map<std::string, Held> live_;
  /// Last, so it goes first: its drain disposes through the members above (POOL-6).
  std::unique_ptr<WarmPools> pools_;
};

}  // namespace

std::filesystem::path default_process_root() {
  return "/var/tmp/maf-sandbox-process-" + std::to_string(::geteuid());
}

std::vector<std::string> process_engine_inventory(const ProcessBackendConfig& config) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(config.root, ec)) {
    const std::string n = entry.path().filename().string();
    out.push_back("state:" + n);
    // A conversation directory is listed with what it holds (sandbox_store.hpp).
    if (n.rfind(kConversationPrefix, 0) == 0 && entry.is_directory(ec) && !entry.is_symlink(ec))
      for (const auto& inner : fs::directory_iterator(entry.path(), ec))
        out.push_back("state:" + n + "/" + inner.path().filename().string());
  }
  for (const auto& base : CgroupLimits::detect(config.cgroup_root, config.pids_limit, config.memory_limit_bytes).bases())
    for (const auto& entry : fs::directory_iterator(base, ec))
      if (entry.is_directory(ec) && !entry.is_symlink(ec)) out.push_back("cgroup:" + entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::shared_ptr<SandboxBackend> make_process_backend(ProcessBackendConfig config) {
  if (config.root.empty() || config.root.is_relative())
    throw ValueError(said("root '") + config.root.string() + "' must be an absolute host path");
  for (const auto& bind : config.extra_ro_binds) {
    // A read-only mount does not stop connect() on a socket: a daemon's socket in the guest
    // (a container engine's above all) is a request away from host root.
    struct stat st {};
    if (!config.test_only_without_host_boundary && ::stat(bind.host.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
      throw ValueError(said("extra_ro_binds host path '") + bind.host +
                       "' is a socket; a read-only bind does not stop a connection, and a daemon's socket (a "
                       "container engine's above all) would hand the guest the daemon's authority");
  }
  return std::make_shared<ProcessBackend>(std::move(config));
}

ProcessBackendConfig parse_process_config(const nlohmann::json& j) {
  ProcessBackendConfig c;
  if (j.is_null()) return c;
  if (!j.is_object()) throw ValueError(said("configuration must be a JSON object"));
  auto want = [&](const char* key, auto&& apply, nlohmann::json::value_t type) {
    if (!j.contains(key)) return;
    const auto& v = j.at(key);
    // JSON has one number type; a non-negative integer is acceptable wherever an unsigned is.
    const bool ok = type == nlohmann::json::value_t::number_unsigned
                        ? (v.is_number_unsigned() || (v.is_number_integer() && v.template get<std::int64_t>() >= 0))
                        : v.type() == type;
    if (!ok) throw ValueError(std::string(said("configuration key '")) + key + "' has the wrong type (" + v.type_name() + ")");
    apply(v);
  };
  using T = nlohmann::json::value_t;
  for (const auto& item : j.items()) {
    static const std::set<std::string> known{"root", "bwrap_path", "extra_ro_binds", "run_code_interpreter",
                                             "internal_timeout_seconds", "max_stdout_bytes", "max_stderr_bytes",
                                             "guest_uid", "guest_gid", "setpriv_path", "host_uid", "host_gid",
                                             "pids_limit", "memory_limit_bytes", "test_only_without_host_boundary",
                                             "test_only_allow_unsafe", "required_resource_bounds", "cgroup_root",
                                             "test_only_unapplied_resource_bounds", "egress_proxy_path",
                                             "egress_relay_path", "egress_proxy_args", "egress_upstream_ca_file",
                                             "snapshot_budget_bytes", "snapshot_ttl_seconds", "test_only_broken_snapshots", "pools",
                                             "test_only_broken_pools"};
    if (!known.count(item.key())) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw ValueError(said("unknown configuration key '") + item.key() + "' (known: " + list + ")");
    }
  }
  want("root", [&](const auto& v) { c.root = v.template get<std::string>(); }, T::string);
  want("bwrap_path", [&](const auto& v) { c.bwrap_path = v.template get<std::string>(); }, T::string);
  want("extra_ro_binds", [&](const auto& v) {
    for (const auto& b : v) {
      if (!b.is_object() || !b.contains("host") || !b.contains("guest") || !b.at("host").is_string() || !b.at("guest").is_string())
        throw ValueError(said("each extra_ro_binds entry must be {\"host\": string, \"guest\": string}"));
      const std::string guest = normalize_guest_path(b.at("guest").template get<std::string>());
      if (guest.empty() || guest[0] != '/' || guest == "/")
        throw ValueError(said("extra_ro_binds guest path '") + guest + "' must be absolute and not '/'");
      c.extra_ro_binds.push_back({b.at("host").template get<std::string>(), guest});
    }
  }, T::array);
  want("run_code_interpreter", [&](const auto& v) {
    for (const auto& a : v) {
      if (!a.is_string()) throw ValueError(said("run_code_interpreter must be an array of strings"));
      c.run_code_interpreter.push_back(a.template get<std::string>());
    }
  }, T::array);
  want("internal_timeout_seconds", [&](const auto& v) { c.internal_timeout = std::chrono::seconds(v.template get<unsigned>()); }, T::number_unsigned);
  want("max_stdout_bytes", [&](const auto& v) { c.max_stdout_bytes = v.template get<std::size_t>(); }, T::number_unsigned);
  want("max_stderr_bytes", [&](const auto& v) { c.max_stderr_bytes = v.template get<std::size_t>(); }, T::number_unsigned);
  want("guest_uid", [&](const auto& v) { c.guest_uid = v.template get<unsigned>(); }, T::number_unsigned);
  want("guest_gid", [&](const auto& v) { c.guest_gid = v.template get<unsigned>(); }, T::number_unsigned);
  want("setpriv_path", [&](const auto& v) { c.setpriv_path = v.template get<std::string>(); }, T::string);
  want("host_uid", [&](const auto& v) { c.host_uid = v.template get<unsigned>(); }, T::number_unsigned);
  want("host_gid", [&](const auto& v) { c.host_gid = v.template get<unsigned>(); }, T::number_unsigned);
  want("pids_limit", [&](const auto& v) { c.pids_limit = v.template get<std::uint64_t>(); }, T::number_unsigned);
  want("memory_limit_bytes", [&](const auto& v) { c.memory_limit_bytes = v.template get<std::uint64_t>(); }, T::number_unsigned);
  want("required_resource_bounds", [&](const auto& v) {
    for (const auto& b : v) {
      if (!b.is_string()) throw ValueError(said("required_resource_bounds entries must be strings"));
      const auto bound = try_parse_enum<ResourceBound>(b.template get<std::string>());
      if (!bound || (*bound != ResourceBound::Memory && *bound != ResourceBound::Cpus && *bound != ResourceBound::Processes))
        throw ValueError(said("required_resource_bounds entry '") + b.template get<std::string>() +
                         "' is not one of memory, cpus, processes");
      c.required_resource_bounds.insert(*bound);
    }
  }, T::array);
  want("cgroup_root", [&](const auto& v) { c.cgroup_root = v.template get<std::string>(); }, T::string);
  want("test_only_unapplied_resource_bounds", [&](const auto& v) { c.test_only_unapplied_resource_bounds = v.template get<bool>(); }, T::boolean);
  want("test_only_without_host_boundary", [&](const auto& v) { c.test_only_without_host_boundary = v.template get<bool>(); }, T::boolean);
  want("test_only_allow_unsafe", [&](const auto& v) { c.test_only_allow_unsafe = v.template get<bool>(); }, T::boolean);
  want("egress_proxy_path", [&](const auto& v) { c.egress_proxy_path = v.template get<std::string>(); }, T::string);
  want("egress_relay_path", [&](const auto& v) { c.egress_relay_path = v.template get<std::string>(); }, T::string);
  want("egress_proxy_args", [&](const auto& v) {
    for (const auto& a : v) {
      if (!a.is_string()) throw ValueError(said("egress_proxy_args must be an array of strings"));
      c.egress_proxy_args.push_back(a.template get<std::string>());
    }
  }, T::array);
  want("egress_upstream_ca_file", [&](const auto& v) { c.egress_upstream_ca_file = v.template get<std::string>(); }, T::string);
  want("snapshot_budget_bytes", [&](const auto& v) { c.snapshot_budget_bytes = v.template get<std::uint64_t>(); }, T::number_unsigned);
  want("snapshot_ttl_seconds", [&](const auto& v) { c.snapshot_ttl = std::chrono::seconds(v.template get<std::uint64_t>()); }, T::number_unsigned);
  want("test_only_broken_snapshots", [&](const auto& v) { c.test_only_broken_snapshots = v.template get<bool>(); }, T::boolean);
  want("test_only_broken_pools", [&](const auto& v) { c.test_only_broken_pools = v.template get<bool>(); }, T::boolean);
  want("pools", [&](const auto& v) {
    for (const auto& p : v) {
      if (!p.is_object() || !p.contains("spec"))
        throw ValueError(said("each pools entry must be {\"spec\": {...}, \"size\", \"refill\", \"max_age_seconds\"}"));
      PoolConfig pool{spec_from_json(p.at("spec"))};
      for (const auto& item : p.items()) {
        const auto& val = item.value();
        if (item.key() == "spec") continue;
        if (item.key() == "size" && val.is_number_unsigned()) pool.size = val.template get<std::size_t>();
        else if (item.key() == "refill" && val.is_boolean()) pool.refill = val.template get<bool>();
        else if (item.key() == "max_age_seconds" && val.is_number_unsigned())
          pool.max_age = std::chrono::seconds(val.template get<std::uint64_t>());
        else throw ValueError(said("pools entry key '") + item.key() + "' is unknown or has the wrong type (" +
                              val.type_name() + "; known: spec, size, refill, max_age_seconds)");
      }
      c.pools.push_back(std::move(pool));
    }
  }, T::array);
  return c;
}

}  // namespace maf::sandbox::process
