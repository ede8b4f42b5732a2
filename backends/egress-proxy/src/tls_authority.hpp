#pragma once
/// @file tls_authority.hpp
/// The proxy's per-sandbox certificate authority (docs/backends/egress-proxy.md "Terminated
/// hosts"). The key pair is made in memory when the proxy starts and never leaves the
/// process: no file, no environment variable, no log line holds it; only the certificate is
/// printed (in the readiness line) for the backend to place in the guest. A proxy serves one
/// sandbox, so the CA is per sandbox, and it dies with the proxy.
///
/// The CA certificate carries name constraints: it can vouch only for the hosts the rules
/// name (X.509 nameConstraints, which OpenSSL, Go, Node and Python's ssl honour), so even a
/// stolen key would not let its holder impersonate any other host to the guest. Leaf
/// certificates are minted per host name on first use, cached, valid for one day, and
/// re-minted when within an hour of expiry. OpenSSL only; no Asio.

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace maf::sandbox::egress_proxy {

struct X509Free {
  void operator()(X509* x) const noexcept { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

/// A minted leaf: certificate and the (shared) leaf key.
struct Leaf {
  X509Ptr certificate;
  EVP_PKEY* key = nullptr;  ///< owned by the authority
  std::chrono::system_clock::time_point not_after;
};

class TlsAuthority {
public:
  /// `permitted`: the rule hosts (normalised; a wildcard as "*.base"; IP literals as text)
  /// the CA may vouch for. Throws std::runtime_error when OpenSSL fails.
  explicit TlsAuthority(const std::vector<std::string>& permitted);

  /// The CA certificate, PEM.
  const std::string& certificate_pem() const noexcept { return ca_pem_; }
  /// A leaf for `host` (a normalised name or IP literal), minted now or taken from the cache.
  const Leaf& leaf_for(const std::string& host);

  static constexpr std::chrono::hours kLeafLifetime{24};

private:
  KeyPtr ca_key_;
  X509Ptr ca_;
  KeyPtr leaf_key_;
  std::string ca_pem_;
  std::map<std::string, Leaf> leaves_;
};

}  // namespace maf::sandbox::egress_proxy
