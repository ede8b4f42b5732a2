#pragma once
// ALLOWLIST topology for one sandbox (D-4, D-31, D-32; docs/backends/docker.md "Egress"): the
// internal network N whose bridge holds no host address, and the proxy P dual-homed on N
// and the outbound network. The workload then joins N only, with the proxy variables set.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/transport.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/spec.hpp"
#include "brokered_credentials.hpp"

namespace maf::sandbox::docker::detail {

/// The proxy's fixed listen port ("Fixed constants").
inline constexpr int kProxyPort = 3128;

/// The capabilities every workload loses even without `cap_drop_all` (issue 22): NET_RAW,
/// with which a guest opens AF_PACKET/SOCK_RAW sockets and writes frames of its own making
/// (spoofed sources, VLAN tags the bridge's netfilter does not look at) past every rule that
/// sees only what the kernel's own stack sends. docker.md *Capabilities* says what is kept.
std::vector<std::string> workload_cap_drop();

/// True when this spec runs behind the proxy: a proxy image is configured, the transport
/// has an egress plane, the mode is ALLOWLIST and the list is non-empty. Otherwise the
/// workload gets `--network none` (D-4).
bool behind_proxy(const DockerConfig& config, const DockerTransport& transport, const SandboxSpec& spec);

/// The image label scripts/egress-proxy-image writes from the proxy's `--features`, and the
/// feature a method/path rule needs (issue 45).
inline constexpr const char* kProxyFeaturesLabel = "org.maf-sandbox.egress-proxy.features";
inline constexpr const char* kTerminationFeature = "tls-termination";
/// Where the per-sandbox CA lands in the guest: the CA alone, and the guest's own bundle
/// with the CA appended (issue 45 item 2).
inline constexpr const char* kGuestCaFile = "/etc/maf-sandbox/egress-ca.pem";
inline constexpr const char* kGuestCaBundle = "/etc/maf-sandbox/egress-ca-bundle.pem";

/// True when the spec holds a method or path rule (EgressRule, C-9/C-10).
bool spec_has_rules(const SandboxSpec& spec);

/// An entry as the sandbox's name folds it (C-55): the host, and a rule's methods and paths,
/// so a changed rule is another sandbox.
std::string entry_identity(const EgressEntry& entry);

/// The proxy's MAF_SANDBOX_RULES: the spec's rules as `[{"host","methods","paths"}]`.
std::string proxy_rules_json(const SandboxSpec& spec);

/// Whether an image's labels (JSON text of `Config.Labels`) say the proxy terminates TLS.
bool labels_say_terminating(const std::string& labels_json);

/// The CA certificate (PEM) from the proxy's readiness line, or nullopt.
std::optional<std::string> ca_certificate_in_log(const std::string& output);

/// The workload's `-e` pairs: HTTP_PROXY, HTTPS_PROXY and their lowercase twins, all
/// `http://<container>-proxy:3128` (curl reads only the lowercase http_proxy); with
/// `terminating`, also SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and GIT_SSL_CAINFO
/// (the guest's bundle plus the sandbox CA) and NODE_EXTRA_CA_CERTS (the CA alone).
std::vector<std::pair<std::string, std::string>> workload_proxy_env(const std::string& container,
                                                                    bool terminating = false);

/// Whether the configured proxy image terminates TLS (its features label).
boost::asio::awaitable<bool> proxy_image_terminates(DockerTransport& transport, const DockerConfig& config);

/// Put the sandbox CA in the guest: kGuestCaFile, and kGuestCaBundle = the guest's own
/// bundle (the first regular file of Debian's, Fedora's and Alpine's paths), then the CA.
/// Root-owned, mode 0644. Runs at every acquire: each acquire's proxy has a new CA.
boost::asio::awaitable<void> install_egress_ca(DockerTransport& transport, const std::string& container,
                                               const std::string& ca_pem);

/// The engine major version from `Server.Version` ("20.10.24+dfsg1" -> 20); nullopt when
/// unreadable (then the gate refuses, as for an old engine).
std::optional<int> engine_major(const std::string& version);

/// The addresses an `ip -j addr show` answer lists that a workload on N could use, as
/// "family addr": every IPv4 address and every IPv6 address except link-local ones (N has
/// IPv6 off, so no endpoint on it has IPv6). Throws OSError on an unreadable answer.
std::vector<std::string> addresses_in_ip_json(const std::string& json_text);

/// Ensure N (gated, created or adopted, then verified) and replace P (run, outbound leg,
/// readiness). `fresh`: no workload exists yet, so a failure also removes N. Throws
/// SandboxEgressNotEnforced when the isolation cannot be had or verified (or the spec has
/// method/path rules and the proxy image does not terminate TLS), OSError when an engine
/// step fails. Answers the per-sandbox CA certificate when the spec has rules or credentials.
/// `brokering`: the spec's placeholders and values (CRED-6, CRED-7); the values go to a proxy
/// this call makes, as a file in its container, never to the workload.
boost::asio::awaitable<std::optional<std::string>> ensure_egress_topology(DockerTransport& transport, const DockerConfig& config,
                                                    const std::string& container, const SandboxKey& key,
                                                    const SandboxSpec& spec, bool fresh,
                                                    const Brokering& brokering = {});

/// True when the proxy terminates TLS for this spec: method/path rules, or brokered
/// credentials (CRED-8: every host of a credentialed sandbox is terminated).
bool spec_terminates(const SandboxSpec& spec);

}  // namespace maf::sandbox::docker::detail
