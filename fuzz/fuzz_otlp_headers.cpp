// libFuzzer target: the OTEL_EXPORTER_OTLP_HEADERS parser of maf::sandbox-otel (otel.hpp)
// on arbitrary bytes. Pure, so fuzz/CMakeLists.txt compiles src/otel/otlp_headers.cpp in.
//
// Invariants: it returns or throws ValueError, nothing else; every key is a non-empty HTTP
// token and no value holds CR, LF or NUL — a header list can never smuggle a header line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/otel.hpp"

using namespace maf::sandbox;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& [key, value] : otel::parse_otlp_headers(input)) {
      if (key.empty()) std::abort();
      for (char c : key)
        if (c <= ' ' || c == ':' || c == ',' || c == '=' || static_cast<unsigned char>(c) >= 0x7f) std::abort();
      for (char c : value)
        if (c == '\r' || c == '\n' || c == '\0') std::abort();
    }
  } catch (const ValueError&) {
  }
  return 0;
}
