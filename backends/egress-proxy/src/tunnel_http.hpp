#pragma once
/// @file tunnel_http.hpp
/// HTTP/1.1 inside a terminated tunnel (docs/backends/egress-proxy.md "Terminated hosts"):
/// the head of each request a guest sends on a kept-alive connection, and where its body
/// ends, so that the next request is found and checked too — not only the first. Free of
/// Asio and OpenSSL (fuzz/fuzz_tunnel_http.cpp compiles it directly).
///
/// Strict in the same way as request.hpp (it shares split_request_head), and further:
///   - origin-form targets only (`/path?query`);
///   - exactly one `Host`, naming the tunnel's host (and its port, 443 when absent): a
///     request that names another host than the CONNECT target is refused, so the host the
///     rule matched is the host the request is for;
///   - framing by one `Content-Length` (digits only) or `Transfer-Encoding: chunked` alone,
///     or none; any other transfer coding is refused (the proxy must find the body's end);
///   - `Upgrade` (WebSocket, h2c) is flagged: the proxy refuses it on a terminated host.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "request.hpp"

namespace maf::sandbox::egress_proxy {

enum class BodyFraming { None, Length, Chunked };

struct TunnelRequest {
  std::string method;
  std::string target;  ///< as sent (origin-form); canonicalised by the rule check
  std::string version;
  BodyFraming framing = BodyFraming::None;
  std::uint64_t content_length = 0;
  bool upgrade = false;
  /// The header lines to send upstream (each ending CRLF, no final blank line), as received
  /// less the proxy's own (Proxy-Authorization, Proxy-Connection).
  std::string fields;
};

struct TunnelParse {
  std::optional<TunnelRequest> request;
  int status = 0;  ///< 400, 403 (Host names another host) or 431 when `request` is absent
  std::string reason;
};

/// Parse one complete head (ending in "\r\n\r\n") read inside a tunnel to `tunnel`.
/// `check_host` false (the pass-through double only) skips the Host-against-tunnel check.
TunnelParse parse_tunnel_request(std::string_view head, const Target& tunnel, std::size_t max_head_bytes,
                                 bool check_host = true);

/// The head sent upstream: `METHOD upstream_target VERSION`, the fields, a blank line.
std::string tunnel_upstream_head(const TunnelRequest& request, std::string_view upstream_target);

/// Finds where a chunked body ends, byte by byte, without changing a byte: the proxy
/// forwards what it scanned. Chunk-size lines and trailer lines are bounded.
class ChunkedScanner {
public:
  struct Step {
    std::size_t consumed = 0;  ///< bytes of the input that belong to this body
    bool done = false;         ///< the body (last chunk and trailers) ended within them
    bool error = false;        ///< malformed framing: the connection must be dropped
  };
  Step feed(std::string_view bytes);

private:
  enum class State { Size, SizeLf, Ext, Data, DataCr, DataLf, Trailer, TrailerLf, LastLf };
  State state_ = State::Size;
  std::uint64_t remaining_ = 0;
  std::size_t line_ = 0;  ///< bytes in the current size or trailer line
  int size_digits_ = 0;
  bool trailer_empty_ = true;
};

}  // namespace maf::sandbox::egress_proxy
