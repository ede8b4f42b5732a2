// OTEL_EXPORTER_OTLP_HEADERS (otel.hpp): the W3C Baggage-like list the OpenTelemetry
// exporter specification names. Bytes from outside the process (fuzz/fuzz_otlp_headers.cpp);
// a decoded header may never carry CR, LF or NUL, so no list can smuggle a header line.
#include <string>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/otel.hpp"

namespace maf::sandbox::otel {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

[[noreturn]] void refuse(std::string_view item, const char* rule) {
  std::string shown(item.substr(0, 80));
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
  // The value may be a secret (an API key): name the entry by its key only.
  const auto eq = shown.find('=');
  if (eq != std::string::npos) shown = shown.substr(0, eq) + "=...";
  throw ValueError("OTEL_EXPORTER_OTLP_HEADERS entry '" + shown + "' is invalid: " + rule);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_otlp_headers(std::string_view value) {
  std::vector<std::pair<std::string, std::string>> out;
  while (true) {
    const auto comma = value.find(',');
    const std::string_view item = trim(value.substr(0, comma));
    if (!item.empty()) {
      const auto eq = item.find('=');
      if (eq == std::string_view::npos) refuse(item, "no '=' between key and value");
      const std::string_view key = trim(item.substr(0, eq));
      const std::string_view raw = trim(item.substr(eq + 1));
      if (key.empty()) refuse(item, "the key is empty");
      for (char c : key)
        if (!is_tchar(c)) refuse(item, "the key is not an HTTP header name");
      std::string decoded;
      for (std::size_t i = 0; i < raw.size(); ++i) {
        char c = raw[i];
        if (c == '%') {
          if (i + 2 >= raw.size()) refuse(item, "a '%' escape is cut short");
          const int hi = hex_digit(raw[i + 1]), lo = hex_digit(raw[i + 2]);
          if (hi < 0 || lo < 0) refuse(item, "a '%' escape is not two hex digits");
          c = static_cast<char>(hi * 16 + lo);
          i += 2;
        }
        if (c == '\r' || c == '\n' || c == '\0') refuse(item, "the value holds CR, LF or NUL");
        decoded += c;
      }
      out.emplace_back(std::string(key), std::move(decoded));
    }
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace maf::sandbox::otel
