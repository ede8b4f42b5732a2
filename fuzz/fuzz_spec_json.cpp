// libFuzzer target for SandboxSpec from JSON (spec_json.hpp): the CLI reads spec files a user
// or a model may have written. Any input parses to a valid spec or is refused with
// ValueError (or the JSON parser's own parse error); a parsed spec round-trips through
// spec_to_json to the same fields.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/spec_json.hpp"

using namespace maf::sandbox;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  nlohmann::json document = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return 0;
  try {
    const SandboxSpec spec = spec_from_json(document);
    const SandboxSpec again = spec_from_json(spec_to_json(spec));
    if (spec_to_json(again) != spec_to_json(spec)) std::abort();
  } catch (const ValueError&) {
  }
  return 0;
}
