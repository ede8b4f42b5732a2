#pragma once
/// @file options.hpp
/// The proxy's command line and environment (docs/backends/egress-proxy.md lists them).
///
/// The allowlist is the union of every `--allow LIST`, `$MAF_EGRESS_ALLOW` and
/// `$MAF_SANDBOX_ALLOW` (the variable the Docker backend sets, "Fixed constants"). The listen
/// port defaults to `$MAF_SANDBOX_PROXY_PORT`, else 3128. Method/path rules are the union of
/// every `--rules JSON` and `$MAF_SANDBOX_RULES` (l7_rules.hpp); the upstream trust store of
/// terminated hosts is `--upstream-ca FILE`, else `$MAF_SANDBOX_UPSTREAM_CA_PEM` (PEM text),
/// else kDefaultTrustStore.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "allowlist.hpp"
#include "credentials.hpp"
#include "l7_rules.hpp"
#include "pinned_names.hpp"

namespace maf::sandbox::egress_proxy {

/// The trust store a terminated host's upstream is verified against when the operator names
/// none: Debian's bundle, which scripts/egress-proxy-image copies into the image.
inline constexpr const char* kDefaultTrustStore = "/etc/ssl/certs/ca-certificates.crt";

/// What this build of the proxy can do, printed by `--features` and carried by the image as
/// a label, so a backend declares egress_methods/egress_paths only for a proxy that enforces
/// them (issue 45 item 4).
inline constexpr const char* kFeatures = "tls-termination,method-rules,path-rules,brokered-credentials,live-policy";

struct ProxyOptions {
  std::string listen_address = "0.0.0.0";
  std::uint16_t listen_port = 3128;
  Allowlist allow;
  L7Rules rules;
  PinnedNames pins;
  std::optional<std::string> upstream_ca_file;
  std::optional<std::string> upstream_ca_pem;
  std::optional<std::string> log_path;  ///< absent: stdout
  std::size_t max_connections = 128;
  std::size_t max_head_bytes = 16 * 1024;
  std::chrono::milliseconds head_timeout{10'000};
  std::chrono::milliseconds connect_timeout{20'000};
  std::chrono::milliseconds idle_timeout{300'000};
  bool help = false;
  bool features = false;  ///< `--features`: print kFeatures and exit
  /// `--unsafe-allow-forwarding`: serve even in a namespace that forwards packets. For the
  /// conformance double that must show EG-3 failing (issue 22); never set by a backend.
  bool allow_forwarding = false;
  /// `--unsafe-pass-through`: terminate a rule's host but check nothing — no rule, no Host or
  /// SNI match, no upstream verification. Only for the conformance double that must show
  /// every EGRESS_L7 probe able to fail (issue 45); never set by a backend.
  bool pass_through = false;
  /// Brokered credentials (credentials.hpp): `--credentials JSON` / `$MAF_SANDBOX_CREDENTIALS`,
  /// their values read from `credential_values_file` before the proxy listens.
  Credentials credentials;
  std::optional<std::string> credential_values_file;
  /// How long to wait for that file to appear (the backend writes it after the start).
  std::chrono::milliseconds credential_values_wait{30'000};
  /// The control channel (control.hpp, EGU-1): `--control ADDR`, a unix socket (`@name`:
  /// abstract); absent = no channel, the policy is fixed for the proxy's life.
  std::optional<std::string> control_address;
  /// How long a request no rule covers waits for the host's decider (EGU-4): `--decider-timeout-ms`.
  std::chrono::milliseconds decider_timeout{10'000};
  /// `--control-send ADDR JSON`: client mode, one line to a running proxy (control_send).
  std::optional<std::pair<std::string, std::string>> control_send;
  /// `--unsafe-broken-control`: a test double whose control channel lies — an update is
  /// acknowledged but changes nothing, a decider's reason is dropped, a decider's silence
  /// allows. Only so EGU-n probes can be shown to fail; never set by a backend.
  bool broken_control = false;
};

/// Reads a file's whole text (the hosts file); injected so tests need no files.
using ReadFile = std::function<std::string(const std::string& path)>;
/// Reads an environment variable; nullopt when unset.
using GetEnv = std::function<std::optional<std::string>(const char* name)>;

/// Throws std::invalid_argument naming the offending argument.
ProxyOptions parse_options(const std::vector<std::string>& args, const GetEnv& env, const ReadFile& read_file);

std::string usage();

}  // namespace maf::sandbox::egress_proxy
