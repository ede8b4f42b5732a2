// libFuzzer target: the W3C `traceparent` parser of maf::sandbox-otel (otel.hpp) on
// arbitrary bytes — a host header, or the TRACEPARENT variable. The parser is pure, so
// fuzz/CMakeLists.txt compiles src/otel/traceparent.cpp straight in.
//
// Invariants: it accepts or throws ValueError, nothing else; an accepted value has ids that
// are not all zero, and for version 00 printing it back gives the input byte for byte.
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
    const otel::TraceParent p = otel::parse_traceparent(input);
    bool trace_nonzero = false, span_nonzero = false;
    for (auto b : p.trace_id) trace_nonzero = trace_nonzero || b != 0;
    for (auto b : p.span_id) span_nonzero = span_nonzero || b != 0;
    if (!trace_nonzero || !span_nonzero) std::abort();
    if (input.substr(0, 2) == "00" && otel::to_string(p) != input) std::abort();
  } catch (const ValueError&) {
  }
  return 0;
}
