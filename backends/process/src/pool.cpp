#include "pool.hpp"

#include <cerrno>
#include <random>
#include <spdlog/spdlog.h>

#include "maf/sandbox/logging.hpp"

namespace maf::sandbox::process {
namespace {

std::string hex(std::uint64_t v, std::size_t digits) {
  static constexpr char d[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < digits; ++i, v >>= 4) out += d[v & 15];
  return out;
}

std::string random_hex16() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return hex(rng(), 16);
}

}  // namespace

WarmPools::WarmPools(const SandboxStore& store, std::vector<PoolConfig> pools, Engine engine)
    : store_(store), engine_(std::move(engine)) {
  // Each backend instance owns its pools: its drain never takes a replica's ready sandboxes.
  const std::string instance = random_hex16();
  bool refills = false;
  for (auto& config : pools) {
    std::string key = pool_key(config.spec);
    std::string thread = hex(std::hash<std::string>{}(key), 16) + "-" + instance;
    refills = refills || config.refill;
    pools_.push_back(Pool{std::move(config), std::move(key), std::move(thread)});
  }
  try {
    for (const auto& pool : pools_) fill(pool);
  } catch (...) {
    for (const auto& pool : pools_) drain(pool);
    throw;
  }
  if (refills) refiller_ = std::thread([this] { refill_loop(); });
}

WarmPools::~WarmPools() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (refiller_.joinable()) refiller_.join();
  for (const auto& pool : pools_) drain(pool);
}

void WarmPools::fill(const Pool& pool) {
  std::size_t ready = 0;
  const std::int64_t now = engine_.now_unix();
  for (const auto& r : store_.conversation_records(kPoolScope, pool.thread)) {
    if (now - r.created_unix >= pool.config.max_age.count()) engine_.destroy(r);  // POOL-5
    else ++ready;
  }
  for (; ready < pool.config.size; ++ready) {
    const SandboxKey key{std::string(kPoolScope), pool.thread, random_hex16(), ""};
    engine_.make(key, pool.config.spec);
  }
}

void WarmPools::refill_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || dirty_; });
    if (stop_) return;
    dirty_ = false;
    lock.unlock();
    for (const auto& pool : pools_) {
      if (!pool.config.refill) continue;
      try {
        fill(pool);
      } catch (const std::exception& e) {
        logger()->warn("backend 'process': refilling a warm pool failed: {}", e.what());
      }
    }
    lock.lock();
  }
}

void WarmPools::drain(const Pool& pool) noexcept {
  try {
    for (const auto& r : store_.conversation_records(kPoolScope, pool.thread)) engine_.destroy(r);
    store_.forget_conversation_if_empty(kPoolScope, pool.thread);
  } catch (const std::exception& e) {
    logger()->warn("backend 'process': draining a warm pool failed (reap finds what is left): {}", e.what());
  }
}

std::optional<Record> WarmPools::claim(const SandboxSpec& spec, const SandboxKey& key,
                                       const std::filesystem::path& target) {
  if (pools_.empty()) return std::nullopt;
  const std::string wanted = pool_key(spec);
  for (const auto& pool : pools_) {
    if (pool.key != wanted) continue;  // POOL-2: only the spec the pool was made for
    const std::int64_t now = engine_.now_unix();
    for (const auto& r : store_.conversation_records(kPoolScope, pool.thread)) {
      if (now - r.created_unix >= pool.config.max_age.count()) {
        engine_.destroy(r);
        continue;
      }
      if (engine_.broken) {  // the broken double: handed out in place, still in the pool
        Record shared = r;
        shared.key = key;
        return shared;
      }
      // POOL-3: the rename is the claim; a concurrent claimer of the same sandbox gets ENOENT.
      const int err = store_.place(r.dir, target);
      if (err == ENOENT) continue;
      if (err != 0) return std::nullopt;
      Record claimed = r;
      claimed.dir = target;
      claimed.key = key;
      claimed.created_unix = now;  // TTL and idle time run from the claim
      engine_.rewrite(claimed);
      if (pool.config.refill) {
        std::lock_guard lock(mutex_);
        dirty_ = true;
      }
      wake_.notify_one();
      return claimed;
    }
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::size_t>> WarmPools::ready() const {
  std::vector<std::pair<std::string, std::size_t>> out;
  for (const auto& pool : pools_)
    out.emplace_back(pool.thread, store_.conversation_records(kPoolScope, pool.thread).size());
  return out;
}

}  // namespace maf::sandbox::process
