#include "era.hpp"

namespace maf::sandbox::mcp {

namespace {

bool is_modern(std::string_view version) {
  for (std::string_view v : kModernProtocolVersions)
    if (v == version) return true;
  return false;
}

/// The body field the Mcp-Name header mirrors for a method, or none.
std::optional<std::string_view> name_field(std::string_view method) {
  if (method == "tools/call" || method == "prompts/get") return "name";
  if (method == "resources/read") return "uri";
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") return "taskId";
  return std::nullopt;
}

EraDecision refuse(const Message& m, int code, std::string text, std::optional<nlohmann::json> data = std::nullopt) {
  EraDecision d;
  d.era = Era::Modern;
  const nlohmann::json id = m.kind == Message::Kind::Request ? m.id : nlohmann::json(nullptr);
  d.error = make_error(id, code, std::move(text), std::move(data));
  d.http_status = 400;
  return d;
}

/// A header value for a message: printable, bounded (it is quoted back).
std::string quoted(const std::string& value) {
  std::string out = value.substr(0, 80);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
  return "'" + out + (value.size() > 80 ? "...'" : "'");
}

}  // namespace

nlohmann::json supported_versions() {
  nlohmann::json list = nlohmann::json::array();
  for (std::string_view v : kModernProtocolVersions) list.push_back(std::string(v));
  for (std::string_view v : kProtocolVersions) list.push_back(std::string(v));
  return list;
}

EraDecision decide_era(const Message& m, const RequestHeaders* headers) {
  if (m.kind != Message::Kind::Request && m.kind != Message::Kind::Notification) return {};
  const nlohmann::json* meta = nullptr;
  if (m.params.is_object()) {
    const auto it = m.params.find("_meta");
    if (it != m.params.end() && it->is_object()) meta = &*it;
  }
  const nlohmann::json* claim = nullptr;
  if (meta) {
    const auto it = meta->find(std::string(kMetaProtocolVersion));
    if (it != meta->end()) claim = &*it;
  }

  if (!claim) {
    if (headers && headers->protocol_version && is_modern(*headers->protocol_version))
      return refuse(m, kInvalidParams,
                    "Invalid params: the MCP-Protocol-Version header names " + quoted(*headers->protocol_version) +
                        " but the request has no _meta envelope (" + std::string(kMetaProtocolVersion) + ", " +
                        std::string(kMetaClientCapabilities) + ")");
    return {};  // the 2025 era: initialize, then a session
  }

  if (!claim->is_string())
    return refuse(m, kInvalidParams, "Invalid params: _meta " + std::string(kMetaProtocolVersion) + " must be a string");
  const std::string version = claim->get<std::string>();
  // The header cross-check is part of classifying the era, before the supported-version gate
  // (the SDK's ladder; conformance sep-2575-http-server-header-mismatch-400).
  if (headers && headers->protocol_version && *headers->protocol_version != version)
    return refuse(m, kHeaderMismatch,
                  "Header mismatch: MCP-Protocol-Version " + quoted(*headers->protocol_version) +
                      " disagrees with the body's " + quoted(version));
  if (!is_modern(version))
    return refuse(m, kUnsupportedProtocolVersion,
                  "Unsupported protocol version: " + quoted(version) + " (this server speaks " +
                      supported_versions().dump() + ")",
                  nlohmann::json{{"supported", supported_versions()}, {"requested", version}});
  const auto caps = meta->find(std::string(kMetaClientCapabilities));
  if (caps == meta->end())
    return refuse(m, kInvalidParams, "Invalid params: _meta lacks " + std::string(kMetaClientCapabilities));
  if (!caps->is_object())
    return refuse(m, kInvalidParams, "Invalid params: _meta " + std::string(kMetaClientCapabilities) + " must be an object");
  if (const auto info = meta->find(std::string(kMetaClientInfo)); info != meta->end() && !info->is_object())
    return refuse(m, kInvalidParams, "Invalid params: _meta " + std::string(kMetaClientInfo) + " must be an object");

  if (headers) {
    if (headers->method && *headers->method != m.method)
      return refuse(m, kHeaderMismatch,
                    "Header mismatch: Mcp-Method " + quoted(*headers->method) + " disagrees with the body's method " +
                        quoted(m.method));
    if (m.kind == Message::Kind::Request) {
      if (!headers->protocol_version)
        return refuse(m, kHeaderMismatch, "Header mismatch: the MCP-Protocol-Version header is missing");
      if (!headers->method) return refuse(m, kHeaderMismatch, "Header mismatch: the Mcp-Method header is missing");
      if (const auto field = name_field(m.method)) {
        const auto value = m.params.find(std::string(*field));
        if (value != m.params.end() && value->is_string()) {
          if (!headers->name)
            return refuse(m, kHeaderMismatch,
                          "Header mismatch: the Mcp-Name header is missing (" + m.method + " needs params." +
                              std::string(*field) + ")");
          if (*headers->name != value->get_ref<const std::string&>())
            return refuse(m, kHeaderMismatch,
                          "Header mismatch: Mcp-Name " + quoted(*headers->name) + " disagrees with params." +
                              std::string(*field) + " " + quoted(value->get<std::string>()));
        }
      }
    }
  }

  EraDecision d;
  d.era = Era::Modern;
  d.version = version;
  d.client_capabilities = *caps;
  return d;
}

}  // namespace maf::sandbox::mcp
