// libFuzzer target for the egress proxy's control-channel messages
// (backends/egress-proxy/src/control_protocol.hpp; docs/backends/egress-proxy.md EGU-1, EGU-4).
// The host writes these lines, not the guest, but a decider's reason ends up in the guest's
// 403 body and the decision log, so what it may carry is held here.
//
// Invariants: only std::invalid_argument escapes the parser; a parsed answer's reason holds
// no control character and at most kMaxDeciderReason bytes; every line the proxy writes is a
// single line of JSON, whatever the reason or the error text holds.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "../backends/egress-proxy/src/control_protocol.cpp"

using namespace maf::sandbox::egress_proxy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const ControlMessage m = parse_control_line(input);
    if (m.reason.size() > kMaxDeciderReason) std::abort();
    for (const char c : m.reason)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) std::abort();
    const std::string reply = error_line(m.id, m.reason) + ok_line(m.id, m.allow, 1) + updated_line(m.allow, 0);
    // Three single-line objects: never a newline inside.
    if (reply.find('\n') != std::string::npos) std::abort();
  } catch (const std::invalid_argument&) {
  }
  const std::string text(input);
  if (ask_line(1, text, text, 443).find('\n') != std::string::npos) std::abort();
  if (error_line(1, text).find('\n') != std::string::npos) std::abort();
  return 0;
}
