// A terminated CONNECT tunnel (terminator.hpp).
#include "terminator.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "pinned_names.hpp"
#include "tunnel_http.hpp"
#include "watchdog.hpp"

namespace maf::sandbox::egress_proxy {

using asio::awaitable;
using asio::ip::tcp;
namespace ssl = asio::ssl;
using TlsStream = ssl::stream<tcp::socket>;

namespace {

constexpr auto use = asio::use_awaitable;
/// One TLS record: the pumps of a terminated connection hold no more than this each.
constexpr std::size_t kPumpBytes = 16 * 1024;

/// ALPN: HTTP/1.1 only (h2 would need per-stream checks this proxy does not make). A client
/// offering only h2 gets no ALPN answer and then speaks HTTP/1.1 or fails.
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                void*) {
  static constexpr unsigned char kHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};
  for (unsigned int i = 0; i < inlen;) {
    const unsigned len = in[i];
    if (i + 1 + len > inlen) break;
    if (len == sizeof kHttp11 && std::equal(kHttp11, kHttp11 + len, in + i + 1)) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

std::string response(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
         "\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: " + std::to_string(body.size()) +
         "\r\nconnection: close\r\n\r\n" + body;
}

std::string ssl_reason(const boost::system::error_code& ec) {
  std::string text = ec.message();
  return text.empty() ? "TLS error" : text;
}

/// The upstream leg and its response pump (upstream to guest).
struct Upstream {
  explicit Upstream(tcp::socket s, ssl::context& ctx) : stream(std::move(s), ctx) {}
  TlsStream stream;
  bool pumping = false;
  std::shared_ptr<asio::steady_timer> pump_done;
  std::uint64_t bytes_down = 0;
};

awaitable<void> pump_down(std::shared_ptr<Upstream> up, TlsStream& client, std::shared_ptr<Watchdog> idle,
                          std::chrono::milliseconds idle_after) {
  std::array<char, kPumpBytes> buffer;
  for (;;) {
    boost::system::error_code ec;
    const std::size_t n = co_await up->stream.async_read_some(asio::buffer(buffer), asio::redirect_error(use, ec));
    if (n > 0) {
      idle->extend(idle_after);
      boost::system::error_code wec;
      co_await asio::async_write(client, asio::buffer(buffer.data(), n), asio::redirect_error(use, wec));
      if (wec) break;
      up->bytes_down += n;
    }
    if (ec) break;
  }
  // The upstream ended (or failed): the guest's connection ends with it, so the next request
  // opens a new tunnel, checked from its CONNECT on.
  boost::system::error_code ignored;
  client.lowest_layer().close(ignored);
}

}  // namespace

Terminator::Terminator(asio::io_context& io, const ProxyOptions& options, DecisionLog& log)
    : io_(io),
      options_(options),
      log_(log),
      authority_([&] {
        std::vector<std::string> hosts;
        for (const auto& r : options.rules.rules()) hosts.push_back((r.host.wildcard ? "*." : "") + r.host.host);
        return hosts;
      }()),
      upstream_(ssl::context::tls_client) {
  upstream_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                        ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  upstream_.set_verify_mode(ssl::verify_peer);
  // Idle kept-alive connections give their record buffers back (issue 45: memory per open
  // terminated connection).
  SSL_CTX_set_mode(upstream_.native_handle(), SSL_MODE_RELEASE_BUFFERS);
  boost::system::error_code ec;
  if (options.upstream_ca_file) {
    upstream_.load_verify_file(*options.upstream_ca_file, ec);
    if (ec) throw std::runtime_error("cannot read upstream trust store '" + *options.upstream_ca_file + "': " + ec.message());
  } else if (options.upstream_ca_pem) {
    upstream_.add_certificate_authority(asio::buffer(*options.upstream_ca_pem), ec);
    if (ec) throw std::runtime_error("MAF_SANDBOX_UPSTREAM_CA_PEM holds no readable certificate: " + ec.message());
  } else {
    // A missing default store is no start-up failure: every upstream then fails to verify,
    // a 502 naming why (the image was built without one and the operator mounted none).
    upstream_.load_verify_file(kDefaultTrustStore, ec);
  }
}

std::shared_ptr<ssl::context> Terminator::server_context(const std::string& host) {
  const auto now = std::chrono::system_clock::now();
  if (auto it = contexts_.find(host); it != contexts_.end() && it->second.not_after - now > std::chrono::hours(1))
    return it->second.context;
  const Leaf& leaf = authority_.leaf_for(host);
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  SSL_CTX* native = ctx->native_handle();
  if (SSL_CTX_use_certificate(native, leaf.certificate.get()) != 1 || SSL_CTX_use_PrivateKey(native, leaf.key) != 1)
    throw std::runtime_error("could not install the leaf certificate for " + host);
  SSL_CTX_set_alpn_select_cb(native, select_alpn, nullptr);
  SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
  contexts_[host] = Cached{ctx, leaf.not_after};
  return ctx;
}

awaitable<void> Terminator::serve(tcp::socket client_socket, Target target, const L7Rule& rule,
                                  std::vector<tcp::endpoint> endpoints, Decision d) {
  const std::string rule_text = rule.describe();
  d.rule = rule_text;
  boost::system::error_code ec;
  static constexpr std::string_view kEstablished = "HTTP/1.1 200 Connection Established\r\n\r\n";
  co_await asio::async_write(client_socket, asio::buffer(kEstablished), asio::redirect_error(use, ec));
  if (ec) co_return;

  // 1. The guest's TLS, with a leaf for the CONNECT target (the rule's host), bounded.
  std::shared_ptr<ssl::context> server_ctx;
  try {
    server_ctx = server_context(target.host);
  } catch (const std::exception& e) {
    d.decision = "unreachable";
    d.reason = e.what();
    log_.write(d);
    co_return;
  }
  client_socket.set_option(tcp::no_delay(true), ec);  // records go out as written
  TlsStream client(std::move(client_socket), *server_ctx);
  auto idle = std::make_shared<Watchdog>(io_, [&client] {
    boost::system::error_code ignored;
    client.lowest_layer().close(ignored);
  });
  idle->start(options_.head_timeout);
  co_await client.async_handshake(ssl::stream_base::server, asio::redirect_error(use, ec));
  if (ec) {
    idle->stop();
    // A client that does not trust this sandbox's CA (a pinned client, or one not told of
    // the CA) ends here: it fails closed, and the log says so.
    d.decision = "deny";
    d.reason = "the guest's TLS handshake with the proxy failed (a client pinning another CA, or not given the "
               "sandbox CA, fails closed): " + ssl_reason(ec);
    log_.write(d);
    co_return;
  }
  // SNI, when sent, must name the CONNECT target: the name the guest asked TLS for is the
  // name the rule was matched against.
  const bool check = !options_.pass_through;  // the conformance double checks nothing
  if (const char* sni = check ? SSL_get_servername(client.native_handle(), TLSEXT_NAMETYPE_host_name) : nullptr) {
    const auto named = normalize_host(sni);
    if (!named || *named != target.host) {
      d.decision = "deny";
      d.status = 403;
      d.reason = "refused: TLS server name " + std::string(sni) + " is not the CONNECT target " + target.host;
      log_.write(d);
      const std::string out = response(403, refusal_body(d.reason));
      co_await asio::async_write(client, asio::buffer(out), asio::redirect_error(use, ec));
      idle->stop();
      client.lowest_layer().close(ec);
      co_return;
    }
  }

  // 2. Requests, one after another on the kept-alive connection, each checked.
  std::shared_ptr<Upstream> up;
  std::string buffer;
  std::array<char, kPumpBytes> chunk;
  auto finish = [&](int status, const std::string& reason) -> awaitable<void> {
    // Stop the upstream first, so the refusal is the last thing the guest reads.
    if (up && up->pumping) {
      up->stream.lowest_layer().close(ec);
      co_await up->pump_done->async_wait(asio::redirect_error(use, ec));
    }
    if (status != 0 && client.lowest_layer().is_open()) {
      const std::string out = response(status, refusal_body(reason));
      co_await asio::async_write(client, asio::buffer(out), asio::redirect_error(use, ec));
    }
    idle->stop();
    client.lowest_layer().close(ec);
  };
  auto read_more = [&]() -> awaitable<bool> {
    const std::size_t n = co_await client.async_read_some(asio::buffer(chunk), asio::redirect_error(use, ec));
    buffer.append(chunk.data(), n);
    if (n > 0) idle->extend(options_.idle_timeout);
    co_return n > 0 || !ec;
  };
  idle->extend(options_.idle_timeout);
  for (;;) {
    std::size_t head_end = find_head_end(buffer);
    while (head_end == std::string::npos && buffer.size() <= options_.max_head_bytes) {
      if (!co_await read_more()) {
        co_await finish(0, "");
        co_return;
      }
      head_end = find_head_end(buffer);
    }
    Decision r = d;
    if (head_end == std::string::npos) {
      r.decision = "bad-request";
      r.status = 431;
      r.reason = "request head too large";
      log_.write(r);
      co_await finish(431, r.reason);
      co_return;
    }
    TunnelParse parsed =
        parse_tunnel_request(std::string_view(buffer).substr(0, head_end), target, options_.max_head_bytes, check);
    buffer.erase(0, head_end);
    if (!parsed.request) {
      r.decision = parsed.status == 403 ? "deny" : "bad-request";
      r.status = parsed.status;
      r.reason = (parsed.status == 403 ? "refused: " : "bad request: ") + parsed.reason;
      log_.write(r);
      co_await finish(parsed.status, r.reason);
      co_return;
    }
    TunnelRequest request = std::move(*parsed.request);
    r.method = request.method;
    L7Verdict verdict = check_request(rule, request.method, request.target, target.host);
    if (!check) verdict = L7Verdict{true, 0, request.target, request.target, {}};
    r.path = verdict.canonical_path;
    if (check && verdict.allowed && request.upgrade) {
      verdict.allowed = false;
      verdict.status = 403;
      verdict.reason = "refused " + request.method + " " + verdict.canonical_path + " on " + target.host +
                       ": protocol upgrades (WebSocket, h2c) are not allowed on a host with method/path rules";
    }
    if (!verdict.allowed) {
      r.decision = "deny";
      r.status = verdict.status;
      r.reason = verdict.reason;
      log_.write(r);
      co_await finish(verdict.status, verdict.reason);
      co_return;
    }
    // CRED-8: brokered credentials, after the rule and Host checks, before a byte goes up.
    if (!options_.credentials.empty()) {
      const BrokerOutcome brokered = options_.credentials.apply(request.target, request.fields, target.host, true, check);
      if (brokered.refused) {
        r.decision = "deny";
        r.status = 403;
        r.reason = brokered.reason;
        r.credential = brokered.credential;
        log_.write(r);
        co_await finish(403, brokered.reason);
        co_return;
      }
      for (const auto& name : brokered.swapped) r.credential += (r.credential.empty() ? "" : ",") + name;
    }

    // 3. The upstream, dialled and verified at the first allowed request.
    if (!up) {
      tcp::socket socket(io_);
      auto dial = std::make_shared<Watchdog>(io_, [&socket] {
        boost::system::error_code ignored;
        socket.close(ignored);
      });
      dial->start(options_.connect_timeout);
      co_await asio::async_connect(socket, endpoints, asio::redirect_error(use, ec));
      std::string failure;
      if (ec || !socket.is_open()) failure = dial->expired() ? "dial timed out" : "dial failed: " + ec.message();
      if (failure.empty()) {
        socket.set_option(tcp::no_delay(true), ec);
        up = std::make_shared<Upstream>(std::move(socket), upstream_);
        SSL* native = up->stream.native_handle();
        const bool literal = canonical_ip(target.host).has_value();
        if (!literal) SSL_set_tlsext_host_name(native, target.host.c_str());
        if (literal) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(native), target.host.c_str());
        else SSL_set1_host(native, target.host.c_str());
        if (!check) SSL_set_verify(native, SSL_VERIFY_NONE, nullptr);
        static constexpr unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
        SSL_set_alpn_protos(native, kAlpn, sizeof kAlpn);
        co_await up->stream.async_handshake(ssl::stream_base::client, asio::redirect_error(use, ec));
        if (ec) {
          const long verify = SSL_get_verify_result(native);
          failure = verify != X509_V_OK ? "the upstream certificate of " + target.host + " did not verify: " +
                                              X509_verify_cert_error_string(verify)
                    : dial->expired() ? "TLS handshake with the upstream timed out"
                                      : "TLS handshake with the upstream failed: " + ssl_reason(ec);
          up.reset();
        }
      }
      dial->stop();
      if (!failure.empty()) {
        r.decision = "unreachable";
        r.status = 502;
        r.reason = failure;
        log_.write(r);
        co_await finish(502, failure);
        co_return;
      }
      up->pumping = true;
      up->pump_done = std::make_shared<asio::steady_timer>(io_, Clock::time_point::max());
      asio::co_spawn(io_, pump_down(up, client, idle, options_.idle_timeout),
                     [up](std::exception_ptr) {
                       up->pumping = false;
                       up->pump_done->cancel();
                     });
    }

    // 4. The checked head, canonical target, then exactly the body its framing announces.
    r.decision = "allow";
    log_.write(r);
    const std::string head = tunnel_upstream_head(request, verdict.upstream_target);
    co_await asio::async_write(up->stream, asio::buffer(head), asio::redirect_error(use, ec));
    if (ec) break;
    if (request.framing == BodyFraming::Length) {
      std::uint64_t left = request.content_length;
      while (left > 0) {
        if (buffer.empty() && !co_await read_more()) break;
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left, buffer.size()));
        co_await asio::async_write(up->stream, asio::buffer(buffer.data(), take), asio::redirect_error(use, ec));
        if (ec) break;
        buffer.erase(0, take);
        left -= take;
      }
      if (left > 0) break;
    } else if (request.framing == BodyFraming::Chunked) {
      ChunkedScanner scanner;
      bool done = false;
      while (!done) {
        if (buffer.empty() && !co_await read_more()) break;
        const auto step = scanner.feed(buffer);
        if (step.error) {
          Decision bad = r;
          bad.decision = "bad-request";
          bad.reason = "malformed chunked body";
          log_.write(bad);
          break;
        }
        co_await asio::async_write(up->stream, asio::buffer(buffer.data(), step.consumed), asio::redirect_error(use, ec));
        if (ec) break;
        buffer.erase(0, step.consumed);
        done = step.done;
      }
      if (!done) break;
    }
  }
  co_await finish(0, "");
}

}  // namespace maf::sandbox::egress_proxy
