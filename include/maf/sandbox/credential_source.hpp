#pragma once
/// @file credential_source.hpp
/// The host's side of attached identity (docs/policy.md CRED-4): the callback that supplies a
/// credential's value at acquire. Apart from attached_identity.hpp, which the light entry
/// reaches through spec.hpp, because a callback type needs <functional>.

#include <functional>
#include <string>
#include <vector>

#include "maf/sandbox/attached_identity.hpp"

namespace maf::sandbox {

/// What a CredentialSource is asked for: which credential, for which sandbox.
struct CredentialRequest {
  std::string credential;  ///< AttachedCredential::name
  std::string backend;
  std::string kind;
  std::string scope;      ///< SandboxKey::scope
  std::string thread_id;  ///< SandboxKey::thread_id
  std::vector<std::string> hosts;  ///< where the value will be sent
};

/// The host's callback that supplies a value (CRED-4), called by the backend at acquire,
/// on the acquiring thread; it should answer promptly. Throwing refuses the acquire (the
/// message is the host's, so it must not hold the value); an empty value is refused too.
using CredentialSource = std::function<SecretValue(const CredentialRequest&)>;

}  // namespace maf::sandbox
