// Method and path rules (l7_rules.hpp).
#include "l7_rules.hpp"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "maf/sandbox/egress_path.hpp"

namespace maf::sandbox::egress_proxy {
namespace {

std::string join(const std::vector<std::string>& list) {
  std::string out;
  for (const auto& s : list) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::vector<std::string> read_list(const nlohmann::json& rule, const char* field, const std::string& where) {
  const auto& v = rule.at(field);
  if (!v.is_array() || v.empty()) throw std::invalid_argument(where + ": " + field + " must be a non-empty array");
  std::vector<std::string> out;
  for (const auto& item : v) {
    if (!item.is_string()) throw std::invalid_argument(where + ": " + field + " holds a non-string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

std::string L7Rule::describe() const {
  std::string out = (host.wildcard ? "*." : "") + host.host + (host.port ? ":" + std::to_string(*host.port) : "");
  if (methods) out += " methods [" + join(*methods) + "]";
  if (paths) out += " paths [" + join(*paths) + "]";
  return out;
}

L7Rules L7Rules::parse_json(std::string_view text) {
  L7Rules out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("rules are not JSON: ") + e.what());
  }
  if (!j.is_array()) throw std::invalid_argument("rules must be a JSON array of {host, methods, paths}");
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& r = j[i];
    const std::string where = "rule " + std::to_string(i);
    if (!r.is_object() || !r.contains("host") || !r.at("host").is_string())
      throw std::invalid_argument(where + " is not an object with a string host");
    for (const auto& [key, value] : r.items())
      if (key != "host" && key != "methods" && key != "paths")
        throw std::invalid_argument(where + ": unknown field '" + key + "'");
    const Allowlist host = Allowlist::parse(r.at("host").get<std::string>());
    if (host.entries().size() != 1) throw std::invalid_argument(where + ": host must name one entry");
    L7Rule rule{host.entries().front(), std::nullopt, std::nullopt};
    if (r.contains("methods")) rule.methods = read_list(r, "methods", where);
    if (r.contains("paths")) {
      rule.paths = read_list(r, "paths", where);
      for (const auto& p : *rule.paths)
        if (auto problem = egress_path_pattern_problem(p))
          throw std::invalid_argument(where + ": path '" + p + "' is not a path pattern: " + *problem);
    }
    if (!rule.methods && !rule.paths)
      throw std::invalid_argument(where + " narrows nothing (list the host in the allowlist instead)");
    out.rules_.push_back(std::move(rule));
  }
  return out;
}

void L7Rules::add(const L7Rules& other) { rules_.insert(rules_.end(), other.rules_.begin(), other.rules_.end()); }

const L7Rule* L7Rules::find(bool connect, const std::string& host, std::uint16_t port) const {
  const std::uint16_t default_port = connect ? 443 : 80;
  for (const auto& r : rules_)
    if (r.host.matches(host) && port == r.host.port.value_or(default_port)) return &r;
  return nullptr;
}

L7Verdict check_request(const L7Rule& rule, std::string_view method, std::string_view target, std::string_view host) {
  L7Verdict v;
  const auto canonical = canonicalize_request_path(target);
  const std::string rule_text = rule.describe();
  if (!canonical.value) {
    v.status = 400;
    v.reason = "refused " + std::string(method) + " on " + std::string(host) + ": its path has " + canonical.problem +
               " (rule " + rule_text + ")";
    return v;
  }
  v.canonical_path = canonical.value->path;
  if (rule.methods && std::find(rule.methods->begin(), rule.methods->end(), method) == rule.methods->end()) {
    v.status = 403;
    v.reason = "refused " + std::string(method) + " " + v.canonical_path + " on " + std::string(host) +
               ": method " + std::string(method) + " is not allowed by rule " + rule_text;
    return v;
  }
  if (rule.paths && std::none_of(rule.paths->begin(), rule.paths->end(),
                                 [&](const std::string& p) { return egress_path_matches(p, v.canonical_path); })) {
    v.status = 403;
    v.reason = "refused " + std::string(method) + " " + v.canonical_path + " on " + std::string(host) + ": path " +
               v.canonical_path + " matches no path of rule " + rule_text;
    return v;
  }
  v.allowed = true;
  v.upstream_target = v.canonical_path + (canonical.value->query ? "?" + *canonical.value->query : std::string());
  return v;
}

std::string refusal_body(std::string_view reason) {
  std::string line = "maf-sandbox egress proxy: " + std::string(reason);
  // One line, whatever the reason holds (a path is checked, a host normalised; be sure).
  std::replace_if(line.begin(), line.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  return line + "\n";
}

}  // namespace maf::sandbox::egress_proxy
