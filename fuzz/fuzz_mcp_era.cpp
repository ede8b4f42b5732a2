// The MCP server's era decision (src/cli/mcp/era.cpp): a client's `_meta` envelope and its
// Streamable HTTP headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name), all outside bytes.
// The input's first three lines are the headers ("-" alone: absent), the rest the message.
// decide_era must never throw, and every refusal must be one of the revision's own errors,
// for the request's id, that the server can send as is.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "mcp/era.hpp"

namespace {

using maf::sandbox::mcp::Message;

std::optional<std::string> next_line(std::string_view& rest) {
  const auto nl = rest.find('\n');
  const std::string_view line = rest.substr(0, nl);
  rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  if (line == "-") return std::nullopt;
  return std::string(line);
}

void check(const Message& m, const maf::sandbox::mcp::EraDecision& d, bool http) {
  using maf::sandbox::mcp::Era;
  if (m.kind != Message::Kind::Request && m.kind != Message::Kind::Notification) {
    if (d.era != Era::Legacy || d.error) std::abort();
    return;
  }
  if (d.error) {
    const auto& e = *d.error;
    if (d.http_status != 400 || !e.contains("error") || !e["error"]["code"].is_number_integer()) std::abort();
    const int code = e["error"]["code"].get<int>();
    if (code != -32602 && code != -32022 && code != -32020) std::abort();
    if (code == -32020 && !http) std::abort();  // no headers, no header mismatch
    if (code == -32022 && (!e["error"]["data"]["supported"].is_array() || !e["error"]["data"].contains("requested")))
      std::abort();
    if (m.kind == Message::Kind::Request && e["id"] != m.id) std::abort();
    (void)e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  if (d.era == Era::Modern) {
    bool known = false;
    for (std::string_view v : maf::sandbox::mcp::kModernProtocolVersions) known = known || v == d.version;
    if (!known || !d.client_capabilities.is_object()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  maf::sandbox::mcp::RequestHeaders headers;
  headers.protocol_version = next_line(rest);
  headers.method = next_line(rest);
  headers.name = next_line(rest);
  const Message m = maf::sandbox::mcp::parse_message(rest);
  check(m, maf::sandbox::mcp::decide_era(m, &headers), true);
  check(m, maf::sandbox::mcp::decide_era(m, nullptr), false);
  return 0;
}
