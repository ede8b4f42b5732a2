// libFuzzer target: the host-tools request-file parser (src/host_tools/host_tool_request.cpp) on
// arbitrary bytes — what a hostile guest writes at <calls>/<id>.request.json.
//
// Invariants: it never throws and never crashes; a parsed request names a string tool; a
// malformed one carries a sentence the guest may read, of bounded size (it quotes only the
// id it was found under, never the guest's bytes); and a request is only ever accepted
// under the id it states.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host_tools/host_tool_request.hpp"

using namespace maf::sandbox::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const ParsedRequest parsed = parse_host_tool_request(input, "0001");
  if (const auto* bad = std::get_if<MalformedRequest>(&parsed)) {
    if (bad->sentence.empty() || bad->sentence.size() > 200) std::abort();
  } else if (std::holds_alternative<HostToolRequest>(parsed) || std::holds_alternative<AbandonedRequest>(parsed)) {
    // Accepted only under its own id: the same bytes under another id are refused.
    if (!std::holds_alternative<MalformedRequest>(parse_host_tool_request(input, "0002"))) std::abort();
  }
  return 0;
}
