// The control channel's messages (control_protocol.hpp).
#include "control_protocol.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace maf::sandbox::egress_proxy {

ControlMessage parse_control_line(std::string_view line) {
  if (line.size() > kMaxControlLine)
    throw std::invalid_argument("control line of " + std::to_string(line.size()) + " bytes exceeds " +
                                std::to_string(kMaxControlLine));
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) throw std::invalid_argument("control line is not a JSON object");
  const auto op = j.find("op");
  if (op == j.end() || !op->is_string()) throw std::invalid_argument("control line has no string 'op'");
  ControlMessage m;
  const auto number = [&](const char* key) -> std::uint64_t {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned())
      throw std::invalid_argument("control op '" + op->get<std::string>() + "' needs a non-negative integer '" + key + "'");
    return it->get<std::uint64_t>();
  };
  const auto text = [&](const char* key, bool required) -> std::string {
    const auto it = j.find(key);
    if (it == j.end()) {
      if (required)
        throw std::invalid_argument("control op '" + op->get<std::string>() + "' needs a string '" + key + "'");
      return {};
    }
    if (!it->is_string()) throw std::invalid_argument("control field '" + std::string(key) + "' is not a string");
    return it->get<std::string>();
  };
  const std::string name = op->get<std::string>();
  if (name == "update") {
    m.op = ControlOp::Update;
    m.id = number("id");
    m.allow = text("allow", true);
  } else if (name == "decide") {
    m.op = ControlOp::Decide;
  } else if (name == "answer") {
    m.op = ControlOp::Answer;
    m.id = number("ask");
    const std::string verdict = text("verdict", true);
    if (verdict == "allow-once") m.verdict = DeciderVerdict::AllowOnce;
    else if (verdict == "allow-sandbox") m.verdict = DeciderVerdict::AllowSandbox;
    else if (verdict == "deny") m.verdict = DeciderVerdict::Deny;
    else throw std::invalid_argument("unknown decider verdict '" + verdict + "' (allow-once, allow-sandbox, deny)");
    m.reason = clean_reason(text("reason", false));
  } else {
    throw std::invalid_argument("unknown control op '" + name + "' (update, decide, answer)");
  }
  return m;
}

std::string clean_reason(std::string_view reason) {
  std::string out(reason.substr(0, kMaxDeciderReason));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

std::string ask_line(std::uint64_t ask, const std::string& method, const std::string& host, std::uint16_t port) {
  nlohmann::ordered_json j;
  j["ask"] = ask;
  j["method"] = method;
  j["host"] = host;
  j["port"] = port;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ok_line(std::uint64_t id, const std::string& allowing, std::size_t closed) {
  nlohmann::ordered_json j;
  j["id"] = id;
  j["ok"] = true;
  j["allowing"] = allowing;
  j["closed"] = closed;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string error_line(std::uint64_t id, const std::string& error) {
  nlohmann::ordered_json j;
  j["id"] = id;
  j["ok"] = false;
  j["error"] = error;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string updated_line(const std::string& allowing, std::size_t closed) {
  nlohmann::ordered_json j;
  j["event"] = "policy-updated";
  j["allowing"] = allowing;
  j["closed"] = closed;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace maf::sandbox::egress_proxy
