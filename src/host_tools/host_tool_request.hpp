#pragma once
// The one parser of bytes a guest writes for the host-tools transport: a request file
// (docs/host-tools.md "Request files"). Fuzzed by fuzz/fuzz_host_tool_request.cpp.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <variant>

namespace maf::sandbox::detail {

struct HostToolRequest {
  std::string name;
  nlohmann::json arguments;  ///< whatever the guest sent; dispatch checks it is an object
};
/// The caller gave up on this number (it failed publishing); the supervisor steps over it.
struct AbandonedRequest {};
/// Not a request; `sentence` is the refusal the guest's caller is answered with.
struct MalformedRequest {
  std::string sentence;
};

using ParsedRequest = std::variant<HostToolRequest, AbandonedRequest, MalformedRequest>;

/// `bytes` is the file at `<calls>/<id>.request.json`; `id` the number it was found under
/// (four or more digits). A request whose own "id" names another number is refused, so a
/// forged file cannot be answered as someone else's call.
ParsedRequest parse_host_tool_request(std::string_view bytes, std::string_view id);

/// "0001", "0002", …
std::string request_id(int number);

}  // namespace maf::sandbox::detail
