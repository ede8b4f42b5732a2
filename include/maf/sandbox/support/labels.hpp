#pragma once
/// @file support/labels.hpp
/// The one mapping from a sandbox's identity to engine names and labels, shared by acquire
/// and every disposal path (D-6, D-7, W-10…W-12, T-10). Names are derived,
/// never stored, so acquire and dispose agree without shared state; if the two sides used
/// different functions a purge would silently select nothing.
///
/// **Name** (`sandbox_name`): `prefix + hex(SHA-256(encoding))[0:12]`, where `encoding`
/// concatenates, for each part, `<decimal byte length>:<bytes>`. The parts, in order:
///   scope, thread_id, agent_id, kind,
///   then only if non-empty: `allow:<sorted egress hosts joined by ",">`,
///   then only if non-empty: `call:<call_id>`,
///   then only if non-empty: `base:<work base>`.
/// Length-prefixing makes ("a-b","c") and ("a","b-c") different names; the tags keep the
/// optional slots from colliding with one another. Conversation-scope Docker names equal
/// upstream's. The derived network and proxy names are `name + "-net"` / `name + "-proxy"`.
///
/// **Label value** (`label_value`): the raw value unchanged iff it is 1-63 bytes of
/// `[A-Za-z0-9._-]` and not itself shaped `sha256-` + 48 lowercase hex; otherwise
/// `"sha256-" + hex(SHA-256(raw))[0:48]` (55 bytes). Never truncated (a shared prefix
/// would make two scopes select each other); digest-shaped input is digested so no value
/// can forge another's digest.
///
/// **Label set** (`sandbox_labels`): `maf-sandbox.scope|thread|agent|kind`, plus
/// `maf-sandbox.call` iff call_id is non-empty, plus `maf-sandbox.label.<k>` per spec label
/// (key untransformed; keys outside `[A-Za-z0-9._-]+` are refused). Selectors
/// (`key_selector`, `scope_selector`) produce the same `label_value`s, in the filter order of
/// docs/backends/docker.md "Disposal, in order".

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "maf/sandbox/key.hpp"

namespace maf::sandbox::support {

inline constexpr std::string_view kLabelScope = "maf-sandbox.scope";
inline constexpr std::string_view kLabelThread = "maf-sandbox.thread";
inline constexpr std::string_view kLabelAgent = "maf-sandbox.agent";
inline constexpr std::string_view kLabelKind = "maf-sandbox.kind";
inline constexpr std::string_view kLabelCall = "maf-sandbox.call";
inline constexpr std::string_view kLabelRole = "maf-sandbox.role";
inline constexpr std::string_view kLabelUserPrefix = "maf-sandbox.label.";
/// A workload's lifetime bound in whole seconds (docs/limits.md LIM-7), on engines whose
/// resources carry no other record of it: read back with the engine's creation time.
inline constexpr std::string_view kLabelTtl = "maf-sandbox.ttl_seconds";

/// Lowercase hex SHA-256 (64 characters) of `bytes`, via OpenSSL's EVP_Digest.
std::string sha256_hex(std::string_view bytes);

/// `<decimal byte length>:<bytes>` for each part, concatenated: an injective encoding of a
/// sequence of strings.
std::string length_prefixed(const std::vector<std::string>& parts);

/// The label value mapping described above.
std::string label_value(std::string_view raw);

/// True iff `key` is a legal spec label key (`[A-Za-z0-9._-]+`).
bool is_valid_label_key(std::string_view key);

/// The optional slots of a name. Pass what the backend folds in; empty means "absent".
struct NameQualifiers {
  /// Egress allowlist hosts when the sandbox runs behind an allowlist proxy (sorted here,
  /// bytewise; duplicates kept, as Python's `sorted`).
  std::vector<std::string> egress_allow{};
  /// A non-default work base (wslc W-10); empty for the default.
  std::string work_base{};
  /// The spec's resource bounds, `ResourceLimits::to_string()`, when any is asked
  /// (docs/limits.md LIM-5: bounds are part of a sandbox's identity); empty for none.
  std::string resources{};
};

/// The container name for (key, kind). `prefix` is e.g. `"maf-sandbox-docker-"`; it must be
/// 1-45 bytes of `[A-Za-z0-9_.-]` starting alphanumeric, so that `name + "-proxy"` stays a
/// Docker-legal name of at most 63 characters (ValueError otherwise).
std::string sandbox_name(std::string_view prefix, const SandboxKey& key, std::string_view kind,
                         const NameQualifiers& qualifiers = {});

/// Label name -> value for a workload (and its proxy and network). Throws ValueError naming
/// a spec label key outside `[A-Za-z0-9._-]+`. The proxy additionally carries
/// `kLabelRole = "proxy"` (added by the caller).
std::map<std::string, std::string> sandbox_labels(const SandboxKey& key, std::string_view kind,
                                                  const std::map<std::string, std::string>& spec_labels = {});

/// Ordered `(label, value)` filters selecting one key's sandboxes: scope, thread, agent,
/// then kind if given, then call iff `key.call_id` is non-empty (docs/backends/docker.md "Disposal, in order"; W-35).
std::vector<std::pair<std::string, std::string>> key_selector(const SandboxKey& key,
                                                              std::optional<std::string_view> kind = std::nullopt);

/// Ordered `(label, value)` filters selecting a whole conversation: scope, then thread
/// (dispose_scope, D-26, W-36).
std::vector<std::pair<std::string, std::string>> scope_selector(std::string_view scope,
                                                                std::string_view thread_id);

/// `label=value` as one `--filter label=…` / `--label` argument body.
std::string label_argument(std::string_view label, std::string_view value);

}  // namespace maf::sandbox::support
