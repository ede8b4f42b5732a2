// AttachedCredential's validation (attached_identity.hpp; docs/policy.md CRED-1, CRED-2).
// The header and its format reach the proxy, which writes them into a request head: a CR, LF
// or framing header there would let a spec smuggle a second request or rewrite the body's
// length, so the spec refuses those shapes outright.
#include "maf/sandbox/attached_identity.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_name(std::string_view s) {
  if (s.empty() || s.size() > 64 || !std::isalpha(static_cast<unsigned char>(s.front()))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

bool is_env_name(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  if (!std::isalpha(static_cast<unsigned char>(s.front())) && s.front() != '_') return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// Headers whose value decides framing, routing or the connection: never the proxy's to fill.
constexpr std::array<std::string_view, 9> kReservedHeaders{
    "host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "keep-alive", "expect"};

/// Variables the backend sets itself (the proxy and the CA, issue 45): a placeholder there
/// would break the guest's way out.
constexpr std::array<std::string_view, 11> kReservedEnv{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE",
                                                        "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
                                                        "NODE_EXTRA_CA_CERTS", "PATH", "HOME", "ALL_PROXY"};

}  // namespace

AttachedCredential::AttachedCredential(Fields fields) : f_(std::move(fields)) {
  if (!is_name(f_.name))
    throw ValueError("attached_identity credential '" + f_.name +
                     "': a name is 1-64 characters, a letter then letters, digits, '_', '.' or '-'");
  const std::string where = "attached_identity credential '" + f_.name + "'";
  if (f_.hosts.empty())
    throw ValueError(where + " is bound to no host: list the egress_allow hosts it may be sent to");
  for (std::size_t i = 0; i < f_.hosts.size(); ++i) {
    const auto& host = f_.hosts[i];
    if (auto problem = egress_host_problem(host))
      throw ValueError(where + ": host '" + host + "' is not a host: " + *problem);
    if (host.rfind("*.", 0) == 0 && !f_.allow_wildcard)
      throw ValueError(where + ": host '" + host +
                       "' is a wildcard, which would send the secret to every name under it (many tenants); set "
                       "allow_wildcard to mean it");
    for (std::size_t j = 0; j < i; ++j)
      if (lower(f_.hosts[j]) == lower(host)) throw ValueError(where + ": host '" + host + "' is listed twice");
  }
  if (!is_http_token(f_.header))
    throw ValueError(where + ": header '" + f_.header + "' is not an HTTP field name (RFC 9110 token)");
  const std::string header = lower(f_.header);
  if (std::find(kReservedHeaders.begin(), kReservedHeaders.end(), header) != kReservedHeaders.end() ||
      header.rfind("proxy-", 0) == 0)
    throw ValueError(where + ": header '" + f_.header +
                     "' frames or routes the request (Host, Content-Length, Transfer-Encoding, Connection, "
                     "Upgrade, TE, Trailer, Keep-Alive, Expect, Proxy-*); the proxy does not fill it");
  for (char c : f_.format)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      throw ValueError(where + ": format holds a control or non-ASCII character; it must be printable ASCII");
  const auto at = f_.format.find("{value}");
  if (at == std::string::npos || f_.format.find("{value}", at + 1) != std::string::npos)
    throw ValueError(where + ": format '" + f_.format + "' must hold '{value}' exactly once");
  if (!f_.env) {
    std::string env = f_.name;
    for (auto& c : env) c = c == '-' || c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    f_.env = env;
  }
  if (!is_env_name(*f_.env))
    throw ValueError(where + ": env '" + *f_.env + "' is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
  std::string upper = *f_.env;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (std::find(kReservedEnv.begin(), kReservedEnv.end(), upper) != kReservedEnv.end() ||
      upper.rfind("MAF_SANDBOX_", 0) == 0)
    throw ValueError(where + ": env '" + *f_.env + "' is a variable the sandbox sets itself");
}

IdentityScope AttachedCredential::scope() const noexcept {
  const bool wildcard =
      std::any_of(f_.hosts.begin(), f_.hosts.end(), [](const std::string& h) { return h.rfind("*.", 0) == 0; });
  if (f_.sharing == CredentialSharing::Key || wildcard) return IdentityScope::Shared;
  return f_.lifetime == CredentialLifetime::Call ? IdentityScope::Call : IdentityScope::Sandbox;
}

}  // namespace maf::sandbox
