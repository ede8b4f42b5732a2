// Request-file parsing for the host-tools transport (docs/host-tools.md "Request files").
#include "host_tools/host_tool_request.hpp"

#include <cstdio>

namespace maf::sandbox::detail {

ParsedRequest parse_host_tool_request(std::string_view bytes, std::string_view id) {
  nlohmann::json parsed = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object())
    return MalformedRequest{"Error: this host-tool request is not a JSON object"};
  const auto stated = parsed.find("id");
  if (stated == parsed.end() || !stated->is_string() || stated->get_ref<const std::string&>() != id)
    return MalformedRequest{"Error: this host-tool request does not carry its own id (" + std::string(id) + ")"};
  if (const auto abandoned = parsed.find("abandoned"); abandoned != parsed.end() && *abandoned == true)
    return AbandonedRequest{};
  const auto name = parsed.find("name");
  if (name == parsed.end() || !name->is_string())
    return MalformedRequest{"Error: this host-tool request names no tool (\"name\" must be a string)"};
  HostToolRequest request;
  request.name = name->get<std::string>();
  const auto arguments = parsed.find("arguments");
  request.arguments = arguments == parsed.end() ? nlohmann::json::object() : *arguments;
  return request;
}

std::string request_id(int number) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%04d", number);
  return buffer;
}

}  // namespace maf::sandbox::detail
