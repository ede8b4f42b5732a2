#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>

#include <cerrno>
#include <csignal>
#include <map>
#include <random>

#include "maf/sandbox/errors.hpp"
#include <spdlog/spdlog.h>

#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/router.hpp"
#include "transports.hpp"

namespace maf::sandbox::mcp {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::asio::awaitable;

std::string random_session_id() {
  std::random_device device;
  std::string id;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) id += kHex[device() % 16];
  return id;
}

/// "localhost", "127.0.0.1" or "[::1]", with an optional port: the only names a loopback
/// server answers to. Anything else is a page that resolved its own name to 127.0.0.1.
bool is_loopback_authority(std::string_view authority) {
  std::string_view host = authority;
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string_view::npos) return false;
    const std::string_view rest = host.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    host = host.substr(0, close + 1);
  } else if (const auto colon = host.find(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

bool is_loopback_origin(std::string_view origin) {
  for (std::string_view scheme : {"http://", "https://"})
    if (origin.substr(0, scheme.size()) == scheme) return is_loopback_authority(origin.substr(scheme.size()));
  return false;
}

/// One MCP session over HTTP: its own conversation, and the POSTs waiting for an answer.
struct HttpSession {
  std::string thread;
  std::unique_ptr<McpSession> mcp;
  bool ended = false;
  struct Waiter {
    std::optional<nlohmann::json> answer;
    std::shared_ptr<asio::steady_timer> wake;
  };
  std::map<std::string, Waiter> waiting;  // by the request id's JSON text
};

class HttpServer {
public:
  HttpServer(asio::io_context& io, const ServeOptions& options)
      : io_(io), options_(options), context_(make_server_context(options, io.get_executor())) {}

  awaitable<void> listen(tcp::acceptor& acceptor) {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
    }
  }

  /// Drains every session and disposes its conversation.
  awaitable<void> close_all() {
    while (!sessions_.empty()) {
      auto it = sessions_.begin();
      auto session = it->second;
      sessions_.erase(it);
      co_await end(*session);
    }
    while (!stateless_.empty()) {  // 2026-07-28 calls still running
      auto session = stateless_.begin()->second;
      stateless_.erase(stateless_.begin());
      session->ended = true;
      co_await session->mcp->drain();
      for (auto& [key, waiter] : session->waiting) waiter.wake->expires_at(asio::steady_timer::time_point::min());
    }
    co_await context_->tasks->drain();
    co_await context_->handles->close_all();
    const ScopePurge purge = co_await options_.router->dispose_scope(options_.toolset.scope, options_.toolset.thread);
    logger()->info("mcp: the server's handles and stateless calls ended; disposed {} sandbox(es)", purge.disposed);
  }

private:
  using Request = http::request<http::string_body>;
  using Response = http::response<http::string_body>;

  static Response reply(const Request& req, http::status status, std::string body,
                        std::string_view content_type = "application/json") {
    Response res{status, req.version()};
    res.set(http::field::server, "maf-sandbox");
    if (!body.empty()) res.set(http::field::content_type, std::string(content_type));
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
  }

  awaitable<void> serve(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(options_.max_message_bytes);
      boost::system::error_code ec;
      co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::body_limit) {
        Request bare;
        Response res = reply(bare, http::status::payload_too_large,
                             make_error(nullptr, kInvalidRequest, "Invalid Request: the body is over this server's limit").dump());
        res.keep_alive(false);
        co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
        co_return;
      }
      if (ec) co_return;
      Request req = parser.release();
      Response res = co_await handle(req, stream.socket());
      co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !res.keep_alive()) co_return;
    }
  }

  awaitable<Response> handle(const Request& req, tcp::socket& peer) {
    if (!is_loopback_authority(std::string_view(req[http::field::host].data(), req[http::field::host].size())))
      co_return reply(req, http::status::forbidden,
                      make_error(nullptr, kInvalidRequest, "Forbidden: the Host header is not a loopback name").dump());
    if (const auto origin = req[http::field::origin]; !origin.empty() &&
                                                      !is_loopback_origin(std::string_view(origin.data(), origin.size())))
      co_return reply(req, http::status::forbidden,
                      make_error(nullptr, kInvalidRequest, "Forbidden: the Origin is not a loopback origin").dump());
    const std::string_view target(req.target().data(), req.target().size());
    if (target != "/mcp" && target.substr(0, 5) != "/mcp?")
      co_return reply(req, http::status::not_found, "", "text/plain");

    const std::string session_id = req["Mcp-Session-Id"].to_string();
    if (req.method() == http::verb::get) {
      Response res = reply(req, http::status::method_not_allowed, "");
      res.set(http::field::allow, "POST, DELETE");
      co_return res;
    }
    if (req.method() == http::verb::delete_) {
      const auto it = sessions_.find(session_id);
      if (it == sessions_.end()) co_return reply(req, http::status::not_found, "", "text/plain");
      auto session = it->second;
      sessions_.erase(it);
      co_await end(*session);
      co_return reply(req, http::status::ok, "");
    }
    if (req.method() != http::verb::post) {
      Response res = reply(req, http::status::method_not_allowed, "");
      res.set(http::field::allow, "POST, DELETE");
      co_return res;
    }

    Message message = parse_message(req.body());
    if (message.kind == Message::Kind::Invalid)
      co_return reply(req, http::status::bad_request, message.error_response.dump());
    const RequestHeaders headers = standard_headers(req);
    const EraDecision era = decide_era(message, &headers);
    if (era.error)
      co_return reply(req, static_cast<http::status>(era.http_status),
                      message.kind == Message::Kind::Request ? era.error->dump() : std::string());
    if (era.era == Era::Modern) co_return co_await serve_stateless(req, std::move(message), era, peer);

    std::shared_ptr<HttpSession> session;
    std::string new_id;
    if (message.kind == Message::Kind::Request && message.method == "initialize" && session_id.empty()) {
      new_id = random_session_id();
      session = open(new_id);
    } else {
      if (session_id.empty())
        co_return reply(req, http::status::bad_request,
                        make_error(message.kind == Message::Kind::Request ? message.id : nlohmann::json(nullptr),
                                   kInvalidRequest, "Bad Request: no Mcp-Session-Id; initialize first")
                            .dump());
      const auto it = sessions_.find(session_id);
      if (it == sessions_.end())
        co_return reply(req, http::status::not_found,
                        make_error(nullptr, kInvalidRequest, "Not Found: no such session").dump());
      session = it->second;
    }

    if (message.kind != Message::Kind::Request) {
      session->mcp->handle(req.body());
      co_return reply(req, http::status::accepted, "");
    }
    const std::string key = message.id.dump();
    auto wake = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
    session->waiting[key] = HttpSession::Waiter{std::nullopt, wake};
    session->mcp->handle(req.body());
    boost::system::error_code ignored;
    while (!session->waiting[key].answer && !session->ended)
      co_await wake->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    std::optional<nlohmann::json> answer = std::move(session->waiting[key].answer);
    session->waiting.erase(key);
    if (!answer)  // cancelled: the session ended, or the client cancelled the call
      co_return reply(req, http::status::accepted, "");
    Response res = reply(req, http::status::ok, answer->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (!new_id.empty()) res.set("Mcp-Session-Id", new_id);
    co_return res;
  }

  static RequestHeaders standard_headers(const Request& req) {
    RequestHeaders h;
    auto read = [&](std::string_view name) -> std::optional<std::string> {
      const auto it = req.find(beast::string_view(name.data(), name.size()));
      if (it == req.end()) return std::nullopt;
      return std::string(it->value().data(), it->value().size());
    };
    h.protocol_version = read("MCP-Protocol-Version");
    h.method = read("Mcp-Method");
    h.name = read("Mcp-Name");
    return h;
  }

  /// A 2026-07-28 request: no session. Its own McpSession over the server's shared tools
  /// and handles lives for this one POST, so two clients' equal request ids never meet.
  awaitable<Response> serve_stateless(const Request& req, Message message, EraDecision era, tcp::socket& peer) {
    if (message.kind != Message::Kind::Request) {
      // MCP-10: a stateless client's notifications/cancelled reaches nothing — over
      // Streamable HTTP the revision's cancellation is closing the POST (below), and an
      // unauthenticated stateless server has no client identity to scope a request id by, so
      // matching one would let any local client cancel another's call by guessing `1`.
      co_return reply(req, http::status::accepted, "");
    }
    auto session = std::make_shared<HttpSession>();
    session->thread = options_.toolset.thread;
    const std::string key = message.id.dump();
    auto wake = std::make_shared<asio::steady_timer>(io_, asio::steady_timer::time_point::max());
    session->waiting[key] = HttpSession::Waiter{std::nullopt, wake};
    std::weak_ptr<HttpSession> weak = session;
    session->mcp = std::make_unique<McpSession>(io_.get_executor(), context_, [weak](const nlohmann::json& m) {
      auto s = weak.lock();
      if (!s || !m.contains("id")) return;
      const auto it = s->waiting.find(m["id"].dump());
      if (it == s->waiting.end()) return;
      it->second.answer = m;
      it->second.wake->expires_at(asio::steady_timer::time_point::min());
    });
    const unsigned long serial = ++stateless_serial_;
    stateless_.emplace(serial, session);
    session->mcp->handle(std::move(message), era);
    auto watching = std::make_shared<bool>(true);
    if (!session->waiting[key].answer) asio::co_spawn(io_, cancel_on_close(peer, session, key, watching), asio::detached);
    boost::system::error_code ignored;
    while (!session->waiting[key].answer && !session->ended)
      co_await wake->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (*watching) {
      *watching = false;  // the watcher touches `peer` no more; its wait ends now
      peer.cancel(ignored);
    }
    std::optional<nlohmann::json> answer = std::move(session->waiting[key].answer);
    stateless_.erase(serial);
    if (!answer) co_return reply(req, http::status::accepted, "");
    // 2026-07-28 over HTTP: a method this server does not serve is 404 as well as -32601.
    // A missing client capability is 400 (the binding's one handler error with a status).
    const int code = answer->contains("error") ? (*answer)["error"].value("code", 0) : 0;
    const http::status status = code == kMethodNotFound                     ? http::status::not_found
                                : code == kMissingRequiredClientCapability ? http::status::bad_request
                                                                           : http::status::ok;
    co_return reply(req, status,
                    answer->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

  /// MCP-10: the client closing a stateless POST cancels its call (the revision's Streamable
  /// HTTP cancellation): the program is stopped and the cleanup rung runs, and the POST's
  /// waiter ends unanswered. Bytes of a next request (pipelining) end the watch instead.
  awaitable<void> cancel_on_close(tcp::socket& peer, std::shared_ptr<HttpSession> session, std::string key,
                                  std::shared_ptr<bool> watching) {
    boost::system::error_code ec;
    co_await peer.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
    if (!*watching || ec) co_return;  // answered first (the wait was cancelled), or the socket is gone
    *watching = false;
    char byte = 0;
    const ssize_t n = ::recv(peer.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) co_return;  // more bytes: not a close
    logger()->info("mcp: a stateless client closed its POST; its call is cancelled");
    co_await session->mcp->drain(false);
    session->ended = true;
    if (const auto it = session->waiting.find(key); it != session->waiting.end())
      it->second.wake->expires_at(asio::steady_timer::time_point::min());
  }

  std::shared_ptr<HttpSession> open(const std::string& id) {
    auto session = std::make_shared<HttpSession>();
    session->thread = options_.toolset.thread + "-" + std::to_string(++opened_);
    ToolsetOptions toolset = options_.toolset;
    toolset.thread = session->thread;
    std::weak_ptr<HttpSession> weak = session;
    auto send = [weak](const nlohmann::json& message) {
      auto s = weak.lock();
      if (!s || !message.contains("id")) return;  // notifications have no POST to ride on
      const auto it = s->waiting.find(message["id"].dump());
      if (it == s->waiting.end()) return;
      it->second.answer = message;
      it->second.wake->expires_at(asio::steady_timer::time_point::min());
    };
    // A 2025 session's tools run under its own thread (disposed when it ends).
    auto context = std::make_shared<ServerContext>(*context_);
    context->legacy_tools = make_toolset(options_.router, options_.spec, toolset);
    session->mcp = std::make_unique<McpSession>(io_.get_executor(), std::move(context), send);
    sessions_.emplace(id, session);
    logger()->info("mcp: HTTP session {} opened (scope '{}' thread '{}')", id, toolset.scope, session->thread);
    return session;
  }

  awaitable<void> end(HttpSession& session) {
    session.ended = true;
    co_await session.mcp->drain();
    const ScopePurge purge = co_await options_.router->dispose_scope(options_.toolset.scope, session.thread);
    logger()->info("mcp: HTTP session of thread '{}' ended; disposed {} sandbox(es)", session.thread, purge.disposed);
    for (auto& [key, waiter] : session.waiting) waiter.wake->expires_at(asio::steady_timer::time_point::min());
  }

  asio::io_context& io_;
  const ServeOptions& options_;
  std::shared_ptr<ServerContext> context_;
  std::map<std::string, std::shared_ptr<HttpSession>> sessions_;
  /// 2026-07-28 requests being served, so shutdown can drain them.
  std::map<unsigned long, std::shared_ptr<HttpSession>> stateless_;
  unsigned long stateless_serial_ = 0;
  int opened_ = 0;
};

}  // namespace

int serve_http(const ServeOptions& options, const std::string& host, unsigned short port,
               std::function<void(unsigned short)> on_listening) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec || !address.is_loopback())
    throw ValueError("--http: '" + host + "' is not a loopback address; the MCP server has no authentication and "
                     "listens only on 127.0.0.1 or ::1");
  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(address, port));
  HttpServer server(io, options);
  on_listening(acceptor.local_endpoint().port());
  asio::co_spawn(io, server.listen(acceptor), asio::detached);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& e, int signo) {
    if (e) return;
    logger()->info("mcp: {}; ending every HTTP session", signo == SIGINT ? "SIGINT" : "SIGTERM");
    acceptor.close();
    asio::co_spawn(
        io,
        [&]() -> awaitable<void> {
          co_await server.close_all();
          io.stop();
        },
        asio::detached);
  });
  io.run();
  return 0;
}

}  // namespace maf::sandbox::mcp
