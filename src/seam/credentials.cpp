// SandboxBackend::supply_credentials (backend.hpp; docs/policy.md CRED-4): the one place a
// backend asks the host for a credential's value. Kept apart from the acquire NVI so every
// backend that brokers asks the same way and words a failure the same way — naming the
// credential, never echoing what the source said (a source's exception text could quote the
// value it failed to deliver).
#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {

std::vector<SecretValue> SandboxBackend::supply_credentials(const SandboxKey& key, const SandboxSpec& spec) const {
  std::vector<SecretValue> values;
  if (spec.attached_identity().empty()) return values;
  if (!credentials_)
    throw SandboxCapabilityNotSupported("backend '" + name() + "' has no credential source for workload kind '" +
                                        spec.kind() + "' (credential '" + spec.attached_identity().front().name() +
                                        "'): the host attaches one with SandboxRouter::attach_credential_source; nothing is written into the "
                                        "guest instead");
  for (const auto& credential : spec.attached_identity()) {
    CredentialRequest request{credential.name(), name(), spec.kind(), key.scope, key.thread_id, credential.hosts()};
    SecretValue value;
    try {
      value = credentials_(request);
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception&) {
      throw SandboxCredentialUnavailable("the host's credential source failed for credential '" + credential.name() +
                                         "' of workload kind '" + spec.kind() + "' on backend '" + name() +
                                         "' (its message is not repeated: it could hold the value)");
    }
    if (value.empty())
      throw SandboxCredentialUnavailable("the host's credential source answered an empty value for credential '" +
                                         credential.name() + "' of workload kind '" + spec.kind() + "' on backend '" +
                                         name() + "'");
    for (char c : value.reveal())
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw SandboxCredentialUnavailable("the value of credential '" + credential.name() +
                                           "' holds a control character (CR, LF, ...), which cannot go in a header");
    values.push_back(std::move(value));
  }
  return values;
}

}  // namespace maf::sandbox
