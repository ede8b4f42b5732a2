#pragma once
// A small HTTP/1.1 client for the Docker Engine API (issue 9): one request at a time per
// connection, keep-alive connections from a bounded idle pool, a wall-clock deadline on
// every request, bodies bounded at the source. Beast lives only in docker_http.cpp (it is
// slow to compile); this header carries no Asio beyond the awaitable.
//
// Why a pool of raw descriptors and not of sockets: a socket is tied to the io_context it
// was opened on, and the blocking facade (sync.hpp) runs each call on its own io_context.
// A pooled descriptor is re-wrapped on the calling coroutine's executor at each use, so a
// connection can outlive the io_context that opened it.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::docker::detail {

/// Where the daemon listens: a unix socket path, or a plain-TCP host and port.
struct HttpEndpoint {
  bool is_unix = true;
  std::string socket_path;  ///< when is_unix
  std::string host;         ///< when !is_unix
  std::string port;
  std::string display;  ///< as configured, e.g. "unix:///var/run/docker.sock" (the freeze key)
};

/// Parse a DOCKER_HOST value. Refuses, by name, what this client cannot honour: TLS
/// (`https://`, or `tcp://` with `tls_verify`), ssh://, npipe:// and anything else.
HttpEndpoint parse_docker_host(const std::string& docker_host, bool tls_verify);

struct HttpRequest {
  std::string method;  ///< GET, HEAD, POST, PUT, DELETE
  std::string target;  ///< path and query, already escaped
  std::string body;
  /// Sent after `body`, not copied: bytes the caller keeps alive until request() completes,
  /// then `trailing_zeros` zero bytes (a large upload streamed from the caller's buffer).
  std::string_view borrowed_body;
  std::size_t trailing_zeros = 0;
  std::string content_type;  ///< empty: no body header
  /// Absent: no deadline (an exec with no timeout).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  /// Body bytes kept in HttpResponse::body; reading stops past it (the connection is dropped).
  std::size_t max_body = std::size_t{16} << 20;
  /// Asked once the response header is read (status and path_stat set, body empty): how many
  /// body bytes to expect. The body is reserved to that (at most max_body) in one allocation,
  /// so a large body is not grown by doubling — old and new buffer both resident while it
  /// moves. Unset, or 0: grow as bytes come.
  std::function<std::size_t(const struct HttpResponse&)> expected_body;
  /// Streaming (an exec's attach under exec_stream): with a sink, each read's bytes go to it
  /// as soon as the read returns — never held until a 64 KiB buffer fills — and no read
  /// waits longer than `idle_timeout` (then HttpIdle, the connection closed). The deadline
  /// still bounds the whole exchange; nothing else does, so a stream that keeps producing
  /// is never cut by the transport. An answer other than 2xx/101 is not the stream: its body
  /// goes to HttpResponse::body (bounded by max_body), not to the sink.
  bool live = false;
  std::optional<std::chrono::milliseconds> idle_timeout;
  /// A hijacked exec's stdin (docs/exec-input.md STDIN-4): once a 2xx/101 header is read,
  /// these bytes are written on the connection while the body is read, then the write side
  /// is shut down, which the engine passes on as the command's end of file.
  std::optional<std::string> stdin_after_header;
  /// A live request's caller stop (STR-10): once requested, the body read is abandoned and
  /// request() throws HttpStopped (the connection closed).
  std::stop_token stop{};
  /// Instead of those bytes, what a streamed stdin's pipe gives (STDIN-6), copied onto the
  /// connection as it comes until the pipe's end of file; the descriptor is owned by the
  /// request (closed however it ends).
  int stdin_fd = -1;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  bool cut = false;        ///< the body was longer than max_body (or the sink said stop)
  std::string path_stat;   ///< X-Docker-Container-Path-Stat, raw base64
};

/// The deadline passed; the connection was closed.
class HttpTimeout : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A live request read nothing for its idle_timeout (before its deadline); the connection
/// was closed.
class HttpIdle : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// A live request's `stop` was requested; the connection was closed.
class HttpStopped : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// Connecting, writing or reading failed (daemon gone, malformed answer).
class HttpFailure : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class HttpClient {
public:
  /// `max_idle`: how many idle keep-alive connections are kept. In-flight requests are not
  /// bounded here — a long exec holds its connection for its whole run, and bounding those
  /// would let N slow commands starve every lifecycle call.
  explicit HttpClient(HttpEndpoint endpoint, std::size_t max_idle = 8);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  const HttpEndpoint& endpoint() const noexcept { return endpoint_; }

  /// One request. With `sink`, body bytes go to it as they arrive (not to `body`) until it
  /// returns false; a body that ends at EOF (a hijacked exec stream) is read to EOF.
  boost::asio::awaitable<HttpResponse> request(HttpRequest request,
                                               std::function<bool(std::string_view)> sink = {});

  /// Idle connections currently pooled (tests and benchmarks).
  std::size_t idle_connections() const;

private:
  int take_idle();
  void give_back(int fd);

  HttpEndpoint endpoint_;
  std::size_t max_idle_;
  mutable std::mutex mutex_;
  std::vector<int> idle_;
};

/// Percent-encode everything but RFC 3986 unreserved characters (and '/' when `keep_slash`).
std::string url_escape(std::string_view text, bool keep_slash = false);
/// RFC 4648 base64 decoding (the path-stat header); invalid input yields "".
std::string base64_decode(std::string_view text);

}  // namespace maf::sandbox::docker::detail
