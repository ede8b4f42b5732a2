#pragma once
// Which MCP revision one request speaks (docs/mcp.md "Two eras on one server"): the one place
// the server decides it. A request whose params `_meta` carries
// `io.modelcontextprotocol/protocolVersion` claims the 2026-07-28 era and is served
// statelessly; anything else is the 2025 era (initialize, then a session). The decision reads
// bytes from outside, so it never throws: a bad claim becomes the revision's own error,
// with the HTTP status the Streamable HTTP binding prescribes. fuzz/fuzz_mcp_era.cpp drives it.

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "jsonrpc.hpp"

namespace maf::sandbox::mcp {

/// The 2026-07-28 revision's own error codes (the SDK's HEADER_MISMATCH and
/// UnsupportedProtocolVersion).
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kUnsupportedProtocolVersion = -32022;
inline constexpr int kMissingRequiredClientCapability = -32021;

/// The `_meta` keys of the per-request envelope.
inline constexpr std::string_view kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

/// The stateless revisions this server speaks, newest first. The one place a new modern
/// revision is added.
inline constexpr std::array<std::string_view, 1> kModernProtocolVersions{"2026-07-28"};
/// The 2025-era revisions (initialize), newest first: negotiate_protocol_version (server.hpp)
/// reads it and nothing else branches on a version.
inline constexpr std::array<std::string_view, 2> kProtocolVersions{"2025-11-25", "2025-06-18"};

enum class Era {
  Legacy,  ///< 2025-11-25 / 2025-06-18: initialize, a session, --cleanup between calls
  Modern,  ///< 2026-07-28: every request carries its version and capabilities; no session
};

/// The standard headers of a Streamable HTTP POST (absent on stdio).
struct RequestHeaders {
  std::optional<std::string> protocol_version;  ///< MCP-Protocol-Version
  std::optional<std::string> method;            ///< Mcp-Method
  std::optional<std::string> name;              ///< Mcp-Name
};

struct EraDecision {
  Era era = Era::Legacy;
  std::string version;  ///< the revision the request named (Modern)
  nlohmann::json client_capabilities = nlohmann::json::object();  ///< Modern: from the envelope
  std::optional<nlohmann::json> error;  ///< set: answer this error response and nothing else
  int http_status = 200;                ///< the status an HTTP reply carrying `error` gets
};

/// Decides one request's or notification's era. `headers` is null on stdio. In this order
/// (the ladder of the SDK's own server): the body's envelope claim; a claim whose
/// `protocolVersion` is not a string is -32602; the MCP-Protocol-Version header disagreeing
/// with the claim is -32020; a version this server does not speak is -32022 with
/// `data.supported` (every revision, both eras) and `data.requested`; a `clientCapabilities`
/// missing or not an object is -32602 naming the key; Mcp-Method disagreeing with the body's
/// method is -32020; on
/// requests, a missing MCP-Protocol-Version, Mcp-Method or (for tools/call, tasks/get,
/// tasks/cancel) Mcp-Name, or an Mcp-Name that is not the body's, is -32020. Without a claim:
/// a modern MCP-Protocol-Version header is -32602 (the envelope is missing), else Legacy.
/// Every refusal is HTTP 400.
EraDecision decide_era(const Message& message, const RequestHeaders* headers);

/// Every revision this server speaks, modern first: what server/discover and -32022 list.
nlohmann::json supported_versions();

}  // namespace maf::sandbox::mcp
