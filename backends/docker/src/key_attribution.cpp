// `maf-sandbox.key.v1` (key_attribution.hpp; D-8).
#include "key_attribution.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>
#include <utf8proc.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "said.hpp"

namespace maf::sandbox::docker::detail {

namespace {

void append_u_escape(std::string& out, unsigned unit) {
  char buf[16];  // room for any unsigned, though a UTF-16 unit takes four digits
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);  // Python writes lowercase hex
  out += buf;
}

/// One string as Python's `json.dumps` (ensure_ascii) writes it, quotes included.
void append_python_string(std::string& out, std::string_view utf8, std::size_t field) {
  out += '"';
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  for (std::size_t i = 0; i < utf8.size();) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(bytes + i, static_cast<utf8proc_ssize_t>(utf8.size() - i), &cp);
    if (n <= 0)
      throw ValueError(said("key field " + std::to_string(field) + " is not well-formed UTF-8 at byte " +
                            std::to_string(i)));
    i += static_cast<std::size_t>(n);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp >= 0x20 && cp <= 0x7e) {  // Python escapes everything outside ' '..'~', DEL included
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      append_u_escape(out, static_cast<unsigned>(cp));
    } else {
      const unsigned v = static_cast<unsigned>(cp) - 0x10000;
      append_u_escape(out, 0xd800 | (v >> 10));
      append_u_escape(out, 0xdc00 | (v & 0x3ff));
    }
  }
  out += '"';
}

bool selector_matches(const std::map<std::string, std::string>& labels, const SandboxKey& key) {
  const auto has = [&](std::string_view label, const std::string& raw) {
    auto it = labels.find(std::string(label));
    return it != labels.end() && it->second == support::label_value(raw);
  };
  if (!has(support::kLabelScope, key.scope) || !has(support::kLabelThread, key.thread_id) ||
      !has(support::kLabelAgent, key.agent_id))
    return false;
  // An empty call_id means conversation scope: the call label must then be absent.
  return key.call_id.empty() ? !labels.contains(std::string(support::kLabelCall))
                             : has(support::kLabelCall, key.call_id);
}

}  // namespace

std::string python_json_dumps(const std::vector<std::string>& strings) {
  std::string out = "[";
  for (std::size_t i = 0; i < strings.size(); ++i) {
    if (i) out += ", ";
    append_python_string(out, strings[i], i);
  }
  return out + "]";
}

std::string base64url_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  std::replace(out.begin(), out.end(), '+', '-');
  std::replace(out.begin(), out.end(), '/', '_');
  return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  const std::size_t body = text.find_first_of('=') == std::string_view::npos ? text.size() : text.find_first_of('=');
  if (text.size() - body > 2 || text.find_first_not_of('=', body) != std::string_view::npos) return std::nullopt;
  std::string standard(text);
  for (std::size_t i = 0; i < body; ++i) {
    char& c = standard[i];
    if (c == '-')
      c = '+';
    else if (c == '_')
      c = '/';
    else if (!std::isalnum(static_cast<unsigned char>(c)))
      return std::nullopt;  // '+' and '/' belong to the other alphabet
  }
  std::string out(3 * (standard.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(standard.data()),
                                static_cast<int>(standard.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes; drop them.
  out.resize(static_cast<std::size_t>(n) - (text.size() - body));
  if (base64url_encode(out) != text) return std::nullopt;  // stray bits: not canonical
  return out;
}

std::string encode_key_v1(const SandboxKey& key) {
  std::string value;
  try {
    value = base64url_encode(python_json_dumps({key.scope, key.thread_id, key.agent_id, key.call_id}));
  } catch (const ValueError& e) {
    logger()->warn("backend 'docker': the key cannot be written as attribution label {} ({}); writing it empty",
                   kLabelKeyV1, e.what());
    return {};
  }
  if (value.size() > kKeyV1Limit) {
    logger()->warn("backend 'docker': the key exceeds the {}-byte attribution limit ({} bytes encoded); label {} "
                   "is written empty",
                   kKeyV1Limit, value.size(), kLabelKeyV1);
    return {};
  }
  return value;
}

std::optional<SandboxKey> attributed_key(const std::map<std::string, std::string>& labels,
                                         const std::optional<SandboxKey>& caller) {
  const auto label = labels.find(std::string(kLabelKeyV1));
  if (label == labels.end() || label->second.empty()) {
    if (caller && selector_matches(labels, *caller)) return caller;
    return std::nullopt;
  }
  const auto payload = base64url_decode(label->second);
  if (!payload) return std::nullopt;
  SandboxKey key;
  try {
    const auto j = nlohmann::json::parse(*payload);
    if (!j.is_array() || j.size() != 4 ||
        !std::all_of(j.begin(), j.end(), [](const nlohmann::json& f) { return f.is_string(); }))
      return std::nullopt;
    key = SandboxKey{j[0].get<std::string>(), j[1].get<std::string>(), j[2].get<std::string>(),
                     j[3].get<std::string>()};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  // A label that contradicts the selectors is refused, never replaced by the caller's key.
  if (!selector_matches(labels, key)) return std::nullopt;
  return key;
}

}  // namespace maf::sandbox::docker::detail
