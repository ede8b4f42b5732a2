// Brokered credentials (credentials.hpp).
#include "credentials.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace maf::sandbox::egress_proxy {
namespace {

bool iequal(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

std::string filled(const std::string& format, std::string_view with) {
  std::string out = format;
  const auto at = out.find("{value}");
  if (at != std::string::npos) out.replace(at, 7, with);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string read_string(const nlohmann::json& j, const char* field, const std::string& where) {
  if (!j.contains(field) || !j.at(field).is_string())
    throw std::invalid_argument(where + ": " + field + " must be a string");
  return j.at(field).get<std::string>();
}

}  // namespace

Credentials Credentials::parse_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("credentials are not JSON: ") + e.what());
  }
  if (!j.is_array()) throw std::invalid_argument("credentials must be a JSON array");
  Credentials out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& c = j[i];
    const std::string where = "credential " + std::to_string(i);
    if (!c.is_object()) throw std::invalid_argument(where + " is not an object");
    for (const auto& [key, value] : c.items())
      if (key != "name" && key != "hosts" && key != "header" && key != "format" && key != "placeholder" &&
          key != "allow_http")
        throw std::invalid_argument(where + ": unknown field '" + key + "'");
    BrokeredCredential b;
    b.name = read_string(c, "name", where);
    const std::string named = where + " ('" + b.name + "')";
    b.header = read_string(c, "header", named);
    b.format = read_string(c, "format", named);
    b.placeholder = read_string(c, "placeholder", named);
    if (b.placeholder.size() < 16) throw std::invalid_argument(named + ": placeholder is shorter than 16 characters");
    if (b.format.find("{value}") == std::string::npos) throw std::invalid_argument(named + ": format lacks {value}");
    if (c.contains("allow_http")) {
      if (!c.at("allow_http").is_boolean()) throw std::invalid_argument(named + ": allow_http must be true or false");
      b.allow_http = c.at("allow_http").get<bool>();
    }
    if (!c.contains("hosts") || !c.at("hosts").is_array() || c.at("hosts").empty())
      throw std::invalid_argument(named + ": hosts must be a non-empty array");
    for (const auto& h : c.at("hosts")) {
      if (!h.is_string()) throw std::invalid_argument(named + ": hosts holds a non-string");
      const Allowlist one = Allowlist::parse(h.get<std::string>());
      if (one.entries().size() != 1) throw std::invalid_argument(named + ": a host must name one entry");
      b.hosts.push_back(one.entries().front());
    }
    for (const auto& other : out.list_)
      if (other.name == b.name || other.placeholder == b.placeholder)
        throw std::invalid_argument(named + ": name or placeholder given twice");
    out.list_.push_back(std::move(b));
  }
  return out;
}

void Credentials::load_values(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    // The parser's message quotes the text near the error: it could be a value.
    throw std::invalid_argument("the credential values are not a JSON object");
  }
  if (!j.is_object()) throw std::invalid_argument("the credential values are not a JSON object");
  for (const auto& [name, value] : j.items()) {
    auto it = std::find_if(list_.begin(), list_.end(), [&](const BrokeredCredential& b) { return b.name == name; });
    if (it == list_.end()) throw std::invalid_argument("a value is given for unknown credential '" + name + "'");
    if (!value.is_string() || value.get<std::string>().empty())
      throw std::invalid_argument("the value of credential '" + name + "' is not a non-empty string");
    for (char c : value.get<std::string>())
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw std::invalid_argument("the value of credential '" + name + "' holds a control character");
    it->value = value.get<std::string>();
  }
  for (const auto& b : list_)
    if (b.value.empty()) throw std::invalid_argument("no value was given for credential '" + b.name + "'");
}

bool Credentials::loaded() const noexcept {
  return std::all_of(list_.begin(), list_.end(), [](const BrokeredCredential& b) { return !b.value.empty(); });
}

BrokerOutcome Credentials::apply(std::string_view target, std::string& fields, const std::string& host, bool tls,
                                 bool check_binding) const {
  BrokerOutcome out;
  auto refuse = [&](const BrokeredCredential& b, const std::string& why) {
    out.refused = true;
    out.reason = "refused: credential '" + b.name + "' toward " + host + ": " + why;
    out.swapped.clear();
    out.credential = b.name;
    return out;
  };
  for (const auto& b : list_) {
    const bool in_target = target.find(b.placeholder) != std::string_view::npos;
    const bool in_fields = fields.find(b.placeholder) != std::string::npos;
    if (!in_target && !in_fields) continue;
    const bool bound = std::any_of(b.hosts.begin(), b.hosts.end(), [&](const AllowEntry& e) { return e.matches(host); });
    if (!bound && check_binding) return refuse(b, "its placeholder was sent to a host the credential is not bound to");
    if (!tls && !b.allow_http && check_binding) return refuse(b, "its placeholder was sent over plain http:// (allow_http is off)");
    if (in_target) return refuse(b, "its placeholder is in the request target; only header " + b.header + " carries it");
    // Each header line: the credential's own header, shaped exactly as the format, is
    // rewritten; the placeholder anywhere else is refused.
    const std::string expected = filled(b.format, b.placeholder);
    std::string rewritten;
    bool swapped = false;
    std::size_t start = 0;
    while (start < fields.size()) {
      auto end = fields.find("\r\n", start);
      end = end == std::string::npos ? fields.size() : end + 2;
      std::string_view line(fields.data() + start, end - start);
      start = end;
      if (line.find(b.placeholder) == std::string_view::npos) {
        rewritten.append(line);
        continue;
      }
      const auto colon = line.find(':');
      const std::string_view name = colon == std::string_view::npos ? std::string_view{} : line.substr(0, colon);
      std::string_view value = line.substr(colon == std::string_view::npos ? 0 : colon + 1);
      if (value.size() >= 2 && value.substr(value.size() - 2) == "\r\n") value.remove_suffix(2);
      if (!iequal(name, b.header)) return refuse(b, "its placeholder is in another header than " + b.header);
      if (trim(value) != expected)
        return refuse(b, "header " + b.header + " is not shaped as '" + b.format + "' around the placeholder");
      rewritten.append(b.header).append(": ").append(filled(b.format, b.value)).append("\r\n");
      swapped = true;
    }
    fields = std::move(rewritten);
    if (swapped) out.swapped.push_back(b.name);
  }
  return out;
}

}  // namespace maf::sandbox::egress_proxy
