// libFuzzer target: an interpreter context's answer reader (src/background/interpreter_context.cpp,
// docs/contexts.md CTX-9) on arbitrary bytes — what a hostile guest's program can print in
// place of the driver's answer.
//
// Invariants: it returns a result or throws OSError, nothing else, and never crashes; a decoded
// output is never longer than the base64 it came from.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "background/context_driver.hpp"

using namespace maf::sandbox;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    const ContextRunResult r = detail::parse_context_answer(input);
    std::size_t decoded = 0;
    for (const auto& o : r.outputs) decoded += o.bytes.size();
    if (decoded > input.size()) std::abort();
  } catch (const OSError&) {
  } catch (...) {
    std::abort();
  }
  return 0;
}
