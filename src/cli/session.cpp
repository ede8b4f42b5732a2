#include "session.hpp"

#include <fstream>
#include <sstream>

#include "maf/sandbox/credential_sources.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/registry.hpp"
#include "maf/sandbox/spec_json.hpp"

namespace maf::sandbox::cli {

nlohmann::json read_json_file(const std::filesystem::path& file, std::string_view what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ValueError(std::string(what) + " file '" + file.string() + "' cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw ValueError(std::string(what) + " file '" + file.string() + "' is not valid JSON: " + e.what());
  }
}

nlohmann::json backend_config(const Args& args) {
  auto file = args.get("config");
  if (!file) return nlohmann::json::object();
  nlohmann::json config = read_json_file(*file, "config");
  if (!config.is_object())
    throw ValueError("config file '" + *file + "' must hold a JSON object, got " + config.type_name());
  return config;
}

SandboxSpec minimal_spec() {
  return SandboxSpec(SandboxSpec::Fields{
      .kind = "cli", .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut}});
}

SandboxSpec load_spec(const std::filesystem::path& file) {
  const nlohmann::json j = read_json_file(file, "spec");
  try {
    return spec_from_json(j);
  } catch (const ValueError& e) {
    throw ValueError("spec file '" + file.string() + "': " + e.what());
  }
}

Isolation min_isolation(const Args& args) {
  auto text = args.get("min-isolation");
  if (!text) return kDefaultMinIsolation;
  try {
    return parse_isolation(*text);
  } catch (const ValueError& e) {
    throw ValueError(std::string("--min-isolation: ") + e.what());
  }
}

SandboxKey key_from(const Args& args) {
  return SandboxKey{args.get("scope").value_or("cli"), args.get("thread").value_or("cli"),
                    args.get("agent").value_or("cli"), args.get("call").value_or("")};
}

std::chrono::seconds parse_duration(const std::string& text, std::string_view option) {
  auto refuse = [&] {
    return ValueError("--" + std::string(option) + ": '" + text +
                      "' is not a duration (a whole number with an optional unit s, m, h or d)");
  };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) throw refuse();
  const long long n = std::stoll(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  long long scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "m") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  else throw refuse();
  return std::chrono::seconds(n * scale);
}

RouterOptions router_options(const Args& args, Isolation floor) {
  RouterOptions o = RouterOptions::lowered_floor(floor, LowerIsolationFloor{});
  if (const auto text = args.get("max-identity-scope")) {
    try {
      o.max_identity_scope = parse_enum<IdentityScope>(*text);
    } catch (const ValueError& e) {
      throw ValueError(std::string("--max-identity-scope: ") + e.what());
    }
  }
  return o;
}

void attach_credentials(const Args& args, SandboxRouter& router, const std::vector<SandboxSpec>& specs) {
  std::map<std::string, std::string> bindings;
  for (const auto& b : args.all("credential")) {
    const auto eq = b.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--credential '" + b + "': give NAME=env:VARIABLE or NAME=file:PATH");
    if (!bindings.emplace(b.substr(0, eq), b.substr(eq + 1)).second)
      throw UsageError("--credential: credential '" + b.substr(0, eq) + "' is named twice");
  }
  for (const auto& spec : specs)
    for (const auto& c : spec.attached_identity())
      if (!bindings.count(c.name()))
        throw UsageError("kind '" + spec.kind() + "' names credential '" + c.name() + "': give --credential " +
                         c.name() + "=env:VARIABLE or " + c.name() + "=file:PATH (its value stays on this host)");
  if (!bindings.empty()) router.attach_credential_source(credential_source_from(std::move(bindings)));
}

std::shared_ptr<SandboxBackend> create_backend(Session& session, const nlohmann::json& config) {
  const std::string name = session.args.required("backend");
  session.phase = Phase::Backend;
  session.reporter.progress("loading backend '" + name + "'");
  return PluginRegistry::global().create(name, config);
}

}  // namespace maf::sandbox::cli
