#pragma once
/// @file request.hpp
/// The egress proxy's request-head parser: one HTTP/1.x request head (up to and including
/// the blank line) in, a typed request or an HTTP refusal out.
///
/// Deliberately free of Asio and of any I/O, so the libFuzzer target
/// (fuzz/fuzz_proxy_request.cpp) compiles this file directly in a build with no backends.
///
/// What it accepts, and why it is strict:
///   - `CONNECT host:port HTTP/1.x` (authority-form; the port is required);
///   - `<METHOD> http://host[:port][/path] HTTP/1.x` (absolute-form; plain HTTP forwarding);
///   - lines end in CRLF; a bare CR or LF, a NUL or other control byte, an obs-fold
///     continuation line, userinfo (`user@host`) or a fragment is refused: where two
///     readers of a head could disagree, the proxy refuses rather than pick one reading,
///     because the host it decides on must be the host it dials.
/// The returned host is lowercased, without IPv6 brackets and without one trailing dot, so
/// the allowlist compares one spelling.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::egress_proxy {

/// Bounds on one head (the proxy's --max-head-bytes overrides the byte bound).
inline constexpr std::size_t kDefaultMaxHeadBytes = 16 * 1024;
inline constexpr std::size_t kMaxHeaderLines = 100;

enum class RequestKind { Connect, Forward };

struct Target {
  std::string host;  ///< lowercased; an IPv6 literal without brackets
  std::uint16_t port = 0;
  bool operator==(const Target&) const = default;
};

struct ProxyRequest {
  RequestKind kind = RequestKind::Connect;
  std::string method;
  Target target;
  /// Forward only: the head to send upstream — origin-form request line, `Host` replaced by
  /// the target's authority, hop-by-hop and proxy headers dropped, `Connection: close`
  /// added so one client connection carries requests to one upstream only.
  std::string upstream_head;
  /// Forward only: the origin-form target (`/path?query`) that `upstream_head` starts with.
  std::string origin_target;
};

/// A parse either yields a request or the status and reason the proxy answers with.
struct ParseResult {
  std::optional<ProxyRequest> request;
  int status = 0;  ///< 400 or 431 when `request` is absent
  std::string reason;
};

/// One header field of a head, as written (the value without surrounding whitespace).
struct HeadField {
  std::string_view name, value;
};

/// A head split into its request line and fields, views into the parsed text.
struct RequestHead {
  std::string_view method, target, version;
  std::vector<HeadField> fields;
  std::vector<std::string> connection_tokens;  ///< the Connection header's tokens, lowercased
  bool has_content_length = false;
  bool has_transfer_encoding = false;
};

/// The checks every head gets, for the proxy-form head and for a request inside a terminated
/// tunnel alike: size, CRLF-only line ends, no control bytes, three-field request line, a
/// token method, HTTP/1.0 or 1.1, fields `name: value` without obs-fold, not both framings.
/// On refusal `head` is absent and `status`/`reason` say why.
struct SplitResult {
  std::optional<RequestHead> head;
  int status = 0;
  std::string reason;
};
SplitResult split_request_head(std::string_view head, std::size_t max_head_bytes);

/// Case-insensitive ASCII comparison; lowercase copy.
bool ascii_iequals(std::string_view a, std::string_view b);
std::string ascii_lower(std::string_view s);

/// Offset just past the first "\r\n\r\n" in `buffer`, or npos.
std::size_t find_head_end(std::string_view buffer) noexcept;

/// Parse one complete head (it must end with "\r\n\r\n"). Never throws for any input
/// other than allocation failure.
ParseResult parse_request_head(std::string_view head, std::size_t max_head_bytes = kDefaultMaxHeadBytes);

/// Normalise a host as the parser does (lowercase, no brackets, no trailing dot); nullopt
/// when it is not a valid reg-name or IP literal. Shared with the allowlist parser.
std::optional<std::string> normalize_host(std::string_view host);

/// Parse `host:port` / `[v6]:port` (port required when `port_required`, else optional).
std::optional<std::pair<std::string, std::optional<std::uint16_t>>> parse_authority(std::string_view authority,
                                                                                     bool port_required);

}  // namespace maf::sandbox::egress_proxy
