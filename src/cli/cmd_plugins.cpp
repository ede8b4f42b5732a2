// `maf-sandbox plugins`: what the registry finds, and what it refused.
#include <fmt/core.h>

#include "commands.hpp"
#include "maf/sandbox/registry.hpp"
#include "render.hpp"

namespace maf::sandbox::cli {

int cmd_plugins(Session& session) {
  PluginRegistry& registry = PluginRegistry::global();
  session.phase = Phase::Backend;
  session.reporter.progress("loading plugins");
  const PluginCatalog catalog = registry.list();

  nlohmann::json j = {{"search_dirs", nlohmann::json::array()},
                      {"backends", nlohmann::json::array()},
                      {"failures", nlohmann::json::array()}};
  std::string human = "search path:\n";
  for (const auto& dir : registry.search_dirs()) {
    j["search_dirs"].push_back(dir.string());
    human += "  " + dir.string() + "\n";
  }
  human += catalog.backends.empty() ? "no backends found\n" : "backends:\n";
  for (const auto& b : catalog.backends) {
    nlohmann::json entry = {{"name", b.name},         {"version", b.version},
                            {"description", b.description}, {"supports_reap", b.supports_reap}};
    entry["file"] = b.file ? nlohmann::json(b.file->string()) : nlohmann::json();
    entry["isolation"] = b.isolation ? nlohmann::json(*b.isolation) : nlohmann::json();
    entry["declarations"] = b.declarations ? declarations_json(*b.declarations) : nlohmann::json();
    entry["describe_error"] = b.describe_error ? nlohmann::json(*b.describe_error) : nlohmann::json();
    entry["facts"] = nlohmann::json::object();
    for (const auto& [fact, value] : b.facts) entry["facts"][fact] = value;
    j["backends"].push_back(std::move(entry));

    human += fmt::format("  {} {}{}\n", b.name, b.version, b.description.empty() ? "" : " - " + b.description);
    human += fmt::format("    file:             {}\n", b.file ? b.file->string() : "(linked into the program)");
    if (b.isolation) human += fmt::format("    isolation:        {}\n", *b.isolation);
    if (b.declarations) human += declarations_text(*b.declarations, "    ");
    if (b.supports_reap) human += "    offers reap\n";
    for (const auto& [fact, value] : b.facts) human += fmt::format("    {}: {}\n", fact, value);
    if (b.describe_error) human += fmt::format("    needs configuration to describe itself: {}\n", *b.describe_error);
  }
  std::string refused, shadowed;
  for (const auto& f : catalog.failures) {
    j["failures"].push_back(
        {{"file", f.file.string()}, {"reason", std::string(to_string(f.reason))}, {"message", f.message}});
    (f.reason == PluginFailure::Shadowed ? shadowed : refused) +=
        fmt::format("  {} ({}): {}\n", f.file.string(), to_string(f.reason), f.message);
  }
  if (!refused.empty()) human += "refused plugin files:\n" + refused;
  if (!shadowed.empty()) human += "shadowed by an earlier search directory (not used):\n" + shadowed;
  session.reporter.result(j, human);
  // Nothing to serve is a failure a script must see; refused files beside good backends are not.
  return catalog.backends.empty() ? kExitBackend : kExitOk;
}

}  // namespace maf::sandbox::cli
