#pragma once
/// @file conformance/probe.hpp
/// One probe: a stable id, the upstream name, why it matters, what it needs, and the attack.
///
/// Probe tables are ordered arrays exposed by suites.hpp (`probes(Suite)`), so ids, names and
/// order are testable. A probe's `run` signals a failed assertion by calling `fail()`; any
/// other exception it lets escape is reported as "raised <Type>: <message>" (R4).

#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/conformance/layout.hpp"
#include "maf/sandbox/conformance/results.hpp"

namespace maf::sandbox::conformance {

class ConformanceSubject;

/// EGRESS inputs (EG-1, EG-2). Both URLs must be endpoints known to answer 2xx
/// when actually reached; the allowed one is the positive control.
struct EgressTargets {
  std::string allowed_url;
  std::string denied_url;
  std::chrono::milliseconds exec_timeout{std::chrono::seconds(30)};
};

/// EGRESS_L7 inputs (EL-1…EL-9; issue 45): URLs on a host the sandbox's spec narrows with a
/// method/path rule (C-9, C-10). Every URL but the refused ones answers 2xx when reached.
struct EgressL7Targets {
  std::string allowed_url;       ///< a GET the rule allows (EL-1, EL-5, EL-7, EL-8)
  std::string refused_path_url;  ///< the same host, a path no pattern covers (EL-3, EL-5)
  std::string refused_method;    ///< a method the rule does not list, sent to allowed_url (EL-2)
  std::string traversal_base;    ///< `https://host/prefix/`: the encoded-traversal family is appended (EL-4)
  std::string mixed_case_url;    ///< allowed_url with its case changed where the path is compared (EL-4)
  std::string other_host;        ///< a Host header naming another host (EL-8)
  std::optional<std::string> untrusted_url;  ///< a rule host whose upstream the proxy does not trust (EL-9)
  std::chrono::milliseconds exec_timeout{std::chrono::seconds(30)};
};

/// ATTACHED_IDENTITY inputs (AI-1…AI-4; issue 46): a sandbox whose spec binds one credential
/// to the host of `bound_url`, with `other_url` on another allowed host, and the host's side
/// of the test — the value it supplied, what its upstream logged, where the value shows.
struct AttachedIdentityTargets {
  std::string bound_url;  ///< HTTPS on the credential's bound host, answering 2xx (AI-1)
  std::string other_url;  ///< HTTPS on another allowed host, answering 2xx (AI-2)
  std::string env;        ///< the guest variable holding the placeholder (the spec's `env`)
  std::string header_prefix = "Authorization: Bearer ";  ///< the header line before the placeholder
  std::string value;      ///< the value the host's CredentialSource supplied
  /// Everything the upstreams have received so far, headers included (AI-1, AI-2).
  std::function<std::string()> upstream_log;
  /// The host-side views that hold `value` (e.g. "the workload's inspect", "the proxy's log",
  /// "the guest's file system"); empty when none does (AI-4).
  std::function<std::vector<std::string>(const std::string& value)> where_found;
  std::chrono::milliseconds exec_timeout{std::chrono::seconds(30)};
};

/// SNAPSHOT's fork probe (SN-6; docs/snapshots.md SNAP-8): the backend that made the
/// subject's sandbox and the spec a fork is made with (under a key of its own, disposed after).
struct SnapshotForkTarget {
  SandboxBackend* backend = nullptr;
  const SandboxSpec* spec = nullptr;
};

/// POOL's probes (PL-1, PL-2; docs/pools.md) acquire through the same pair: the backend whose
/// pool serves `spec`, and the spec.
using PoolTarget = SnapshotForkTarget;

/// What a running probe sees.
struct ProbeContext {
  ConformanceSubject& subject;
  const ConformancePaths& paths;
  const EgressTargets* egress = nullptr;  ///< set for EGRESS only
  const EgressL7Targets* egress_l7 = nullptr;  ///< set for EGRESS_L7 only
  const AttachedIdentityTargets* attached_identity = nullptr;  ///< set for ATTACHED_IDENTITY only
  const SnapshotForkTarget* fork = nullptr;  ///< set for SNAPSHOT through run_snapshot only
  const PoolTarget* pool = nullptr;          ///< set for POOL through run_pool only
};

struct Probe {
  Suite suite;
  std::string_view id;
  std::string_view name;
  std::string_view why;
  CapabilitySet requires_capabilities;
  void (*run)(ProbeContext&);
};

/// The assertion a probe raises; reported as the probe's failure message, verbatim.
class ProbeFailed : public std::exception {
public:
  explicit ProbeFailed(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

private:
  std::string message_;
};

/// Fail the running probe with `message`.
[[noreturn]] void fail(std::string message);

/// A probe that found nothing to attack on this host (e.g. no non-loopback address): it is
/// reported as a skip with this reason — never as a pass.
class ProbeNotApplicable : public std::exception {
public:
  explicit ProbeNotApplicable(std::string reason) : reason_(std::move(reason)) {}
  const char* what() const noexcept override { return reason_.c_str(); }

private:
  std::string reason_;
};

}  // namespace maf::sandbox::conformance
