#pragma once
// HTTP for the ACAS backend: libcurl easy handles run on a small bounded pool of worker
// threads; each completion is posted back to the awaiting coroutine's executor.
//
// Why a pool and not a curl multi handle driven by Asio: the multi+socket-callback
// integration needs curl's socket lifetime callbacks mapped onto Asio descriptors, which is
// a lot of delicate code for a backend whose requests are few and mostly slow (exec answers
// arrive when the command ends). A pool of `workers` threads bounds concurrency, keeps the
// caller's thread free, and confines curl to threads the backend owns. Cancellation is by
// deadline (CURLOPT_TIMEOUT_MS) and by close() (a progress callback aborts every transfer).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace maf::sandbox::acas::detail {

struct HttpRequest {
  std::string method;  ///< GET, PUT, POST, DELETE
  std::string url;
  std::vector<std::string> headers;  ///< "Name: value"
  std::optional<std::string> body;
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds connect_timeout{10000};  ///< IMDS uses a short one (managed identity)
  /// Bytes of response body kept; more aborts the transfer (`overflowed`), A-21.
  std::size_t max_body = std::size_t{64} << 20;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::string retry_after;
  std::string retry_after_ms;
  std::string content_encoding;
  bool overflowed = false;
};

/// Transport-level outcome when no HTTP answer arrived.
enum class HttpFailure { None, ConnectFailed, TimedOut, Dropped, Aborted };

struct HttpOutcome {
  HttpResponse response;
  HttpFailure failure = HttpFailure::None;
  /// True when the request may have reached the service (anything after connecting).
  bool maybe_sent = false;
  std::string error;  ///< curl's text, for messages
};

class HttpClient {
public:
  /// At most `workers` threads, each started when a request finds no idle one.
  explicit HttpClient(std::size_t workers);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// Runs the request on a worker; resumes on the caller's executor. Never throws for
  /// transport failures (they are in the outcome); throws only on shutdown.
  boost::asio::awaitable<HttpOutcome> perform(HttpRequest request);

  /// Aborts every transfer in flight and refuses new ones; joins the workers.
  void shutdown();

  struct Impl;

private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace maf::sandbox::acas::detail
