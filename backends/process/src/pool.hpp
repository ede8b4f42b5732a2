#pragma once
// Warm pools on the process backend (docs/pools.md POOL-1…POOL-6). A pooled sandbox is an
// ordinary sandbox directory with an ordinary record, kept under a conversation of its own —
// scope `maf-sandbox-pool`, thread `<pool key hash>-<backend instance>` — so `reap` finds it
// after a kill like any other, and each backend instance drains only its own pools. A claim
// renames a ready directory into the claiming key's place: rename is atomic, so of any number
// of concurrent claims exactly one gets each sandbox (POOL-3), and the record is then
// rewritten for its new key. A pooled sandbox was never handed out, so no previous user left
// a file, process or variable in it (POOL-4). Pools are filled at construction, refilled by
// one background thread after each claim, and drained when the backend goes (POOL-6).
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "maf/sandbox/key.hpp"
#include "maf/sandbox/pool.hpp"
#include "sandbox_store.hpp"

namespace maf::sandbox::process {

inline constexpr std::string_view kPoolScope = "maf-sandbox-pool";

class WarmPools {
public:
  /// How the backend makes a sandbox of `spec` for `key` (its own create), and disposes of one.
  struct Engine {
    std::function<void(const SandboxKey& key, const SandboxSpec& spec)> make;
    std::function<void(const Record& record)> destroy;
    /// Writes `record` as the sandbox's meta.json (a claimed sandbox's new key).
    std::function<void(const Record& record)> rewrite;
    std::function<std::int64_t()> now_unix;
    /// The POOL suite's broken double (test_only_broken_pools): claims hand the pooled
    /// directory out in place.
    bool broken = false;
  };

  /// Fills every pool to its size before returning (the pool is ready when the backend is).
  WarmPools(const SandboxStore& store, std::vector<PoolConfig> pools, Engine engine);
  /// Stops the refill thread and drains every pool of this instance (POOL-6).
  ~WarmPools();
  WarmPools(const WarmPools&) = delete;
  WarmPools& operator=(const WarmPools&) = delete;

  /// Claims a ready sandbox made for exactly `spec` and moves it to `target` (the directory
  /// `key` and `spec` name), rewriting its record for `key`; nullopt when the spec has no pool
  /// or the pool has none ready (the caller creates one, as without a pool).
  std::optional<Record> claim(const SandboxSpec& spec, const SandboxKey& key, const std::filesystem::path& target);

  /// The pool conversations of this instance, for facts and tests: (thread id, ready count).
  std::vector<std::pair<std::string, std::size_t>> ready() const;

private:
  struct Pool {
    PoolConfig config;
    std::string key;     // pool_key(config.spec)
    std::string thread;  // the pool's conversation thread id
  };
  void fill(const Pool& pool);
  void refill_loop();
  void drain(const Pool& pool) noexcept;

  const SandboxStore& store_;
  Engine engine_;
  std::vector<Pool> pools_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool dirty_ = false;
  std::thread refiller_;
};

}  // namespace maf::sandbox::process
