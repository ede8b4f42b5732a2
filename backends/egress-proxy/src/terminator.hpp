#pragma once
/// @file terminator.hpp
/// A CONNECT tunnel to a host with a method/path rule, terminated (docs/backends/egress-proxy.md
/// "Terminated hosts"): the guest's TLS ends here with a leaf minted by the per-sandbox CA
/// (tls_authority.hpp); each HTTP/1.1 request on the connection is parsed (tunnel_http.hpp),
/// checked against the rule (l7_rules.hpp) and either refused with a readable 403 or sent
/// upstream in canonical form over a second TLS connection that verifies the upstream
/// against the operator's trust store, with SNI and the verified name the rule's host.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decision_log.hpp"
#include "l7_rules.hpp"
#include "options.hpp"
#include "tls_authority.hpp"

namespace maf::sandbox::egress_proxy {

class Terminator {
public:
  /// Makes the CA (constrained to the rules' hosts) and the upstream client context. Throws
  /// std::runtime_error when OpenSSL fails or the trust store cannot be read.
  Terminator(boost::asio::io_context& io, const ProxyOptions& options, DecisionLog& log);

  const std::string& ca_certificate_pem() const noexcept { return authority_.certificate_pem(); }

  /// Serve one terminated tunnel; `d` is the CONNECT's decision so far (method, host, port).
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket client, Target target, const L7Rule& rule,
                                     std::vector<boost::asio::ip::tcp::endpoint> endpoints, Decision d);

private:
  std::shared_ptr<boost::asio::ssl::context> server_context(const std::string& host);

  boost::asio::io_context& io_;
  const ProxyOptions& options_;
  DecisionLog& log_;
  TlsAuthority authority_;
  boost::asio::ssl::context upstream_;
  struct Cached {
    std::shared_ptr<boost::asio::ssl::context> context;
    std::chrono::system_clock::time_point not_after;
  };
  std::map<std::string, Cached> contexts_;
};

}  // namespace maf::sandbox::egress_proxy
