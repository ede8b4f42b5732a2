// SandboxBackend: the acquire NVI (docs/writing-a-backend.md "How an acquire runs",
// ACQ-1…ACQ-5) and the defaults of the optional operations.
#include "maf/sandbox/backend.hpp"

#include <mutex>
#include <unordered_map>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/support/async_mutex.hpp"
#include "seam/spec_refusal.hpp"
#include "seam/storage_base.hpp"

namespace maf::sandbox {
namespace {

/// ACQ-3's lock key: the sandbox key (call_id included) and the kind, each field
/// length-prefixed so no two pairs share an encoding whatever bytes their fields hold.
std::string acquire_lock_key(const SandboxKey& key, const std::string& kind) {
  std::string out;
  for (const std::string* field : {&key.scope, &key.thread_id, &key.agent_id, &key.call_id, &kind}) {
    out += std::to_string(field->size());
    out += ':';
    out += *field;
  }
  return out;
}

/// The storage base's chain below "/", outermost first.
std::vector<std::string> components_of(const std::string& base) {
  std::vector<std::string> chain;
  for (std::size_t slash = base.find('/', 1); ; slash = base.find('/', slash + 1)) {
    chain.push_back(base.substr(0, slash));
    if (slash == std::string::npos) break;
  }
  return chain;
}

/// ACQ-4: capabilities that touch the guest tree under the base (so the base must exist).
bool uses_storage_base(const SandboxSpec& spec) {
  const CapabilitySet r = spec.requires_capabilities();
  for (Capability c : {Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::FilesList,
                       Capability::FilesDelete, Capability::HostTools})
    if (r.contains(c)) return true;
  return false;
}

}  // namespace

/// One FIFO mutex per (key, kind) with an acquire in flight; an entry is erased when the last
/// acquire that uses it leaves, so the map holds only identities being acquired right now.
struct SandboxBackend::AcquireLocks {
  struct Entry {
    support::AsyncMutex mutex;
    std::size_t users = 0;
  };
  std::mutex m;
  std::unordered_map<std::string, std::unique_ptr<Entry>> by_lock_key;

  /// Counts a user of `lock_key`'s entry from construction to destruction (not the lock).
  class Use {
  public:
    Use(AcquireLocks& locks, std::string lock_key) : locks_(locks), lock_key_(std::move(lock_key)) {
      std::lock_guard g(locks_.m);
      auto& slot = locks_.by_lock_key[lock_key_];
      if (!slot) slot = std::make_unique<Entry>();
      ++slot->users;
      entry_ = slot.get();
    }
    ~Use() {
      std::lock_guard g(locks_.m);
      if (--entry_->users == 0) locks_.by_lock_key.erase(lock_key_);
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    support::AsyncMutex& mutex() const noexcept { return entry_->mutex; }

  private:
    AcquireLocks& locks_;
    std::string lock_key_;
    Entry* entry_ = nullptr;
  };
};

SandboxBackend::SandboxBackend() : acquire_locks_(std::make_shared<AcquireLocks>()) {}

SandboxBackend::~SandboxBackend() = default;

boost::asio::awaitable<std::shared_ptr<Sandbox>> SandboxBackend::acquire(SandboxKey key, SandboxSpec spec) {
  // ACQ-5: a wrapper forwards to a backend whose own acquire runs everything below.
  // Each awaited call is built in a statement of its own and awaited by name: GCC 12 destroys
  // the by-value arguments of a call made inside a co_await expression twice.
  if (forwards_acquire()) {
    auto forwarded = do_acquire(std::move(key), std::move(spec), AcquirePlan{});
    co_return co_await std::move(forwarded);
  }

  auto engine = [this](SandboxKey k, SandboxSpec s, AcquirePlan p) {
    return do_acquire(std::move(k), std::move(s), std::move(p));
  };
  auto checked = acquire_checked(std::move(key), std::move(spec), std::move(engine));
  co_return co_await std::move(checked);
}

boost::asio::awaitable<std::shared_ptr<Sandbox>> SandboxBackend::acquire_checked(SandboxKey key, SandboxSpec spec,
                                                                                 AcquireEngine engine) {
  // ACQ-1: what the declarations do not serve is refused as the router refuses it. A direct
  // acquire has no host options: the isolation-scope floor is the weakest.
  const BackendDeclarations& d = declarations();
  if (const auto unserved = detail::first_unserved(d, spec, IsolationScope::Conversation))
    detail::refuse_unserved(*unserved, name(), d, spec, IsolationScope::Conversation);

  // ACQ-2: the storage base, decided once for every backend.
  AcquirePlan plan{detail::settle_storage_base("backend '" + name() + "'", spec), uses_storage_base(spec)};

  // ACQ-3: one get-or-create per (key, kind) in this process; the entry goes with its last user.
  AcquireLocks::Use use(*acquire_locks_, acquire_lock_key(key, spec.kind()));
  auto held = co_await use.mutex().scoped();
  const std::string kind = spec.kind();
  const bool walks = plan.uses_storage_base;
  auto acquiring = engine(std::move(key), std::move(spec), std::move(plan));
  std::shared_ptr<Sandbox> sandbox = co_await std::move(acquiring);
  if (!sandbox) throw RuntimeError("backend '" + name() + "' returned no sandbox for workload kind '" + kind + "'");
  // ACQ-4: the base exists before the sandbox is handed out, warm reuse included (C-53). The
  // sandbox's own base is walked: it is what its relative paths resolve under.
  if (walks) co_await walk_storage_base(*sandbox, kind);
  co_return sandbox;
}

boost::asio::awaitable<std::shared_ptr<Sandbox>> SandboxBackend::fork(std::shared_ptr<Sandbox> source,
                                                                      std::string snapshot_id, SandboxKey key,
                                                                      SandboxSpec spec) {
  // SNAP-8: a fork is an acquire whose guest starts from a snapshot, so it is held to the
  // same checks, lock and walk (ACQ-1…ACQ-4); only the engine work differs.
  if (!source) throw ValueError("fork: no source sandbox given for workload kind '" + spec.kind() + "'");
  if (source->backend_name() != name())
    throw ValueError("fork: snapshot '" + snapshot_id + "' belongs to a sandbox of backend '" + source->backend_name() +
                     "', not '" + name() + "'; a fork is made by the backend that holds the snapshot");
  if (snapshot_id.empty()) throw ValueError("fork: snapshot id must not be empty");
  if (!declarations().capabilities.contains(Capability::Snapshot))
    throw NotImplementedError("backend '" + name() + "' does not declare capability 'snapshot', so fork is not available");
  if (forwards_acquire()) {  // ACQ-5: the wrapped backend's own fork runs everything below
    auto forwarded = do_fork(std::move(source), std::move(snapshot_id), std::move(key), std::move(spec), AcquirePlan{});
    co_return co_await std::move(forwarded);
  }
  auto engine = [this, source = std::move(source), snapshot_id = std::move(snapshot_id)](
                    SandboxKey k, SandboxSpec s, AcquirePlan p) {
    return do_fork(source, snapshot_id, std::move(k), std::move(s), std::move(p));
  };
  auto checked = acquire_checked(std::move(key), std::move(spec), std::move(engine));
  co_return co_await std::move(checked);
}

boost::asio::awaitable<std::shared_ptr<Sandbox>> SandboxBackend::do_fork(std::shared_ptr<Sandbox>, std::string,
                                                                         SandboxKey, SandboxSpec, AcquirePlan) {
  throw NotImplementedError("backend '" + name() + "' does not implement fork");
  co_return nullptr;
}

boost::asio::awaitable<void> SandboxBackend::walk_storage_base(Sandbox& sandbox, const std::string& kind) {
  const std::string& base = sandbox.storage_base();
  StorageBaseWalk walk{base, components_of(base), 0};
  // One no-follow stat per component, outermost first, up to the first missing one: existing
  // directories are left exactly as they are; a link or a non-directory refuses the acquire
  // (the base would not be confined).
  for (; walk.first_missing < walk.chain.size(); ++walk.first_missing) {
    const std::string& component = walk.chain[walk.first_missing];
    const auto stat = co_await sandbox.do_lstat(component);
    if (!stat) break;
    if (stat->kind == EntryKind::Symlink)
      throw ValueError("backend '" + name() + "': storage base component '" + component + "' of '" + base +
                       "' (workload kind '" + kind + "', instance " + sandbox.instance_id() +
                       ") is a symbolic link, not a real directory; the base is not confined");
    if (stat->kind != EntryKind::Directory)
      throw NotADirectoryError("backend '" + name() + "': storage base component '" + component + "' of '" + base +
                               "' (workload kind '" + kind + "', instance " + sandbox.instance_id() +
                               ") is not a directory");
  }
  co_await sandbox.do_prepare_storage_base(walk);
}

boost::asio::awaitable<ScopePurge> SandboxBackend::reap(std::chrono::seconds, std::optional<std::string>) {
  throw NotImplementedError("backend '" + name() + "' does not offer reap");
  co_return ScopePurge{};
}

boost::asio::awaitable<ScopePurge> SandboxBackend::reap_expired(std::optional<std::string>) {
  throw NotImplementedError("backend '" + name() + "' does not offer reap --expired");
  co_return ScopePurge{};
}

void refuse_unenforced_bounds(const std::string& backend_name, const BackendDeclarations& declarations,
                              const SandboxSpec& spec, const std::string& why) {
  const ResourceBoundSet missing = spec.resources().asked().difference(declarations.resource_bounds);
  if (missing.empty()) return;
  throw SandboxResourceBoundNotEnforced("backend '" + backend_name + "' does not enforce resource bound " +
                                            missing.to_string() + ", asked by workload kind '" + spec.kind() + "' (" +
                                            spec.resources().to_string() + "; it enforces: " +
                                            declarations.resource_bounds.to_string("no resource bound") +
                                            (why.empty() ? std::string() : "; " + why) + ")",
                                        std::string(to_string(missing.sorted().front())));
}

}  // namespace maf::sandbox
