#pragma once
/// @file credentials.hpp
/// Brokered credentials (docs/backends/egress-proxy.md "Brokered credentials", CRED-6…CRED-9):
/// the guest holds a placeholder, the proxy holds the value, and a request's head is
/// rewritten only toward a host the credential is bound to. Free of Asio and OpenSSL, so the
/// unit tests and a fuzz target use it as it is.
///
/// Two inputs, by two channels:
///   - what is not secret — each credential's name, bound hosts, header, format, placeholder
///     and allow_http — as JSON in `$MAF_SANDBOX_CREDENTIALS` / `--credentials JSON`:
///     `[{"name","hosts":[...],"header","format","placeholder","allow_http"}]`;
///   - the values, `{"name": "value", ...}`, read once from the file `--credential-values
///     PATH`, which the proxy then unlinks (CRED-7: the file is written into the proxy's own
///     container by the backend, never into the workload's, and is gone once read).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "allowlist.hpp"

namespace maf::sandbox::egress_proxy {

struct BrokeredCredential {
  std::string name;
  std::vector<AllowEntry> hosts;  ///< bound hosts, in the allowlist's entry syntax
  std::string header;             ///< the field name, as the spec spells it
  std::string format;             ///< with "{value}" once
  std::string placeholder;        ///< what the guest holds: random, per sandbox
  bool allow_http = false;
  std::string value;  ///< from the values file; never logged, never in a message
};

/// What became of one request head.
struct BrokerOutcome {
  bool refused = false;
  std::string reason;                 ///< one line naming credential and host, never a value
  std::vector<std::string> swapped;   ///< names of the credentials whose value went in
  std::string credential;             ///< the refused credential's name
};

class Credentials {
public:
  /// Throws std::invalid_argument naming the first bad entry (its index and what is wrong).
  static Credentials parse_json(std::string_view json);
  /// Fill each credential's value from `{"name": "value"}`; throws std::invalid_argument
  /// naming a credential with no value, an unknown name, or a value with a control character
  /// (never quoting a value).
  void load_values(std::string_view json);
  bool empty() const noexcept { return list_.empty(); }
  bool loaded() const noexcept;
  const std::vector<BrokeredCredential>& list() const noexcept { return list_; }

  /// CRED-8 on one request head toward `host`: `target` is the request target (a placeholder
  /// there is refused: it would reach logs and servers' access logs), `fields` the header
  /// lines (each ending CRLF), rewritten in place. A placeholder toward a host its credential
  /// is not bound to, in another header than its own, in a header not shaped as the format,
  /// or in plain HTTP without allow_http is refused. A head without placeholders passes
  /// untouched.
  /// `check_binding` false (the `--unsafe-pass-through` double only) swaps toward any host
  /// and over plain HTTP, so the conformance probes can be shown to fail.
  BrokerOutcome apply(std::string_view target, std::string& fields, const std::string& host, bool tls,
                      bool check_binding = true) const;

private:
  std::vector<BrokeredCredential> list_;
};

}  // namespace maf::sandbox::egress_proxy
