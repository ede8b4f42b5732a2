#pragma once
/// @file control_protocol.hpp
/// The messages of the proxy's control channel (docs/backends/egress-proxy.md "Control
/// channel", EGU-1…EGU-6): one JSON object per line, at most kMaxControlLine bytes, between
/// the host (the backend that launched the proxy, or the host's decider) and the proxy.
///
///   host → proxy  {"op":"update","id":N,"allow":"a.test,b.test:8443"}   replace the hosts allowed whole
///   proxy → host  {"id":N,"ok":true,"allowing":"…","closed":K}         (K open tunnels closed)
///   host → proxy  {"op":"decide"}                                        this connection is the decider
///   proxy → host  {"ask":N,"method":"CONNECT","host":"x.test","port":443}
///   host → proxy  {"op":"answer","ask":N,"verdict":"allow-once"|"allow-sandbox"|"deny","reason":"…"}
///   proxy → host  {"id":N,"ok":false,"error":"…"}                        any refusal, naming the value
///
/// Asio-free, so the unit tests (and a fuzzer) reach the parser without a socket.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace maf::sandbox::egress_proxy {

/// A control line longer than this is refused and the connection closed.
inline constexpr std::size_t kMaxControlLine = 64 * 1024;
/// A decider's reason is cut to this many bytes and stripped of control characters before
/// it reaches the guest's 403 body and the decision log.
inline constexpr std::size_t kMaxDeciderReason = 512;

enum class ControlOp { Update, Decide, Answer };
enum class DeciderVerdict { AllowOnce, AllowSandbox, Deny };

struct ControlMessage {
  ControlOp op = ControlOp::Update;
  std::uint64_t id = 0;            ///< update: echoed in the reply; answer: the ask it answers
  std::string allow;               ///< update: the new whole-host allowlist (Allowlist::parse)
  DeciderVerdict verdict = DeciderVerdict::Deny;
  std::string reason;              ///< answer: cleaned (clean_reason)
};

/// Parses one line. Throws std::invalid_argument naming what is wrong (an unknown op, a
/// missing or mistyped field, an unknown verdict).
ControlMessage parse_control_line(std::string_view line);

/// `reason` cut to kMaxDeciderReason bytes, control characters replaced by spaces.
std::string clean_reason(std::string_view reason);

/// The ask line (without the newline) for one request no rule covers.
std::string ask_line(std::uint64_t ask, const std::string& method, const std::string& host, std::uint16_t port);
/// Replies (without the newline).
std::string ok_line(std::uint64_t id, const std::string& allowing, std::size_t closed);
std::string error_line(std::uint64_t id, const std::string& error);
/// The decision log's line for an applied update: `{"event":"policy-updated","allowing","closed"}`.
std::string updated_line(const std::string& allowing, std::size_t closed);

}  // namespace maf::sandbox::egress_proxy
