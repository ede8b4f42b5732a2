#pragma once
// Brokered credentials on Docker (issue 46; docs/backends/docker.md "Brokered credentials",
// docs/backends/egress-proxy.md CRED-6…CRED-9): the placeholders the workload sees, what the
// proxy is told in its environment (nothing secret), and the values file written into the
// proxy's container alone.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "maf/sandbox/attached_identity.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox::docker::detail {

/// The proxy feature (its `--features`, the image's label) brokering needs.
inline constexpr const char* kBrokerFeature = "brokered-credentials";
/// Where the values file lands in the proxy's container (CRED-7); the proxy unlinks it.
inline constexpr const char* kCredentialValuesPath = "/run/maf-credentials/values.json";
/// The proxy image's user (scripts/egress-proxy-image: USER 65534:65534), who reads the file.
inline constexpr int kProxyUid = 65534;

/// One acquire's credentials: a placeholder per spec credential (in the spec's order), and
/// the values the host's source supplied (empty when the proxy is kept, which holds them).
struct Brokering {
  std::vector<std::string> placeholders;
  std::vector<SecretValue> values;
};

/// The hosts joined with ',' (a sandbox name's qualifier).
std::string join_hosts(const std::vector<std::string>& hosts);

/// CRED-6: `maf-cred-<name>-<32 hex>` from the kernel's random source.
std::string new_placeholder(const std::string& credential);

/// The placeholders a workload was created with, from its inspect document's Config.Env,
/// in the spec's order; throws OSError naming a credential whose variable is missing.
std::vector<std::string> placeholders_in_inspect(const SandboxSpec& spec, const std::string& inspect_json);

/// The workload's `-e` pairs: each credential's `env` = its placeholder.
std::vector<std::pair<std::string, std::string>> credential_env(const SandboxSpec& spec,
                                                                const std::vector<std::string>& placeholders);

/// The proxy's MAF_SANDBOX_CREDENTIALS (credentials.hpp of the proxy): names, hosts, header,
/// format, placeholder, allow_http — never a value. Empty for a spec without credentials.
std::string proxy_credentials_json(const SandboxSpec& spec, const std::vector<std::string>& placeholders);

/// The proxy's extra arguments: `--credential-values <path>` when the spec has credentials.
std::vector<std::string> proxy_credential_args(const SandboxSpec& spec);

/// The tar archive_put writes at "/" of the proxy's container: run/maf-credentials (0700) and
/// the values file (0400), both the proxy user's.
std::string credential_values_tar(const SandboxSpec& spec, const Brokering& brokering);

/// Whether an image's labels (JSON text of `Config.Labels`) list `feature` among the proxy's.
bool labels_list_feature(const std::string& labels_json, std::string_view feature);

}  // namespace maf::sandbox::docker::detail
