#pragma once
// the backend's clients (curl workers + token source + token cache, service.hpp),
// cached per (executor's execution context, authority, generation), at most
// `max_clients_per_loop` per context counting those being built and being closed. A lease
// pins one client for a whole operation; nested helpers are handed the outer lease's
// Service, never a second lease, so capacity 1 cannot deadlock. A-62's close lives here too.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "maf/sandbox/acas/backend.hpp"
#include "service.hpp"

namespace maf::sandbox::acas::detail {

/// What an operation resolved. A sandbox keeps the one of the acquire that made it.
struct Binding {
  std::string authority;
  std::string generation;
  AcasTokenSourceFactory create_credential;  ///< empty = the default credential chain
};

class ClientCache {
public:
  struct Entry;
  struct Core;

  class Lease {
  public:
    Lease(std::shared_ptr<Core> core, std::shared_ptr<Entry> entry);
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    Service& service() const { return *service_; }

  private:
    std::shared_ptr<Core> core_;
    std::shared_ptr<Entry> entry_;
    std::shared_ptr<Service> service_;
  };

  explicit ClientCache(const AcasConfig& config);
  ~ClientCache();

  /// A client for `binding` on the calling coroutine's execution context: a cached one, a
  /// new one, or — at capacity — a new one after closing the least recently used idle one
  /// on its owner executor; otherwise waits until `deadline`. Throws AcasCredentialError
  /// when refusing, at the deadline ("limit N clients per loop"), or when the
  /// binding's factory fails (its text is never quoted).
  boost::asio::awaitable<Lease> lease(std::shared_ptr<const Binding> binding, Clock::time_point deadline);

  /// every later lease() is refused.
  void refuse();
  /// closes every client not leased on its owner executor, all within `bound`; returns
  /// what is left open (leased, timed out, owner executor not running) or failed to close.
  /// Closed clients leave the cache, so a later call never closes them again.
  boost::asio::awaitable<std::vector<std::string>> close_all(std::chrono::milliseconds bound);

  /// Clients alive (any phase), for tests and logs.
  std::size_t size() const;

private:
  std::shared_ptr<Core> core_;
};

}  // namespace maf::sandbox::acas::detail
