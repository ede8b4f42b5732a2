#pragma once
// One ACAS sandbox group's data plane (R-1…R-6, T-1…T-6): URLs, the pinned api-version, the
// bearer token, and the retry policy ("Design choices", Retries). Callers get an HTTP answer (any status)
// or an exception; they decide what a 404 means.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "http_client.hpp"
#include "response.hpp"
#include "maf/sandbox/acas/backend.hpp"
#include "maf/sandbox/support/async_mutex.hpp"

namespace maf::sandbox::acas::detail {

using Clock = std::chrono::steady_clock;

/// The retry policy's request classes ("Design choices", Retries).
enum class RetryClass {
  Read,        ///< GET, DELETE sandbox: 408/429/5xx and connect failures
  Idempotent,  ///< lifecycle, resume, mkdir, files PUT/DELETE: 429 with Retry-After, 503
  Create,      ///< PUT sandboxes: only 429 with Retry-After (T-6)
  Exec,        ///< executeShellCommand: only 429 with Retry-After, deadline permitting (A-27)
};

/// The deadline had passed before a request was sent, so nothing of it reached the service
/// (A-32's "between commands"). Internal: callers outside the backend see a TimeoutError.
class DeadlineBeforeSend : public TimeoutError {
public:
  using TimeoutError::TimeoutError;
};

struct ServiceCall {
  std::string method;
  std::string path;  ///< below the group prefix, e.g. "/sandboxes/<id>/files/stat"
  std::vector<std::pair<std::string, std::string>> query;
  std::optional<std::string> body;
  std::string content_type = "application/json";
  RetryClass retry = RetryClass::Read;
  Clock::time_point deadline;
  std::size_t max_body = std::size_t{64} << 20;
  std::string what;  ///< "create", "exec", … for messages
  bool exec_headers = false;  ///< A-21: Accept-Encoding: identity
};

/// One client: its curl workers, its token source and its token cache. Built by the
/// client cache (client_cache.hpp) per (executor, authority, generation).
class Service {
public:
  /// `source` null = the default credential chain from `config`. `authority` names the
  /// binding in messages (never a secret).
  Service(const AcasConfig& config, std::shared_ptr<AcasTokenSource> source = nullptr,
          std::string authority = "default");
  ~Service();

  /// Closes the token source and stops the curl workers (aborting transfers). At most once;
  /// a second call does nothing. Runs on the client's owner executor.
  void close();

  /// Throws ValueError for an endpoint the config may not use (E-2, R-1).
  static void validate_endpoint(const AcasConfig& config);
  /// Sends with retries. Throws TimeoutError at the deadline, AcasThrottledPastDeadline when
  /// a 429's wait would cross it, AcasTransportError when no answer came.
  boost::asio::awaitable<HttpResponse> call(ServiceCall call);
  /// GETs every page of a list route: follows `nextLink` after checking it
  /// stays on the endpoint and the same collection path; stops on a repeat.
  boost::asio::awaitable<std::vector<nlohmann::json>> list_all(std::string path,
                                                              std::vector<std::pair<std::string, std::string>> query,
                                                              Clock::time_point deadline, std::string what);
  /// Throws AcasServiceError unless the status is one of `ok`.
  static void expect(const HttpResponse& response, std::initializer_list<int> ok, const std::string& what);

  HttpClient& http() { return *http_; }
  const AcasConfig& config() const { return config_; }

private:
  /// The cached token, or one fetched by a single refresh (the others wait for it).
  boost::asio::awaitable<std::string> token();
  /// The credential chain, run under `refresh_`; stores what it gets.
  boost::asio::awaitable<std::string> fetch_token(Clock::time_point now);
  std::optional<std::string> cached_token(Clock::time_point now) const;
  std::string store_token(std::string token, Clock::time_point expires);
  boost::asio::awaitable<TokenAnswer> managed_identity_token();
  boost::asio::awaitable<TokenAnswer> service_principal_token();
  boost::asio::awaitable<TokenAnswer> workload_identity_token();
  /// POSTs an Entra client-credentials grant (service principal and workload identity share the endpoint).
  boost::asio::awaitable<TokenAnswer> entra_grant(HttpRequest request, std::string source);
  boost::asio::awaitable<std::string> host_token();
  /// Caches a fetched token until five minutes before it expires (one hour when unsaid).
  std::string remember(const TokenAnswer& answer, Clock::time_point now);
  boost::asio::awaitable<HttpResponse> send_url(const std::string& url, const ServiceCall& call);
  std::string url(const std::string& path, const std::vector<std::pair<std::string, std::string>>& query) const;

  AcasConfig config_;
  std::shared_ptr<AcasTokenSource> source_;
  std::string authority_;
  std::unique_ptr<HttpClient> http_;
  std::atomic<bool> closed_{false};
  // The token cache is read and written from any thread that runs the client's execution
  // context (one io_context may be run on several): `token_state_` guards the two fields,
  // `refresh_` makes a refresh single-flight.
  mutable std::mutex token_state_;
  std::string cached_token_;
  Clock::time_point token_expires_{};
  support::AsyncMutex refresh_;
};

std::string url_encode(std::string_view text);

// Braced lists built outside coroutines: GCC 12 rejects an initializer_list inside a
// coroutine body ("array used as initializer").
using Query = std::vector<std::pair<std::string, std::string>>;
Query one_query(std::string key, std::string value);
std::string json_path_body(const std::string& path);

}  // namespace maf::sandbox::acas::detail
