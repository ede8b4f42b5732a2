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
#include "maf/sandbox/egress_proxy/launch.hpp"
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

/// The proxy's launch contract, shared with every backend that runs it
/// (egress_proxy/launch.hpp): constants, rules, readiness, the guest's CA paths.
using egress_proxy::entry_identity;
using egress_proxy::kGuestCaBundle;
using egress_proxy::kGuestCaFile;
using egress_proxy::spec_has_rules;

/// Whether an image's labels (JSON text of `Config.Labels`) say the proxy terminates TLS.
bool labels_say_terminating(const std::string& labels_json);

/// The workload's `-e` pairs: egress_proxy::guest_proxy_env for `http://<container>-proxy:3128`.
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
/// this call makes, as a file in its container, never to the workload. `control_channel`:
/// start the proxy with its control channel (live_egress.hpp, EGU-7).
boost::asio::awaitable<std::optional<std::string>> ensure_egress_topology(DockerTransport& transport, const DockerConfig& config,
                                                    const std::string& container, const SandboxKey& key,
                                                    const SandboxSpec& spec, bool fresh,
                                                    const Brokering& brokering = {}, bool control_channel = false);

/// True when the proxy terminates TLS for this spec: method/path rules, or brokered
/// credentials (CRED-8: every host of a credentialed sandbox is terminated).
bool spec_terminates(const SandboxSpec& spec);

}  // namespace maf::sandbox::docker::detail
