#include "jsonrpc.hpp"

namespace maf::sandbox::mcp {

namespace {

bool is_valid_id(const nlohmann::json& id) { return id.is_string() || id.is_number_integer(); }

Message invalid(const nlohmann::json& id, int code, std::string message) {
  Message m;
  m.kind = Message::Kind::Invalid;
  m.error_response = make_error(id, code, std::move(message));
  return m;
}

}  // namespace

Message parse_message(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid(nullptr, kParseError, "Parse error: the message is not JSON");
  if (j.is_array())
    return invalid(nullptr, kInvalidRequest, "Invalid Request: batches are not supported (MCP 2025-06-18 and later)");
  if (!j.is_object()) return invalid(nullptr, kInvalidRequest, "Invalid Request: a message must be a JSON object");

  // The id, when it can be read, goes back with the error so the client can match it.
  const auto id_it = j.find("id");
  const bool has_id = id_it != j.end();
  const nlohmann::json echo_id = has_id && is_valid_id(*id_it) ? *id_it : nlohmann::json(nullptr);

  const auto version = j.find("jsonrpc");
  if (version == j.end() || !version->is_string() || *version != "2.0")
    return invalid(echo_id, kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  if (has_id && !is_valid_id(*id_it))
    return invalid(nullptr, kInvalidRequest, "Invalid Request: \"id\" must be a string or an integer");

  const auto method = j.find("method");
  if (method == j.end()) {
    if (j.contains("result") || j.contains("error")) {
      if (!has_id) return invalid(nullptr, kInvalidRequest, "Invalid Request: a response needs an \"id\"");
      Message m;
      m.kind = Message::Kind::Response;
      m.id = *id_it;
      return m;
    }
    return invalid(echo_id, kInvalidRequest, "Invalid Request: no \"method\"");
  }
  if (!method->is_string()) return invalid(echo_id, kInvalidRequest, "Invalid Request: \"method\" must be a string");

  Message m;
  m.method = method->get<std::string>();
  const auto params = j.find("params");
  if (params != j.end()) {
    if (!params->is_object())
      return invalid(echo_id, has_id ? kInvalidParams : kInvalidRequest, "Invalid params: \"params\" must be an object");
    m.params = *params;
  }
  if (has_id) {
    m.kind = Message::Kind::Request;
    m.id = *id_it;
  } else {
    m.kind = Message::Kind::Notification;
  }
  return m;
}

nlohmann::json make_result(const nlohmann::json& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json make_error(const nlohmann::json& id, int code, std::string message, std::optional<nlohmann::json> data) {
  nlohmann::json error{{"code", code}, {"message", std::move(message)}};
  if (data) error["data"] = std::move(*data);
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

nlohmann::json make_notification(std::string method, nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"method", std::move(method)}, {"params", std::move(params)}};
}

LineFramer::LineFramer(std::size_t max_line_bytes, std::function<void(std::string)> on_line,
                       std::function<void(std::size_t)> on_oversize)
    : max_(max_line_bytes), on_line_(std::move(on_line)), on_oversize_(std::move(on_oversize)) {}

void LineFramer::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const std::size_t nl = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, nl);
    if (discarding_) {
      discarded_ += piece.size();
    } else if (line_.size() + piece.size() > max_) {
      discarding_ = true;
      discarded_ = line_.size() + piece.size();
      line_.clear();
      line_.shrink_to_fit();
    } else {
      line_.append(piece);
    }
    if (nl == std::string_view::npos) return;
    bytes.remove_prefix(nl + 1);
    if (discarding_) {
      discarding_ = false;
      on_oversize_(discarded_);
      discarded_ = 0;
      continue;
    }
    std::string line = std::move(line_);
    line_.clear();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Blank lines between messages carry nothing; they are not messages to refuse.
    if (line.find_first_not_of(" \t") != std::string::npos) on_line_(std::move(line));
  }
}

void LineFramer::finish() {
  if (discarding_) {
    discarding_ = false;
    on_oversize_(discarded_);
  } else if (!line_.empty()) {
    feed("\n");
  }
}

}  // namespace maf::sandbox::mcp
