#pragma once
/// @file acas/credentials.hpp
/// the host's per-operation credential resolver. Without one the backend uses the
/// default chain of docs/backends/acas.md "The credential chain" (configured in AcasConfig). With one, every acquire,
/// dispose and dispose_scope asks it which authority (and which generation of that
/// authority's credential) to use; clients are cached per (executor, authority, generation)
/// and a sandbox keeps the binding of the acquire that created it for all its later
/// exec and file work, even after the host rotates to a new generation.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace maf::sandbox::acas {

/// A bearer token and when it stops being valid (unix seconds; unset = treated as one hour).
struct AcasAccessToken {
  std::string token;
  std::optional<std::int64_t> expires_on;
};

/// One credential: asked for a token when the client's cached one has fewer than five
/// minutes left ("The credential chain"). A source is owned by one client and closed on the client's owner
/// executor when the client is evicted or the backend closes, at most once.
/// Whatever it throws becomes an AcasCredentialError that does not quote it.
class AcasTokenSource {
public:
  virtual ~AcasTokenSource() = default;
  virtual boost::asio::awaitable<AcasAccessToken> get_token(std::string scope) = 0;
  virtual void close() {}
};

/// Builds a fresh token source for a new client. Called once per client construction.
using AcasTokenSourceFactory = std::function<std::shared_ptr<AcasTokenSource>()>;

/// A token source that always answers `token` (tests, a host that already holds one).
std::shared_ptr<AcasTokenSource> make_static_token_source(std::string token);

enum class AcasCredentialOperation { Acquire, Dispose, DisposeScope };
std::string to_string(AcasCredentialOperation operation);

/// What the resolver is asked. `agent_id`/`call_id`/`kind` are empty for dispose_scope.
struct AcasCredentialRequest {
  std::string scope;
  std::string thread_id;
  AcasCredentialOperation operation = AcasCredentialOperation::Acquire;
  std::optional<std::string> agent_id;  ///< the key's agent, when the operation has a key
  std::optional<std::string> call_id;
  std::optional<std::string> kind;  ///< acquire's spec kind, dispose's kind filter
};

/// The resolver's answer. `authority` and `generation` are non-empty, non-secret names (they
/// appear in messages and logs); `create_credential` makes the client's token source.
struct AcasCredentialBinding {
  std::string authority;
  std::string generation;
  AcasTokenSourceFactory create_credential;
};

/// Called on the operation's executor before any request. A throw (or an incomplete
/// binding) is an AcasCredentialError without the resolver's text and never falls back to
/// the default chain.
using AcasCredentialResolver = std::function<AcasCredentialBinding(const AcasCredentialRequest&)>;

}  // namespace maf::sandbox::acas
