#pragma once
// A tool's input schema, compiled once (JSON Schema draft 7, by valijson — Debian's
// libvalijson-dev, header-only and private to the core). Thread-safe after construction:
// each check builds its own validator (valijson caches regexes per validator).
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

namespace valijson {
class Schema;
}

namespace maf::sandbox::detail {

class ArgumentSchema {
public:
  /// ValueError naming the tool when `schema` is not a valid schema.
  ArgumentSchema(const nlohmann::json& schema, const std::string& tool_name);
  ~ArgumentSchema();
  ArgumentSchema(const ArgumentSchema&) = delete;
  ArgumentSchema& operator=(const ArgumentSchema&) = delete;

  /// Absent when `arguments` validate; otherwise the most specific problem, as
  /// "at '/json/pointer': description" (the field is named; the model's value is not quoted).
  std::optional<std::string> problem(const nlohmann::json& arguments) const;

private:
  std::unique_ptr<valijson::Schema> schema_;
};

}  // namespace maf::sandbox::detail
