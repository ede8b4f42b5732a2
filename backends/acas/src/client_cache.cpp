// The client cache and its close; see client_cache.hpp.
#include "client_cache.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <atomic>
#include <list>
#include <mutex>

#include <spdlog/spdlog.h>

#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "said.hpp"

namespace maf::sandbox::acas::detail {

namespace asio = boost::asio;

struct ClientCache::Entry {
  asio::execution_context* context = nullptr;
  asio::any_io_executor owner;
  std::string authority;
  std::string generation;
  std::shared_ptr<Service> service;  ///< null while constructing
  enum class Phase { Constructing, Active, Closing } phase = Phase::Constructing;
  int leases = 0;
  std::uint64_t used = 0;  ///< LRU tick

  std::string name() const { return "client of authority '" + authority + "' (generation '" + generation + "')"; }
};

struct ClientCache::Core {
  explicit Core(const AcasConfig& c) : config(c) {}
  AcasConfig config;
  mutable std::mutex m;
  std::list<std::shared_ptr<Entry>> entries;
  bool refusing = false;
  std::uint64_t tick = 0;

  void erase(const std::shared_ptr<Entry>& e) {
    std::lock_guard g(m);
    entries.remove(e);
  }

  // The owner context is being destroyed: nothing can be posted to it any more, so its
  // clients are closed right here, on the thread destroying it.
  void context_gone(asio::execution_context* context) {
    std::vector<std::shared_ptr<Entry>> gone;
    {
      std::lock_guard g(m);
      for (auto it = entries.begin(); it != entries.end();) {
        if ((*it)->context == context) {
          gone.push_back(*it);
          it = entries.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& e : gone) {
      try {
        if (e->service) e->service->close();
      } catch (const std::exception& x) {
        logger()->warn("backend 'acas': {} failed to close with its executor: {}", e->name(), x.what());
      }
    }
  }
};

namespace {

// Tells every cache holding clients of an execution context when that context goes away
// (Asio shuts its services down first), so no close is ever posted to a dead executor.
class OwnerWatch : public asio::execution_context::service {
public:
  using key_type = OwnerWatch;
  static inline asio::execution_context::id id;
  explicit OwnerWatch(asio::execution_context& context) : asio::execution_context::service(context) {}

  void watch(const std::shared_ptr<ClientCache::Core>& core) {
    std::lock_guard g(m_);
    cores_.erase(std::remove_if(cores_.begin(), cores_.end(), [](const auto& w) { return w.expired(); }),
                 cores_.end());
    for (const auto& w : cores_)
      if (w.lock() == core) return;
    cores_.push_back(core);
  }

private:
  void shutdown() override {
    std::vector<std::weak_ptr<ClientCache::Core>> cores;
    {
      std::lock_guard g(m_);
      cores.swap(cores_);
    }
    for (const auto& w : cores)
      if (auto core = w.lock()) core->context_gone(&context());
  }

  std::mutex m_;
  std::vector<std::weak_ptr<ClientCache::Core>> cores_;
};

enum class CloseOutcome { Pending, Closed, Failed };

// Posts the close to the entry's owner executor. The entry leaves the cache when the close
// has run, whenever that is; Service::close() itself runs at most once.
std::shared_ptr<std::atomic<CloseOutcome>> post_close(std::shared_ptr<ClientCache::Core> core,
                                                      std::shared_ptr<ClientCache::Entry> entry) {
  auto outcome = std::make_shared<std::atomic<CloseOutcome>>(CloseOutcome::Pending);
  asio::post(entry->owner, [core, entry, outcome] {
    CloseOutcome result = CloseOutcome::Closed;
    try {
      entry->service->close();
    } catch (const std::exception& e) {
      logger()->warn("backend 'acas': {} failed to close: {}", entry->name(), e.what());
      result = CloseOutcome::Failed;
    }
    core->erase(entry);
    *outcome = result;
  });
  return outcome;
}

// Waits (polling: the close runs on another executor) until every outcome is in or `deadline`.
boost::asio::awaitable<void> await_outcomes(std::vector<std::shared_ptr<std::atomic<CloseOutcome>>> outcomes,
                                            Clock::time_point deadline) {
  for (;;) {
    const bool all = std::all_of(outcomes.begin(), outcomes.end(), [](const auto& o) { return *o != CloseOutcome::Pending; });
    if (all || Clock::now() >= deadline) co_return;
    co_await support::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

ClientCache::Lease::Lease(std::shared_ptr<Core> core, std::shared_ptr<Entry> entry)
    : core_(std::move(core)), entry_(std::move(entry)), service_(entry_->service) {}

ClientCache::Lease::Lease(Lease&& other) noexcept
    : core_(std::move(other.core_)), entry_(std::move(other.entry_)), service_(std::move(other.service_)) {}

ClientCache::Lease::~Lease() {
  if (!entry_) return;
  std::lock_guard g(core_->m);
  --entry_->leases;
  entry_->used = ++core_->tick;
}

ClientCache::ClientCache(const AcasConfig& config) : core_(std::make_shared<Core>(config)) {}

ClientCache::~ClientCache() {
  // Whatever close() did not close goes now, on whichever thread drops the last owner.
  std::list<std::shared_ptr<Entry>> entries;
  {
    std::lock_guard g(core_->m);
    entries.swap(core_->entries);
  }
  for (auto& e : entries) {
    try {
      if (e->service) e->service->close();
    } catch (const std::exception&) {
    }
  }
}

std::size_t ClientCache::size() const {
  std::lock_guard g(core_->m);
  return core_->entries.size();
}

void ClientCache::refuse() {
  std::lock_guard g(core_->m);
  core_->refusing = true;
}

boost::asio::awaitable<ClientCache::Lease> ClientCache::lease(std::shared_ptr<const Binding> binding,
                                                              Clock::time_point deadline) {
  auto core = core_;
  auto executor = co_await asio::this_coro::executor;
  asio::execution_context* context = &asio::query(executor, asio::execution::context);
  const auto limit = static_cast<std::size_t>(core->config.max_clients_per_loop);
  const auto close_bound = std::chrono::milliseconds(static_cast<std::int64_t>(core->config.client_close_seconds * 1000));
  for (;;) {
    std::shared_ptr<Entry> ready, build, evict;
    // Another caller is building this very client: a context run on several threads can
    // see it between its entry and its activation. Wait for it rather than build a twin.
    bool sibling_building = false;
    {
      std::lock_guard g(core->m);
      if (core->refusing) throw AcasCredentialError(said("the backend is closing or closed"));
      std::size_t here = 0;
      for (const auto& e : core->entries) {
        if (e->context != context) continue;
        ++here;
        if (e->authority != binding->authority || e->generation != binding->generation) continue;
        if (e->phase == Entry::Phase::Active) {
          ready = e;
          break;
        }
        if (e->phase == Entry::Phase::Constructing) sibling_building = true;
      }
      if (ready) {
        ++ready->leases;
        ready->used = ++core->tick;
      } else if (sibling_building) {
        // nothing to take yet: poll below
      } else if (here < limit) {
        build = std::make_shared<Entry>();
        build->context = context;
        build->owner = executor;
        build->authority = binding->authority;
        build->generation = binding->generation;
        build->leases = 1;
        core->entries.push_back(build);
      } else {
        for (const auto& e : core->entries)
          if (e->context == context && e->phase == Entry::Phase::Active && e->leases == 0 &&
              (!evict || e->used < evict->used))
            evict = e;
        if (evict) evict->phase = Entry::Phase::Closing;
      }
    }
    if (ready) co_return Lease(core, ready);
    if (build) {
      try {
        std::shared_ptr<AcasTokenSource> source;
        if (binding->create_credential) {
          try {
            source = binding->create_credential();
          } catch (const std::exception&) {
            source = nullptr;
          }
          // the factory's text is the provider's; only the binding is named.
          if (!source)
            throw AcasCredentialError(said("the credential factory of authority '") + binding->authority +
                                      "' (generation '" + binding->generation + "') failed");
        }
        build->service = std::make_shared<Service>(core->config, std::move(source), binding->authority);
      } catch (...) {
        core->erase(build);
        throw;
      }
      asio::use_service<OwnerWatch>(*context).watch(core);
      {
        std::lock_guard g(core->m);
        build->phase = Entry::Phase::Active;
        build->used = ++core->tick;
      }
      co_return Lease(core, build);
    }
    if (evict) {
      // the least recently used idle client makes room; closing never touches a sandbox.
      logger()->debug("backend 'acas': evicting the {} (limit {} clients per loop)", evict->name(), limit);
      std::vector<std::shared_ptr<std::atomic<CloseOutcome>>> outcomes{post_close(core, evict)};
      co_await await_outcomes(outcomes, std::min(deadline, Clock::now() + close_bound));
      continue;  // a close still pending keeps counting against the limit
    }
    if (sibling_building) {
      if (Clock::now() >= deadline)
        throw AcasCredentialError(said("the client of authority '") + binding->authority +
                                  "' was still being built by another caller after client_wait_seconds=" +
                                  std::to_string(core->config.client_wait_seconds));
      co_await support::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    if (Clock::now() >= deadline)
      throw AcasCredentialError(said("no client for authority '") + binding->authority + "' within client_wait_seconds=" +
                                std::to_string(core->config.client_wait_seconds) + ": limit " + std::to_string(limit) +
                                " clients per loop, all in use");
    co_await support::sleep_for(std::chrono::milliseconds(10));
  }
}

boost::asio::awaitable<std::vector<std::string>> ClientCache::close_all(std::chrono::milliseconds bound) {
  auto core = core_;
  std::vector<std::string> left;
  std::vector<std::shared_ptr<Entry>> closing;
  {
    std::lock_guard g(core->m);
    for (const auto& e : core->entries) {
      if (e->leases > 0 || !e->service) {
        left.push_back(e->name() + " is still in use");
        continue;
      }
      e->phase = Entry::Phase::Closing;
      closing.push_back(e);
    }
  }
  std::vector<std::shared_ptr<std::atomic<CloseOutcome>>> outcomes;
  for (const auto& e : closing) outcomes.push_back(post_close(core, e));
  co_await await_outcomes(outcomes, Clock::now() + bound);
  for (std::size_t i = 0; i < closing.size(); ++i) {
    if (*outcomes[i] == CloseOutcome::Failed) left.push_back(closing[i]->name() + " failed to close");
    if (*outcomes[i] == CloseOutcome::Pending)
      left.push_back(closing[i]->name() + " did not close within client_close_seconds (its owner executor is not running)");
  }
  co_return left;
}

}  // namespace maf::sandbox::acas::detail
