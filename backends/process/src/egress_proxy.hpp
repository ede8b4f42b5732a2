#pragma once
// The host side of a process sandbox's ALLOWLIST egress (issue 47; docs/backends/process.md
// "Egress"): one `maf-sandbox-egress-proxy` per sandbox, run on the host as the backend's
// unprivileged host identity, serving a unix socket the backend made in the sandbox's
// host-side directory `<sandbox>/egress/`. That directory is the proxy's whole state, so any
// replica over the same root finds it, restarts it, or ends it:
//
//   policy.json   what the proxy enforces (the spec's hosts and method/path rules)
//   proxy.pid     "<pid> <start time>" of the running proxy (the start time tells a reused pid)
//   proxy.sock    its listener (bound read-only into the guest at kGuestProxySocket)
//   proxy.log     its stdout: the readiness line, then one decision per line
//   proxy.err     its stderr: a start-up refusal, word for word
//   ca.pem, ca-bundle.pem   the sandbox CA's certificate, and the host's bundle plus it
//                           (only with method/path rules)
//   lock          flock'd while a proxy is checked or started
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bwrap.hpp"
#include "host_boundary.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/support/proxy_log.hpp"

namespace maf::sandbox::process {

/// The two programs an egress sandbox needs, as host paths.
struct EgressPrograms {
  std::string proxy;
  std::string relay;
};

/// The programs' file names, installed beside the plugin.
inline constexpr const char* kProxyProgram = "maf-sandbox-egress-proxy";
inline constexpr const char* kRelayProgram = "maf-sandbox-egress-relay";

/// Finds the programs: the configured paths, else beside the file this code was loaded from
/// (the plugin: an install puts them in the plugin directory) or in `../bin` from it (a
/// build tree's plugins/ and bin/). nullopt with `why` naming what was looked for.
std::optional<EgressPrograms> find_egress_programs(const ProcessBackendConfig& config, std::string& why);

/// What a sandbox's proxy enforces.
struct EgressPolicy {
  std::vector<std::string> allow;  ///< hosts allowed whole (allowlist syntax)
  std::string rules_json;          ///< method/path rules, `[{"host","methods","paths"}]`; empty: none
  /// Brokered credentials (issue 46/47, CRED-6): the proxy's `--credentials` text (names,
  /// bound hosts, placeholders; never a value) and the guest variables holding the
  /// placeholders. Fixed when the sandbox is made, so every proxy it gets swaps the same ones.
  std::string credentials_json{};
  std::vector<std::pair<std::string, std::string>> credential_env{};
  friend bool operator==(const EgressPolicy&, const EgressPolicy&) = default;
};

/// What a spec's allowlist asks of the proxy (hosts allowed whole; method/path rules as
/// JSON); nullopt when the spec needs none (not ALLOWLIST, or an empty list: no way out).
std::optional<EgressPolicy> egress_policy_of(const SandboxSpec& spec);

/// The spec's allowlist as the sandbox's name folds it (C-55): each entry's host, and a
/// rule's methods and paths, so a changed list or rule is another sandbox.
std::vector<std::string> egress_identity(const SandboxSpec& spec);

/// `<sandbox_dir>/egress`.
std::string egress_dir(const std::string& sandbox_dir);

/// Makes `<sandbox_dir>/egress/` and writes the policy (at creation, before the sandbox is
/// placed). The directory is searchable, not listable, by the identity bubblewrap runs as.
void write_egress_policy(const std::string& sandbox_dir, const EgressPolicy& policy, const Boundary& boundary);

/// The policy of a sandbox with egress; nullopt for one without (no policy.json).
std::optional<EgressPolicy> read_egress_policy(const std::string& sandbox_dir);

/// The credentials' values, asked of the host's source only when a proxy is started (a
/// kept proxy holds them already), in the order of the policy's credentials.
using CredentialValues = std::function<std::vector<SecretValue>()>;

/// A proxy serves `sandbox_dir` when this returns: the one recorded is kept while it runs,
/// otherwise a new one is started (new socket, new CA) and its readiness line awaited.
/// Answers what the sandbox's commands bind. Throws OSError carrying the proxy's start-up
/// refusal word for word, or naming what never became ready. A policy with credentials
/// asks `values` for them and hands them to the new proxy through a pipe it inherits
/// (docs/backends/process.md PE-10): never its argv, its environment or a file.
GuestEgress ensure_egress_proxy(const ProcessBackendConfig& config, const Boundary& boundary,
                                const EgressPrograms& programs, const std::string& sandbox_dir,
                                const EgressPolicy& policy, const CredentialValues& values = {});

/// Ends the proxy recorded in `sandbox_dir` (if it still runs and is the one recorded) and
/// answers the decisions of its log. Nothing recorded: no decisions.
support::ProxyDecisions end_egress_proxy(const std::string& sandbox_dir);

/// Whether the proxy recorded in `sandbox_dir` runs (a test's and the leak checks' view).
bool egress_proxy_running(const std::string& sandbox_dir);

/// The construction probe (issue 47 item 3): a proxy allowing one host-loopback listener and
/// not another, and a confined child that asks it for both. Empty when the child reached the
/// allowed listener and not the denied one; otherwise what failed.
std::string probe_allowlist(const ProcessBackendConfig& config, const Boundary& boundary,
                            const EgressPrograms& programs);

/// Whether the proxy program terminates TLS (its `--features` names tls-termination).
bool proxy_terminates(const ProcessBackendConfig& config, const EgressPrograms& programs);

/// The proxy program's `--features` line (empty when it does not answer).
std::string proxy_features(const ProcessBackendConfig& config, const EgressPrograms& programs);

}  // namespace maf::sandbox::process
