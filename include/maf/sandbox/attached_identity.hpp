#pragma once
/// @file attached_identity.hpp
/// Attached authority (docs/policy.md "Attached identity", CRED-1…CRED-5): credentials the
/// host holds and a sandbox's egress proxy brokers toward bound hosts only.
///
/// A spec names each credential (`AttachedCredential`): where it may be sent (hosts of the
/// spec's `egress_allow`), the request header it fills (`Authorization: Bearer {value}`, or
/// any named header), the guest environment variable that carries its *placeholder*, its
/// lifetime and its sharing. The value is never in the spec: the host supplies it through a
/// `CredentialSource` (credential_source.hpp) at acquire, the backend hands it to the proxy by a channel the guest
/// cannot read, and the guest sees only a random per-sandbox placeholder, which the proxy
/// swaps for the value in requests to a bound host after its rule and Host checks.
///
/// How much of this a host allows is `RouterOptions::max_identity_scope` (CRED-5): its
/// default, `none`, refuses every spec that names a credential.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// How long a value, once supplied, may be used (CRED-3).
enum class CredentialLifetime {
  Sandbox,  ///< "sandbox": asked once at acquire, held by the proxy until the sandbox goes
  Call,     ///< "call": asked again for each call; needs a backend that can swap it live
};

template <>
struct EnumTraits<CredentialLifetime> {
  static constexpr std::string_view type_name = "CredentialLifetime";
  static constexpr std::array<std::pair<CredentialLifetime, std::string_view>, 2> values{{
      {CredentialLifetime::Sandbox, "sandbox"},
      {CredentialLifetime::Call, "call"},
  }};
};

/// Who may use one supplied value (CRED-3).
enum class CredentialSharing {
  Sandbox,  ///< "sandbox": this sandbox's proxy only, under a placeholder of its own
  Key,      ///< "key": every sandbox of the same SandboxKey (replicas, kinds) may be given it
};

template <>
struct EnumTraits<CredentialSharing> {
  static constexpr std::string_view type_name = "CredentialSharing";
  static constexpr std::array<std::pair<CredentialSharing, std::string_view>, 2> values{{
      {CredentialSharing::Sandbox, "sandbox"},
      {CredentialSharing::Key, "key"},
  }};
};

/// The host's ceiling on attached authority (CRED-5), a ladder: `none` < `call` < `sandbox` <
/// `shared`. A credential's scope is the widest of its lifetime and sharing: lifetime `call`
/// and sharing `sandbox` is `call`; lifetime `sandbox` is `sandbox`; sharing `key` is
/// `shared`. A wildcard-bound credential (`allow_wildcard`) counts as `shared` too: it may go
/// to many tenants.
enum class IdentityScope {
  None,     ///< "none": no credential at all (the default)
  Call,     ///< "call": values that live for one call, in one sandbox
  Sandbox,  ///< "sandbox": values that live as long as one sandbox
  Shared,   ///< "shared": values shared by a key's sandboxes, or sent to wildcard hosts
};

template <>
struct EnumTraits<IdentityScope> {
  static constexpr std::string_view type_name = "IdentityScope";
  static constexpr std::array<std::pair<IdentityScope, std::string_view>, 4> values{{
      {IdentityScope::None, "none"},
      {IdentityScope::Call, "call"},
      {IdentityScope::Sandbox, "sandbox"},
      {IdentityScope::Shared, "shared"},
  }};
};

constexpr std::string_view to_string(CredentialLifetime v) noexcept { return enum_value(v); }
constexpr std::string_view to_string(CredentialSharing v) noexcept { return enum_value(v); }
constexpr std::string_view to_string(IdentityScope v) noexcept { return enum_value(v); }

/// One credential a workload may use through the proxy (CRED-1, CRED-2). Validated at
/// construction; each refusal is a ValueError naming the credential and the field.
class AttachedCredential {
public:
  struct Fields {
    /// `[A-Za-z][A-Za-z0-9_.-]{0,63}`: how the host's source, the router's refusals and the
    /// proxy's log name it (never the value).
    std::string name{};
    /// Where it may be sent: each an `egress_allow` host of the same spec (same spelling,
    /// case-insensitive), at least one. A wildcard host needs `allow_wildcard`.
    std::vector<std::string> hosts{};
    /// The request header the proxy fills: an RFC 9110 token, not a framing or hop-by-hop
    /// header (Host, Content-Length, Transfer-Encoding, Connection, Upgrade, TE, Trailer,
    /// Keep-Alive, Proxy-*).
    std::string header = "Authorization";
    /// The header's value with `{value}` exactly once where the secret goes, e.g.
    /// `Bearer {value}`; printable ASCII only.
    std::string format = "Bearer {value}";
    /// The guest environment variable holding the placeholder; absent = `name` upper-cased
    /// with '-' and '.' as '_'. `[A-Za-z_][A-Za-z0-9_]*`, not a proxy or CA variable.
    std::optional<std::string> env{};
    CredentialLifetime lifetime = CredentialLifetime::Sandbox;
    CredentialSharing sharing = CredentialSharing::Sandbox;
    /// Swap the placeholder in plain `http://` requests too (off: the value would cross the
    /// network in clear; docs/backends/egress-proxy.md "Brokered credentials").
    bool allow_http = false;
    /// Permit a wildcard host (`*.example.com`), which may reach many tenants (CRED-2).
    bool allow_wildcard = false;
  };

  explicit AttachedCredential(Fields fields);

  const std::string& name() const noexcept { return f_.name; }
  const std::vector<std::string>& hosts() const noexcept { return f_.hosts; }
  const std::string& header() const noexcept { return f_.header; }
  const std::string& format() const noexcept { return f_.format; }
  /// The placeholder's variable, the default filled in.
  const std::string& env() const noexcept { return *f_.env; }
  CredentialLifetime lifetime() const noexcept { return f_.lifetime; }
  CredentialSharing sharing() const noexcept { return f_.sharing; }
  bool allow_http() const noexcept { return f_.allow_http; }
  bool allow_wildcard() const noexcept { return f_.allow_wildcard; }
  /// The credential's rung on the IdentityScope ladder (CRED-5).
  IdentityScope scope() const noexcept;
  const Fields& fields() const noexcept { return f_; }
  friend bool operator==(const AttachedCredential& a, const AttachedCredential& b) {
    const auto& x = a.f_;
    const auto& y = b.f_;
    return x.name == y.name && x.hosts == y.hosts && x.header == y.header && x.format == y.format && x.env == y.env &&
           x.lifetime == y.lifetime && x.sharing == y.sharing && x.allow_http == y.allow_http &&
           x.allow_wildcard == y.allow_wildcard;
  }

private:
  Fields f_;
};

/// A credential's value as the host hands it over: movable, never printable (no operator<<,
/// no to_string), wiped when destroyed. `reveal()` is for the one place that writes it to
/// the proxy's private channel.
class SecretValue {
public:
  SecretValue() = default;
  explicit SecretValue(std::string value) : value_(std::move(value)) {}
  SecretValue(SecretValue&& other) noexcept : value_(std::move(other.value_)) { other.wipe(); }
  SecretValue& operator=(SecretValue&& other) noexcept {
    if (this != &other) {
      wipe();
      value_ = std::move(other.value_);
      other.wipe();
    }
    return *this;
  }
  SecretValue(const SecretValue&) = delete;
  SecretValue& operator=(const SecretValue&) = delete;
  ~SecretValue() { wipe(); }

  bool empty() const noexcept { return value_.empty(); }
  const std::string& reveal() const noexcept { return value_; }

private:
  void wipe() noexcept {
    volatile char* p = value_.data();
    for (std::size_t i = 0; i < value_.size(); ++i) p[i] = 0;
    value_.clear();
  }
  std::string value_;
};

}  // namespace maf::sandbox
