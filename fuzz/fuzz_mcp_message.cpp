// The MCP server's reader of bytes from its client (src/cli/mcp/jsonrpc.cpp): line framing
// with its size cap, then message classification. Neither may crash, hang or grow without
// bound, and every classification must be one the server can answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mcp/jsonrpc.hpp"

namespace {

void check(const maf::sandbox::mcp::Message& m) {
  using Kind = maf::sandbox::mcp::Message::Kind;
  switch (m.kind) {
    case Kind::Invalid: {
      const auto& e = m.error_response;
      if (!e.contains("error") || !e["error"]["code"].is_number_integer() || !e.contains("id")) std::abort();
      const int code = e["error"]["code"].get<int>();
      if (code != -32700 && code != -32600 && code != -32602) std::abort();
      (void)e.dump();  // must serialise: it is sent as is
      break;
    }
    case Kind::Request:
    case Kind::Response:
      if (!m.id.is_string() && !m.id.is_number_integer()) std::abort();
      break;
    case Kind::Notification:
      if (!m.id.is_null()) std::abort();
      break;
  }
  if ((m.kind == Kind::Request || m.kind == Kind::Notification) && !m.params.is_null() && !m.params.is_object())
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check(maf::sandbox::mcp::parse_message(bytes));
  constexpr std::size_t kCap = 256;
  std::size_t lines = 0;
  maf::sandbox::mcp::LineFramer framer(
      kCap,
      [&](std::string line) {
        if (line.size() > kCap || line.find('\n') != std::string::npos) std::abort();
        ++lines;
        check(maf::sandbox::mcp::parse_message(line));
      },
      [&](std::size_t n) {
        if (n <= kCap) std::abort();
        ++lines;
      });
  // Fed in uneven pieces, as a pipe delivers them.
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t n = 1 + (static_cast<unsigned char>(bytes[at]) % 97);
    framer.feed(bytes.substr(at, n));
    at += n;
  }
  framer.finish();
  if (lines > size + 1) std::abort();
  return 0;
}
