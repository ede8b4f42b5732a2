// The proxy's network side (proxy_server.hpp).
#include "proxy_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <functional>
#include <memory>

#include "request.hpp"
#include "watchdog.hpp"

namespace maf::sandbox::egress_proxy {

namespace asio = boost::asio;
using asio::awaitable;
using asio::ip::tcp;

const char* status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

namespace {

awaitable<void> answer(tcp::socket& socket, int status, const std::string& body = {}) {
  const std::string response = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
                               (body.empty() ? "" : "\r\ncontent-type: text/plain; charset=utf-8") +
                               "\r\ncontent-length: " + std::to_string(body.size()) + "\r\nconnection: close\r\n\r\n" + body;
  boost::system::error_code ec;
  co_await asio::async_write(socket, asio::buffer(response), asio::redirect_error(asio::use_awaitable, ec));
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

/// Both legs of an open tunnel, shared by its two pumps.
struct Link {
  Link(tcp::socket c, tcp::socket u) : client(std::move(c)), upstream(std::move(u)) {}
  tcp::socket client;
  tcp::socket upstream;
  std::uint64_t bytes_up = 0, bytes_down = 0;
  void close_both() {
    boost::system::error_code ec;
    client.close(ec);
    upstream.close(ec);
  }
};

awaitable<void> pump(std::shared_ptr<Link> link, bool upward, std::shared_ptr<Watchdog> idle,
                     std::chrono::milliseconds idle_after, bool close_on_end) {
  tcp::socket& from = upward ? link->client : link->upstream;
  tcp::socket& to = upward ? link->upstream : link->client;
  std::uint64_t& counter = upward ? link->bytes_up : link->bytes_down;
  std::array<char, 64 * 1024> buffer;
  for (;;) {
    boost::system::error_code ec;
    const std::size_t n =
        co_await from.async_read_some(asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
    if (n > 0) {
      idle->extend(idle_after);
      boost::system::error_code wec;
      co_await asio::async_write(to, asio::buffer(buffer.data(), n), asio::redirect_error(asio::use_awaitable, wec));
      if (wec) break;
      counter += n;
    }
    if (ec == asio::error::eof && !close_on_end) {
      // Half-close: the other direction may still be talking (TLS close_notify, a reply).
      boost::system::error_code sec;
      to.shutdown(tcp::socket::shutdown_send, sec);
      co_return;
    }
    if (ec) break;
  }
  link->close_both();
}

}  // namespace

std::size_t ProxyServer::close_disallowed() {
  if (options_.broken_control) return 0;  // the test double keeps every tunnel open
  std::size_t closed = 0;
  for (auto& [id, link] : links_)
    if (!options_.rules.find(link.kind == RequestKind::Connect, link.target.host, link.target.port) &&
        !options_.allow.allows(link.kind, link.target)) {
      link.close();
      ++closed;
    }
  return closed;
}

awaitable<void> ProxyServer::run(tcp::acceptor acceptor) {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;  // e.g. EMFILE: keep serving the connections we have
    if (active_ >= options_.max_connections) {
      Decision d;
      d.decision = "busy";
      d.status = 503;
      d.reason = "more than " + std::to_string(options_.max_connections) + " connections open";
      log_.write(d);
      co_await answer(socket, 503);
      continue;
    }
    ++active_;
    asio::co_spawn(io_, serve(std::move(socket)), [this](std::exception_ptr) { --active_; });
  }
}

awaitable<void> ProxyServer::serve(tcp::socket client) {
  Decision d;
  // 1. One head, bounded in bytes and time.
  std::string buffer;
  std::size_t head_end = std::string::npos;
  {
    auto deadline = std::make_shared<Watchdog>(io_, [&client] {
      boost::system::error_code ec;
      client.cancel(ec);
    });
    deadline->start(options_.head_timeout);
    std::array<char, 4096> chunk;
    while (head_end == std::string::npos && buffer.size() <= options_.max_head_bytes) {
      boost::system::error_code ec;
      const std::size_t n =
          co_await client.async_read_some(asio::buffer(chunk), asio::redirect_error(asio::use_awaitable, ec));
      buffer.append(chunk.data(), n);
      head_end = find_head_end(buffer);
      if (ec) break;
    }
    deadline->stop();
    if (head_end == std::string::npos) {
      d.decision = "bad-request";
      d.status = buffer.size() > options_.max_head_bytes ? 431 : 400;
      d.reason = deadline->expired() ? "no complete request head within the head timeout"
                 : d.status == 431   ? "request head too large"
                                     : "connection ended before a complete request head";
      log_.write(d);
      co_await answer(client, d.status);
      co_return;
    }
  }
  const std::string head = buffer.substr(0, head_end);
  std::string early = buffer.substr(head_end);  // bytes the client sent after the head

  // 2. Parse and decide.
  ParseResult parsed = parse_request_head(head, options_.max_head_bytes);
  if (!parsed.request) {
    d.decision = "bad-request";
    d.status = parsed.status;
    d.reason = parsed.reason;
    log_.write(d);
    co_await answer(client, d.status);
    co_return;
  }
  ProxyRequest& request = *parsed.request;
  d.method = request.method;
  d.host = request.target.host;
  d.port = request.target.port;
  // A host with a method/path rule (l7_rules.hpp) is allowed as far as its rule allows.
  const L7Rule* rule = options_.rules.find(request.kind == RequestKind::Connect, request.target.host, request.target.port);
  if (rule && request.kind == RequestKind::Connect && !terminator_) rule = nullptr;  // unreachable: main makes one
  if (rule) {
    d.rule = rule->describe();
    if (request.kind == RequestKind::Forward) {
      // Plain http:// is checked against the same rule, and sent in canonical form.
      const L7Verdict verdict = check_request(*rule, request.method, request.origin_target, request.target.host);
      d.path = verdict.canonical_path;
      if (!verdict.allowed) {
        d.decision = "deny";
        d.status = verdict.status;
        d.reason = verdict.reason;
        log_.write(d);
        co_await answer(client, verdict.status, refusal_body(verdict.reason));
        co_return;
      }
      const auto line_end = request.upstream_head.find(' ', request.method.size() + 1);
      request.upstream_head.replace(request.method.size() + 1, line_end - request.method.size() - 1,
                                    verdict.upstream_target);
    }
  } else if (!options_.allow.allows(request.kind, request.target)) {
    // EGU-4: a host no rule covers is the host decider's to answer, when one is attached.
    std::optional<DeciderAnswer> decided;
    if (control_ && control_->has_decider())
      decided = co_await control_->ask(request.method, request.target.host, request.target.port);
    if (decided && options_.broken_control) {  // the test double: no reason, silence allows
      decided->reason.clear();
      if (decided->timed_out) decided->verdict = DeciderVerdict::AllowOnce;
    }
    if (!decided || decided->verdict == DeciderVerdict::Deny) {
      d.decision = "deny";
      d.status = 403;
      d.reason = !decided ? "not on the allowlist"
                          : "the host decider denied" + (decided->reason.empty() ? "" : ": " + decided->reason);
      log_.write(d);
      // Named, not a conditional temporary in the co_await: GCC 12 frees such a temporary twice.
      std::string body;
      if (decided) body = refusal_body(d.reason);
      co_await answer(client, 403, body);
      co_return;
    }
    if (decided->verdict == DeciderVerdict::AllowSandbox)
      options_.allow.add(Allowlist::parse(
          (request.target.host.find(':') != std::string::npos ? "[" + request.target.host + "]" : request.target.host) +
          ":" + std::to_string(request.target.port)));
    d.reason = decided->verdict == DeciderVerdict::AllowOnce ? "the host decider allowed it once"
                                                             : "the host decider allowed it for the sandbox's life";
  }
  // CRED-8: a plain http:// request is brokered only where its credential allows http.
  if (request.kind == RequestKind::Forward && !options_.credentials.empty()) {
    const auto line_end = request.upstream_head.find("\r\n");
    std::string fields = request.upstream_head.substr(line_end + 2);
    const BrokerOutcome brokered =
        options_.credentials.apply(std::string_view(request.upstream_head).substr(0, line_end), fields,
                                   request.target.host, false, !options_.pass_through);
    if (brokered.refused) {
      d.decision = "deny";
      d.status = 403;
      d.reason = brokered.reason;
      d.credential = brokered.credential;
      log_.write(d);
      co_await answer(client, 403, refusal_body(brokered.reason));
      co_return;
    }
    request.upstream_head.replace(line_end + 2, std::string::npos, fields);
    for (const auto& name : brokered.swapped) d.credential += (d.credential.empty() ? "" : ",") + name;
  }

  // 3. Resolve here, never in the sandbox: a pin is trusted, anything else must be global.
  std::vector<tcp::endpoint> endpoints;
  const std::string port_text = std::to_string(request.target.port);
  if (const auto* pinned = options_.pins.lookup(request.target.host)) {
    for (const auto& ip : *pinned) endpoints.emplace_back(asio::ip::make_address(ip), request.target.port);
  } else {
    std::vector<std::string> found;
    if (auto literal = canonical_ip(request.target.host)) {
      found.push_back(*literal);
    } else {
      tcp::resolver resolver(io_);
      auto deadline = std::make_shared<Watchdog>(io_, [&resolver] { resolver.cancel(); });
      deadline->start(options_.connect_timeout);
      boost::system::error_code ec;
      auto results = co_await resolver.async_resolve(request.target.host, port_text,
                                                     asio::redirect_error(asio::use_awaitable, ec));
      deadline->stop();
      if (!ec)
        for (const auto& r : results) found.push_back(r.endpoint().address().to_string());
      if (found.empty()) {
        d.decision = "unreachable";
        d.status = 502;
        d.reason = "name did not resolve" + (ec ? ": " + ec.message() : std::string());
        log_.write(d);
        co_await answer(client, 502);
        co_return;
      }
    }
    for (const auto& ip : found) {
      if (!is_globally_routable(ip)) {
        // Refuse outright rather than skip the address: a mixed answer is a rebinding shape.
        d.decision = "deny-nonglobal";
        d.status = 403;
        d.reason = "resolves to " + ip + ", which is not globally routable";
        log_.write(d);
        co_await answer(client, 403);
        co_return;
      }
      endpoints.emplace_back(asio::ip::make_address(ip), request.target.port);
    }
  }

  // A terminated tunnel dials when its first request is allowed (terminator.hpp).
  if (rule && request.kind == RequestKind::Connect) {
    co_await terminator_->serve(std::move(client), request.target, *rule, std::move(endpoints), std::move(d));
    co_return;
  }

  // 4. Dial the checked addresses, bounded.
  tcp::socket upstream(io_);
  {
    auto deadline = std::make_shared<Watchdog>(io_, [&upstream] {
      boost::system::error_code ec;
      upstream.close(ec);
    });
    deadline->start(options_.connect_timeout);
    boost::system::error_code ec;
    co_await asio::async_connect(upstream, endpoints, asio::redirect_error(asio::use_awaitable, ec));
    deadline->stop();
    if (ec || !upstream.is_open()) {
      d.decision = "unreachable";
      d.status = 502;
      d.reason = deadline->expired() ? "dial timed out" : "dial failed: " + ec.message();
      log_.write(d);
      co_await answer(client, 502);
      co_return;
    }
  }

  // 5. Open the link: 200 for a tunnel, the rewritten head for a forward.
  boost::system::error_code ec;
  if (request.kind == RequestKind::Connect) {
    static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection Established\r\n\r\n";
    co_await asio::async_write(client, asio::buffer(kEstablished), asio::redirect_error(asio::use_awaitable, ec));
  } else {
    early.insert(0, request.upstream_head);
  }
  if (!ec && !early.empty())
    co_await asio::async_write(upstream, asio::buffer(early), asio::redirect_error(asio::use_awaitable, ec));
  d.decision = "allow";
  // A relay forwards bytes as they come: no Nagle delay on either leg.
  client.set_option(tcp::no_delay(true), ec);
  upstream.set_option(tcp::no_delay(true), ec);
  ec.clear();
  auto link = std::make_shared<Link>(std::move(client), std::move(upstream));
  // EGU-2: registered while open, so an update that narrows the allowlist can close it.
  const std::uint64_t link_id = next_link_++;
  links_.emplace(link_id, OpenLink{request.kind, request.target, [weak = std::weak_ptr<Link>(link)] {
                                     if (auto l = weak.lock()) l->close_both();
                                   }});
  if (!ec) {
    if (request.kind == RequestKind::Forward) link->bytes_up += early.size();
    auto idle = std::make_shared<Watchdog>(io_, [link] { link->close_both(); });
    idle->start(options_.idle_timeout);
    // A forward is one exchange (Connection: close): the reply ending ends the link.
    const bool forward = request.kind == RequestKind::Forward;
    auto done = std::make_shared<asio::steady_timer>(io_, Clock::time_point::max());
    auto remaining = std::make_shared<int>(2);
    auto finish = [done, remaining](std::exception_ptr) {
      if (--*remaining == 0) done->cancel();
    };
    asio::co_spawn(io_, pump(link, true, idle, options_.idle_timeout, false), finish);
    asio::co_spawn(io_, pump(link, false, idle, options_.idle_timeout, forward), finish);
    boost::system::error_code wait_ec;
    co_await done->async_wait(asio::redirect_error(asio::use_awaitable, wait_ec));
    idle->stop();
  }
  links_.erase(link_id);
  link->close_both();
  d.bytes_up = link->bytes_up;
  d.bytes_down = link->bytes_down;
  log_.write(d);
}

}  // namespace maf::sandbox::egress_proxy
