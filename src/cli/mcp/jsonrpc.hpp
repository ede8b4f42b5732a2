#pragma once
// JSON-RPC 2.0 as MCP uses it (docs/mcp.md): one message per line on stdio, one per POST body
// over HTTP. Everything here reads bytes from outside, so nothing throws: a malformed message
// is classified, with the error response the protocol prescribes, and the server keeps
// serving. fuzz/fuzz_mcp_message.cpp drives it.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace maf::sandbox::mcp {

/// JSON-RPC error codes MCP uses.
enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
};

/// What one incoming message is.
struct Message {
  enum class Kind {
    Request,       ///< method + id: answered exactly once (or not at all once cancelled)
    Notification,  ///< method, no id: never answered
    Response,      ///< result or error with an id: an answer to a request of ours (we send none)
    Invalid,       ///< answered with `error_response`
  };
  Kind kind = Kind::Invalid;
  nlohmann::json id;      ///< a string or an integer (Request, Response)
  std::string method;     ///< Request, Notification
  nlohmann::json params;  ///< an object (or null when absent)
  nlohmann::json error_response;  ///< Invalid: what to send back
};

/// Classify one message. Never throws. Invalid JSON is a parse error (-32700, id null); a
/// batch (an array: MCP 2025-06-18 removed batching), a non-object, a missing or wrong
/// `jsonrpc`, a non-string method, an id that is null, fractional, boolean or structured,
/// or params that are not an object are invalid requests (-32600) — answered with the id
/// when it could be read.
Message parse_message(std::string_view text);

nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result);
nlohmann::json make_error(const nlohmann::json& id, int code, std::string message,
                          std::optional<nlohmann::json> data = std::nullopt);
nlohmann::json make_notification(std::string method, nlohmann::json params);

/// Splits a byte stream into lines (MCP stdio: newline-delimited, no embedded newlines; a
/// trailing "\r" is dropped). A line longer than `max_line_bytes` is never buffered whole:
/// its bytes are discarded up to the next newline and `on_oversize` is told its length, so
/// one huge line costs bounded memory and the stream goes on.
class LineFramer {
public:
  LineFramer(std::size_t max_line_bytes, std::function<void(std::string)> on_line,
             std::function<void(std::size_t)> on_oversize);
  void feed(std::string_view bytes);
  /// End of stream: a last line without its newline is delivered.
  void finish();

private:
  std::size_t max_;
  std::function<void(std::string)> on_line_;
  std::function<void(std::size_t)> on_oversize_;
  std::string line_;
  bool discarding_ = false;
  std::size_t discarded_ = 0;
};

}  // namespace maf::sandbox::mcp
