// The Engine-API HTTP client (docker_http.hpp). The only translation unit of the Docker
// backend that includes Beast.
#include "docker_http.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <limits>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <vector>

#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::docker::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using Protocol = asio::generic::stream_protocol;
using Stream = beast::basic_stream<Protocol, asio::any_io_executor>;

HttpEndpoint parse_docker_host(const std::string& docker_host, bool tls_verify) {
  const auto refuse = [&](const std::string& why) -> HttpEndpoint {
    throw ValueError(said("the Engine-API transport cannot use DOCKER_HOST '" + docker_host + "': " +
                          why + " (use \"transport\": \"cli\" for it)"));
  };
  HttpEndpoint ep;
  ep.display = docker_host;
  if (docker_host.rfind("unix://", 0) == 0) {
    ep.socket_path = docker_host.substr(7);
    if (ep.socket_path.empty() || ep.socket_path[0] != '/') return refuse("a unix socket needs an absolute path");
    return ep;
  }
  if (docker_host.rfind("https://", 0) == 0) return refuse("TLS is not implemented by this transport");
  if (docker_host.rfind("tcp://", 0) == 0 || docker_host.rfind("http://", 0) == 0) {
    if (tls_verify) return refuse("DOCKER_TLS_VERIFY asks for TLS, which this transport does not implement");
    std::string rest = docker_host.substr(docker_host.find("://") + 3);
    if (auto slash = rest.find('/'); slash != std::string::npos) {
      if (rest.find_first_not_of('/', slash) != std::string::npos) return refuse("a path prefix is not supported");
      rest.erase(slash);
    }
    ep.is_unix = false;
    const auto colon = rest.rfind(':');
    if (rest.empty() || rest[0] == '[') return refuse("IPv6 literals are not supported");
    ep.host = colon == std::string::npos ? rest : rest.substr(0, colon);
    ep.port = colon == std::string::npos ? "2375" : rest.substr(colon + 1);
    if (ep.host.empty() || ep.port.empty()) return refuse("it names no host and port");
    return ep;
  }
  return refuse("only unix:// and plain tcp:// endpoints are spoken");
}

HttpClient::HttpClient(HttpEndpoint endpoint, std::size_t max_idle)
    : endpoint_(std::move(endpoint)), max_idle_(max_idle) {}

HttpClient::~HttpClient() {
  for (int fd : idle_) ::close(fd);
}

std::size_t HttpClient::idle_connections() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

int HttpClient::take_idle() {
  std::lock_guard lock(mutex_);
  while (!idle_.empty()) {
    const int fd = idle_.back();
    idle_.pop_back();
    // The daemon may have closed an idle connection: a readable EOF (or any pending byte,
    // which a finished exchange never leaves) means it is not reusable.
    char probe;
    const ssize_t n = ::recv(fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return fd;
    ::close(fd);
  }
  return -1;
}

void HttpClient::give_back(int fd) {
  std::lock_guard lock(mutex_);
  if (idle_.size() < max_idle_) {
    idle_.push_back(fd);
    return;
  }
  ::close(fd);
}

namespace {

http::verb verb_of(const std::string& method) {
  const http::verb v = http::string_to_verb(method);
  if (v == http::verb::unknown) throw HttpFailure("unknown HTTP method " + method);
  return v;
}

void arm(Stream& stream, const std::optional<std::chrono::steady_clock::time_point>& deadline) {
  if (deadline)
    stream.expires_at(*deadline);
  else
    stream.expires_never();
}

/// A live read's bound: the sooner of the deadline and the silence bound from now.
void arm_read(Stream& stream, const HttpRequest& request) {
  if (!request.live || !request.idle_timeout) return arm(stream, request.deadline);
  const auto idle_at = std::chrono::steady_clock::now() + *request.idle_timeout;
  stream.expires_at(request.deadline ? std::min(*request.deadline, idle_at) : idle_at);
}

/// A live read's timeout before the deadline is the silence bound's.
void check_idle(const boost::system::error_code& ec, const HttpRequest& request, const char* what) {
  if (ec != beast::error::timeout || !request.live || !request.idle_timeout) return;
  if (!request.deadline || std::chrono::steady_clock::now() < *request.deadline)
    throw HttpIdle(std::string(what) + " read nothing for " + std::to_string(request.idle_timeout->count()) + " ms");
}

void check(const boost::system::error_code& ec, const char* what) {
  if (!ec) return;
  if (ec == beast::error::timeout) throw HttpTimeout(std::string(what) + " timed out");
  throw HttpFailure(std::string(what) + ": " + ec.message());
}

}  // namespace

namespace {
/// A descriptor the request owns (a streamed stdin's read end): closed however it ends.
struct OwnedFd {
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }

private:
  int fd_;
};
}  // namespace

asio::awaitable<HttpResponse> HttpClient::request(HttpRequest request, std::function<bool(std::string_view)> sink) {
  OwnedFd stdin_pipe(std::exchange(request.stdin_fd, -1));
  const auto executor = co_await asio::this_coro::executor;
  Stream stream(executor);
  boost::system::error_code ec;

  if (const int fd = take_idle(); fd >= 0) {
    const Protocol protocol = endpoint_.is_unix ? Protocol(AF_UNIX, 0) : Protocol(AF_INET, IPPROTO_TCP);
    stream.socket().assign(protocol, fd, ec);
    if (ec) {
      ::close(fd);
      check(ec, "adopting a pooled connection");
    }
  } else if (endpoint_.is_unix) {
    const Protocol::endpoint target{asio::local::stream_protocol::endpoint(endpoint_.socket_path)};
    arm(stream, request.deadline);
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    co_await stream.async_connect(target, token);
    check(ec, ("connecting to " + endpoint_.display).c_str());
  } else {
    asio::ip::tcp::resolver resolver(executor);
    auto resolve_token = asio::redirect_error(asio::use_awaitable, ec);
    auto results = co_await resolver.async_resolve(endpoint_.host, endpoint_.port, resolve_token);
    check(ec, ("resolving " + endpoint_.display).c_str());
    if (results.empty()) throw HttpFailure("resolving " + endpoint_.display + ": no address");
    const Protocol::endpoint target{results.begin()->endpoint()};
    arm(stream, request.deadline);
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    co_await stream.async_connect(target, token);
    check(ec, ("connecting to " + endpoint_.display).c_str());
  }

  arm(stream, request.deadline);
  if (request.borrowed_body.empty() && request.trailing_zeros == 0) {
    http::request<http::string_body> req(verb_of(request.method), request.target, 11);
    req.set(http::field::host, "docker");  // any name: the daemon does not route on it
    req.set(http::field::user_agent, "maf-sandbox-docker");
    if (!request.content_type.empty()) req.set(http::field::content_type, request.content_type);
    const bool has_body = !request.body.empty() || request.method == "POST" || request.method == "PUT";
    req.body() = std::move(request.body);
    if (has_body) req.prepare_payload();
    req.keep_alive(true);
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    co_await http::async_write(stream, req, token);
    check(ec, "sending the request");
  } else {
    // The header with the whole length, then the three parts straight from their buffers:
    // a large upload is never joined into one string.
    http::request<http::empty_body> req(verb_of(request.method), request.target, 11);
    req.set(http::field::host, "docker");
    req.set(http::field::user_agent, "maf-sandbox-docker");
    if (!request.content_type.empty()) req.set(http::field::content_type, request.content_type);
    req.content_length(request.body.size() + request.borrowed_body.size() + request.trailing_zeros);
    req.keep_alive(true);
    http::request_serializer<http::empty_body> serializer(req);
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    co_await http::async_write_header(stream, serializer, token);
    check(ec, "sending the request header");
    const std::string zeros(std::min<std::size_t>(request.trailing_zeros, 64 * 1024), '\0');
    std::vector<asio::const_buffer> parts{asio::buffer(request.body), asio::buffer(request.borrowed_body)};
    for (std::size_t left = request.trailing_zeros; left > 0; left -= std::min(left, zeros.size()))
      parts.push_back(asio::buffer(zeros.data(), std::min(left, zeros.size())));
    co_await asio::async_write(stream, parts, token);
    check(ec, "sending the request body");
  }

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // bounded below, by max_body or the sink
  if (request.method == "HEAD") parser.skip(true);
  // STR-10: a live request's stop cancels the read in flight, on this executor; the link is
  // cut before `stream` goes, so a late post touches nothing.
  auto link = std::make_shared<Stream*>(&stream);
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
  if (request.live && request.stop.stop_possible())
    on_stop.emplace(request.stop, std::function<void()>([executor, weak = std::weak_ptr<Stream*>(link)] {
                      asio::post(executor, [weak] {
                        if (const auto l = weak.lock(); l && *l) {
                          boost::system::error_code cancel_ec;
                          (*l)->socket().cancel(cancel_ec);
                        }
                      });
                    }));
  const auto check_stop = [&request] {
    if (request.live && request.stop.stop_requested()) throw HttpStopped("the live read was stopped by its caller");
  };
  arm_read(stream, request);
  {
    check_stop();
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    co_await http::async_read_header(stream, buffer, parser, token);
    check_stop();
    check_idle(ec, request, "reading the response header");
    check(ec, "reading the response header");
  }

  HttpResponse response;
  response.status = static_cast<int>(parser.get().result_int());
  if (auto it = parser.get().find("X-Docker-Container-Path-Stat"); it != parser.get().end())
    response.path_stat = std::string(it->value());
  // A live stream's error answer (an exec start refused) is the engine's JSON, not the
  // stream: it is kept in `body` for the caller to read, never handed to the sink.
  const bool to_sink = sink && (!request.live || response.status == 101 ||
                                (response.status >= 200 && response.status < 300));
  if (request.expected_body && !sink)
    if (const std::size_t expected = request.expected_body(response); expected > 0)
      response.body.reserve(std::min(expected, request.max_body));

  // STDIN-4: the writer runs beside the reads below (a filter's output must be drained while
  // its input is written) and is always waited for before this frame ends: it uses `stream`.
  struct StdinWriter {
    explicit StdinWriter(const asio::any_io_executor& ex) : done(ex, std::chrono::steady_clock::time_point::max()) {}
    asio::steady_timer done;
    std::optional<asio::posix::stream_descriptor> pipe;  // a streamed stdin's read end
    bool finished = false;
  };
  std::shared_ptr<StdinWriter> writer;
  if (stdin_pipe.get() >= 0 && to_sink) {
    // STDIN-6: the pipe's bytes onto the connection as they come; its end of file is the
    // command's (the write side shut down). Cancelled with the socket when the command ends.
    writer = std::make_shared<StdinWriter>(executor);
    writer->pipe.emplace(executor, stdin_pipe.release());
    asio::co_spawn(
        executor,
        [&stream, writer]() -> asio::awaitable<void> {
          std::array<char, 64 * 1024> piece;
          boost::system::error_code read_ec, write_ec;
          for (;;) {
            const std::size_t n = co_await writer->pipe->async_read_some(
                asio::buffer(piece), asio::redirect_error(asio::use_awaitable, read_ec));
            if (n > 0)
              co_await asio::async_write(stream.socket(), asio::buffer(piece.data(), n),
                                         asio::redirect_error(asio::use_awaitable, write_ec));
            if (read_ec || write_ec) break;
          }
          if (!write_ec && read_ec == asio::error::eof) stream.socket().shutdown(asio::socket_base::shutdown_send, write_ec);
          writer->finished = true;
          writer->done.cancel();
        },
        asio::detached);
  }
  if (request.stdin_after_header && to_sink) {
    writer = std::make_shared<StdinWriter>(executor);
    asio::co_spawn(
        executor,
        [&stream, bytes = std::string_view(*request.stdin_after_header), writer]() -> asio::awaitable<void> {
          boost::system::error_code write_ec;
          co_await asio::async_write(stream.socket(), asio::buffer(bytes),
                                     asio::redirect_error(asio::use_awaitable, write_ec));
          if (!write_ec) stream.socket().shutdown(asio::socket_base::shutdown_send, write_ec);
          writer->finished = true;
          writer->done.cancel();
        },
        asio::detached);
  }
  const auto await_writer = [&]() -> asio::awaitable<void> {
    if (!writer || writer->finished) co_return;
    boost::system::error_code cancel_ec;
    stream.socket().cancel(cancel_ec);  // the command ended without reading all its input
    if (writer->pipe) writer->pipe->cancel(cancel_ec);
    while (!writer->finished) {
      boost::system::error_code wait_ec;
      co_await writer->done.async_wait(asio::redirect_error(asio::use_awaitable, wait_ec));
    }
  };

  std::array<char, 64 * 1024> chunk;
  bool stopped = false;
  std::exception_ptr read_failure;
  try {
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    arm_read(stream, request);
    check_stop();
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    // async_read returns only once the chunk buffer is full or the body ends; a live
    // stream must see each read's bytes as they come (a 6-byte line would wait otherwise).
    if (request.live && to_sink)
      co_await http::async_read_some(stream, buffer, parser, token);
    else
      co_await http::async_read(stream, buffer, parser, token);
    if (ec == http::error::need_buffer) ec = {};
    check_stop();
    check_idle(ec, request, "reading the response body");
    check(ec, "reading the response body");
    const std::size_t n = chunk.size() - parser.get().body().size;
    const std::string_view got(chunk.data(), n);
    if (to_sink) {
      if (!sink(got)) {
        stopped = true;
        break;
      }
      continue;
    }
    const std::size_t room = request.max_body - response.body.size();
    response.body.append(got.substr(0, room));
    if (got.size() > room) {
      stopped = true;
      break;
    }
  }
  } catch (...) {
    read_failure = std::current_exception();
  }
  co_await await_writer();
  if (read_failure) std::rethrow_exception(read_failure);
  response.cut = stopped;

  // Reuse only a connection whose exchange ended cleanly at a message boundary.
  if (!writer && !stopped && parser.is_done() && parser.keep_alive() && buffer.size() == 0 && stream.socket().is_open()) {
    stream.expires_never();
    boost::system::error_code release_ec;
    const int fd = stream.socket().release(release_ec);
    if (!release_ec && fd >= 0) give_back(fd);
  }
  co_return response;
}

std::string url_escape(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string base64_decode(std::string_view text) {
  const auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = value(c);
    if (v < 0) return {};
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return out;
}

}  // namespace maf::sandbox::docker::detail
