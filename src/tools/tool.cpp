// The tool contract's JSON edges (include/maf/sandbox/tool.hpp): parsing an OpenAI-style call
// and rendering a result, the only places the contract meets a wire format.
#include "maf/sandbox/tool.hpp"

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {
namespace {

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

nlohmann::json labels_json(const std::optional<ContentLabels>& labels) {
  const ContentLabels l = labels.value_or(ContentLabels{});
  return {{"integrity", to_string(l.integrity)}, {"confidentiality", to_string(l.confidentiality)}};
}

std::string required_string(const nlohmann::json& object, const char* field, const char* where) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_string())
    throw ValueError(std::string("tool call: '") + field + "' " + (it == object.end() ? "is missing" : "is not a string") +
                     " in " + where);
  return it->get<std::string>();
}

}  // namespace

std::string ToolResult::joined_text() const {
  std::string out;
  for (const auto& item : content)
    if (const auto* t = std::get_if<TextContent>(&item.value)) {
      if (!out.empty()) out += '\n';
      out += t->text;
    }
  return out;
}

ToolCall parse_tool_call(std::string_view json_text) {
  nlohmann::json line;
  try {
    line = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ValueError(std::string("tool call is not JSON: ") + e.what());
  }
  if (!line.is_object()) throw ValueError("tool call must be a JSON object, got " + std::string(line.type_name()));
  ToolCall call;
  call.id = required_string(line, "id", "the call");
  // OpenAI nests name and arguments under "function"; the flat form is the brief's shape.
  const nlohmann::json* body = &line;
  if (auto fn = line.find("function"); fn != line.end()) {
    if (!fn->is_object()) throw ValueError("tool call: 'function' is not an object");
    body = &*fn;
  }
  call.name = required_string(*body, "name", "the call");
  auto args = body->find("arguments");
  if (args == body->end() || args->is_null()) {
    call.arguments = nlohmann::json::object();
  } else if (args->is_string()) {
    try {
      call.arguments = nlohmann::json::parse(args->get<std::string>());
    } catch (const nlohmann::json::parse_error& e) {
      throw ValueError("tool call '" + call.id + "': 'arguments' is a string that is not JSON: " + e.what());
    }
  } else {
    call.arguments = *args;
  }
  return call;
}

nlohmann::json to_json(const ToolCall& call, const ToolResult& result) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& item : result.content) {
    nlohmann::json j;
    if (const auto* t = std::get_if<TextContent>(&item.value)) {
      j = {{"type", "text"}, {"text", t->text}};
    } else if (const auto* b = std::get_if<BytesContent>(&item.value)) {
      j = {{"type", "bytes"}, {"media_type", b->media_type}, {"data_base64", base64(b->data)}};
    } else {
      const auto& link = std::get<ArtifactLink>(item.value);
      j = {{"type", "artifact"}, {"name", link.artifact.name}, {"display", link.artifact.display}};
      if (link.media_type) j["media_type"] = *link.media_type;
    }
    j["labels"] = labels_json(item.labels);
    items.push_back(std::move(j));
  }
  nlohmann::json out{{"role", "tool"}, {"tool_call_id", call.id}, {"is_error", result.is_error}, {"content", items}};
  if (result.structured) out["structured"] = *result.structured;
  return out;
}

nlohmann::json to_openai_json(const ToolDefinition& definition) {
  return {{"type", "function"},
          {"function",
           {{"name", definition.name}, {"description", definition.description}, {"parameters", definition.input_schema}}}};
}

nlohmann::json to_mcp_json(const ToolDefinition& d) {
  nlohmann::json annotations{{"readOnlyHint", d.annotations.read_only_hint},
                             {"destructiveHint", d.annotations.destructive_hint},
                             {"idempotentHint", d.annotations.idempotent_hint},
                             {"openWorldHint", d.annotations.open_world_hint}};
  if (d.annotations.title) annotations["title"] = *d.annotations.title;
  return {{"name", d.name}, {"description", d.description}, {"inputSchema", d.input_schema},
          {"annotations", std::move(annotations)}};
}

}  // namespace maf::sandbox
