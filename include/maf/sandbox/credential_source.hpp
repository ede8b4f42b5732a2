#pragma once
/// @file credential_source.hpp
/// How a credential's value travels from the host to the backend that brokers it (CRED-4,
/// docs/policy.md "Attached identity"): the host's CredentialSource, asked at acquire with a
/// CredentialRequest, answering a SecretValue that is movable, never printable and wiped
/// when destroyed. Kept apart from attached_identity.hpp (what a spec *declares*, part of the
/// light entry) because the source is a std::function and the value lives only on the
/// host side: SandboxRouter::attach_credential_source and SandboxBackend take it.

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace maf::sandbox {

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
