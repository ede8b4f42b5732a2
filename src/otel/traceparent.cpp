// W3C Trace Context `traceparent` (otel.hpp). Bytes from outside the process: every rule of
// the format is checked, and fuzz/fuzz_traceparent.cpp holds the parser to never crashing.
#include <string>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/otel.hpp"

namespace maf::sandbox::otel {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is not allowed by the format
}

[[noreturn]] void refuse(std::string_view value, const char* rule) {
  std::string shown(value.substr(0, 80));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  throw ValueError("traceparent '" + shown + (value.size() > 80 ? "...'" : "'") + " is invalid: " + rule);
}

template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) {
  bool any = false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    any = any || out[i] != 0;
  }
  return any || N == 0;
}

}  // namespace

TraceParent parse_traceparent(std::string_view value) {
  // "vv-" + 32 + "-" + 16 + "-" + 2 = 55
  if (value.size() < 55) refuse(value, "shorter than the 55 bytes of version-traceid-parentid-flags");
  const int v_hi = hex_value(value[0]), v_lo = hex_value(value[1]);
  if (v_hi < 0 || v_lo < 0) refuse(value, "the version is not two lowercase hex digits");
  if (v_hi == 15 && v_lo == 15) refuse(value, "version ff is forbidden");
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') refuse(value, "the fields are not separated by '-'");
  const bool version_00 = v_hi == 0 && v_lo == 0;
  if (version_00 && value.size() != 55) refuse(value, "version 00 is exactly 55 bytes");
  if (!version_00 && value.size() > 55 && value[55] != '-')
    refuse(value, "a later version continues after the flags only with '-'");
  TraceParent out;
  std::array<std::uint8_t, 1> flags{};
  if (!read_hex(value.substr(3, 32), out.trace_id)) refuse(value, "the trace id is not 32 lowercase hex digits, not all zero");
  if (!read_hex(value.substr(36, 16), out.span_id)) refuse(value, "the parent id is not 16 lowercase hex digits, not all zero");
  const int f_hi = hex_value(value[53]), f_lo = hex_value(value[54]);
  if (f_hi < 0 || f_lo < 0) refuse(value, "the flags are not two lowercase hex digits");
  flags[0] = static_cast<std::uint8_t>(f_hi * 16 + f_lo);
  out.flags = flags[0];
  return out;
}

std::string to_string(const TraceParent& parent) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "00-";
  for (auto b : parent.trace_id) (s += kHex[b >> 4]) += kHex[b & 15];
  s += '-';
  for (auto b : parent.span_id) (s += kHex[b >> 4]) += kHex[b & 15];
  s += '-';
  (s += kHex[parent.flags >> 4]) += kHex[parent.flags & 15];
  return s;
}

}  // namespace maf::sandbox::otel
