#pragma once
/// @file egress_path.hpp
/// Path rules of `egress_allow` (C-10, docs/policy.md "Path rules"): the one canonicaliser
/// of a request path and the one matcher of a path pattern, shared by the spec (which
/// checks the patterns a workload writes) and the egress proxy (which checks every request
/// it terminates). The proxy is a static program that links no libmaf-sandbox, so this
/// header and `src/spec/egress_path.cpp` depend on nothing but the standard library and are
/// compiled into both.
///
/// Canonical form of a request path (`canonicalize_request_path`):
///   - origin-form: it starts with '/'; the query (after the first '?') is split off and
///     not part of the path; a fragment ('#') is refused;
///   - only RFC 3986 path characters (unreserved, sub-delims, ':', '@', '%'); anything else
///     (space, '\\', '"', '<', '>', '^', '`', '{', '|', '}', '[', ']', controls, raw
///     non-ASCII bytes) is refused;
///   - a percent escape of an unreserved character other than '.' is decoded (`%7E` -> `~`,
///     `%41` -> `A`); an escaped '/', '\\', '.', NUL or other control byte is refused
///     outright (the classic `..%2f` family); every other escape is kept, in upper-case hex;
///     escaped bytes >= 0x80 must form valid, shortest-form UTF-8 (no overlong forms);
///   - an empty segment (`//`) is refused (servers disagree whether it is one '/');
///   - dot segments (`.`, `..`) are removed (RFC 3986 section 5.2.4); a `..` above the root is refused.
/// Paths compare byte for byte after that: case matters, as it does to the servers.
///
/// A path pattern (`egress_path_pattern_problem`) is one of
///   - `/exact/path`       the canonical path and nothing else;
///   - `/prefix/`          ending in '/': every canonical path starting with it;
///   - `/prefix*`          ending in '*': every canonical path starting with what precedes it;
/// written in canonical form (so `/a/../b` is refused, naming `/b`), with no '?', '#' and
/// no other '*'.

#include <optional>
#include <string>
#include <string_view>

namespace maf::sandbox {

/// A request target's path in canonical form and its query (without the '?'; absent when
/// the target had none).
struct CanonicalRequestPath {
  std::string path;
  std::optional<std::string> query;
  friend bool operator==(const CanonicalRequestPath&, const CanonicalRequestPath&) = default;
};

/// The canonical form of an origin-form request target, or why it has none.
struct PathCanonicalisation {
  std::optional<CanonicalRequestPath> value;
  std::string problem;  ///< set when `value` is absent: one lower-case clause ("an encoded '/'")
};

/// Canonicalise an origin-form request target (`/path?query`). Never throws but for
/// allocation failure.
PathCanonicalisation canonicalize_request_path(std::string_view target);

/// Why `pattern` is not a path pattern, or nullopt when it is one.
std::optional<std::string> egress_path_pattern_problem(std::string_view pattern);

/// Whether the canonical path `path` is covered by the (valid) pattern `pattern`.
bool egress_path_matches(std::string_view pattern, std::string_view path) noexcept;

}  // namespace maf::sandbox
