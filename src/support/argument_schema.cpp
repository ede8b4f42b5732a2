// Argument validation for sandboxed tools (issue 26 item 2): valijson over nlohmann::json.
#include "support/argument_schema.hpp"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::detail {
namespace {

// valijson names a node by "<root>" then "[name]" / "[index]" segments; a JSON Pointer is
// what a host (and a model) reads.
std::string pointer_of(const std::vector<std::string>& context) {
  std::string out;
  for (const auto& part : context) {
    if (part == "<root>") continue;
    std::string name = part;
    if (name.size() >= 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
    if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
    out += '/';
    for (char c : name) {
      if (c == '~') out += "~0";
      else if (c == '/') out += "~1";
      else out += c;
    }
  }
  return out.empty() ? "/" : out;
}

}  // namespace

ArgumentSchema::ArgumentSchema(const nlohmann::json& schema, const std::string& tool_name)
    : schema_(std::make_unique<valijson::Schema>()) {
  if (!schema.is_object())
    throw ValueError("tool '" + tool_name + "': input_schema must be a JSON Schema object, got " +
                     std::string(schema.type_name()));
  try {
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(schema);
    parser.populateSchema(adapter, *schema_);
  } catch (const std::exception& e) {
    throw ValueError("tool '" + tool_name + "': input_schema is not a valid JSON Schema: " + e.what());
  }
}

ArgumentSchema::~ArgumentSchema() = default;

std::optional<std::string> ArgumentSchema::problem(const nlohmann::json& arguments) const {
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(arguments);
  if (validator.validate(*schema_, target, &results)) return std::nullopt;
  // The deepest error is the specific one; its parents only say "a child failed".
  const valijson::ValidationResults::Error* best = nullptr;
  for (const auto& error : results)
    if (!best || error.context.size() > best->context.size()) best = &error;
  if (!best) return std::string("at '/': the arguments do not match the input schema");
  return "at '" + pointer_of(best->context) + "': " + best->description;
}

}  // namespace maf::sandbox::detail
