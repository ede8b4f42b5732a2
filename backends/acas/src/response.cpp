// Readers of the service's answers; see response.hpp. Only nlohmann and the header-only
// error tree: this file is compiled into the fuzz target as is.
#include "response.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "maf/sandbox/acas/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::acas::detail {
namespace {

using nlohmann::json;

[[noreturn]] void invalid(std::string_view what, std::string_view why) {
  throw AcasResponseInvalid(said("invalid ") + std::string(what) + " from the service: " + std::string(why));
}

std::string string_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_string()) invalid("sandbox document", std::string("field '") + key + "' is not a string");
  return it->get<std::string>();
}

std::optional<std::int64_t> decimal(std::string_view text) {
  std::int64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n' || text.front() == '\r'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 (RFC 3629 table).
std::size_t utf8_sequence(std::string_view s) {
  auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 2;
  else if (c == 0xE0) need = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) need = 3;
  else if (c == 0xED) need = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF) need = 3;
  else if (c == 0xF0) need = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) need = 4;
  else if (c == 0xF4) need = 4, hi = 0x8F;
  else return 0;
  if (s.size() < need) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < need; ++i)
    if (b(i) < 0x80 || b(i) > 0xBF) return 0;
  return need;
}

}  // namespace

json parse_json(std::string_view body, std::string_view what) {
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) invalid(what, "the body is not JSON");
  return doc;
}

SandboxDocument parse_sandbox_document(const json& doc) {
  if (!doc.is_object()) invalid("sandbox document", "not a JSON object");
  SandboxDocument out;
  out.id = string_field(doc, "id");
  if (out.id.empty()) invalid("sandbox document", "no 'id'");
  out.state = string_field(doc, "state");
  if (auto details = doc.find("stateDetails"); details != doc.end() && details->is_object())
    if (auto reason = details->find("stoppedReason"); reason != details->end() && reason->is_string())
      out.stopped_reason = reason->get<std::string>();
  if (auto labels = doc.find("labels"); labels != doc.end() && !labels->is_null()) {
    if (!labels->is_object()) invalid("sandbox document", "'labels' is not an object");
    for (const auto& [k, v] : labels->items()) {
      if (!v.is_string()) invalid("sandbox document", "label '" + k + "' is not a string");
      out.labels.emplace(k, v.get<std::string>());
    }
  }
  return out;
}

SandboxDocument parse_sandbox_document(std::string_view body) {
  return parse_sandbox_document(parse_json(body, "sandbox document"));
}

ListPage parse_list_page(std::string_view body, std::string_view what) {
  json doc = parse_json(body, what);
  ListPage page;
  const json* items = &doc;
  if (doc.is_object()) {
    auto value = doc.find("value");
    if (value == doc.end() || !value->is_array()) invalid(what, "neither an array nor {\"value\": [...]}");
    items = &*value;
    if (auto next = doc.find("nextLink"); next != doc.end() && !next->is_null()) {
      if (!next->is_string()) invalid(what, "'nextLink' is not a string");
      page.next_link = next->get<std::string>();
    }
  } else if (!doc.is_array()) {
    invalid(what, "neither an array nor {\"value\": [...]}");
  }
  page.items.assign(items->begin(), items->end());
  return page;
}

ExecAnswer parse_exec_answer(std::string_view body) {
  json doc = parse_json(body, "execution response");
  if (!doc.is_object()) invalid("execution response", "not a JSON object");
  ExecAnswer out;
  if (auto code = doc.find("exitCode"); code != doc.end()) {
    if (!code->is_number_integer()) invalid("execution response", "'exitCode' is not an integer");
    auto value = code->get<std::int64_t>();
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
      invalid("execution response", "'exitCode' is out of range");
    out.exit_code = static_cast<int>(value);
  }
  for (auto [key, target] : {std::pair{"stdout", &out.stdout_text}, std::pair{"stderr", &out.stderr_text}}) {
    auto it = doc.find(key);
    if (it == doc.end()) continue;
    if (!it->is_string()) invalid("execution response", std::string("'") + key + "' is not a string");
    *target = it->get<std::string>();
  }
  return out;
}

EntryPayload parse_entry(const json& entry) {
  auto incomplete = [](const std::string& why) {
    throw AcasEntryPayloadIncomplete(said("file entry payload incomplete: ") + why);
  };
  if (!entry.is_object()) incomplete("the entry is not an object");
  auto is_dir = entry.find("isDir");
  auto is_link = entry.find("isSymlink");
  if (is_dir == entry.end() || !is_dir->is_boolean()) incomplete("'isDir' is not a JSON boolean");
  if (is_link == entry.end() || !is_link->is_boolean()) incomplete("'isSymlink' is not a JSON boolean");
  EntryPayload out;
  if (auto path = entry.find("path"); path != entry.end()) {
    if (!path->is_string()) incomplete("'path' is not a string");
    out.path = path->get<std::string>();
  }
  if (is_link->get<bool>()) {
    out.kind = EntryKind::Symlink;
  } else if (is_dir->get<bool>()) {
    out.kind = EntryKind::Directory;
  } else {
    // A FIFO stats like an empty file; the read timeout, not the stat, bounds it.
    out.kind = EntryKind::File;
    if (auto size = entry.find("size"); size != entry.end() && size->is_number_integer() && !size->is_boolean()) {
      auto value = size->get<std::int64_t>();
      if (value >= 0) out.size_bytes = value;
    }
  }
  return out;
}

EntryPayload parse_entry(std::string_view body) { return parse_entry(parse_json(body, "file entry")); }

std::vector<EntryPayload> parse_dir_listing(std::string_view body) {
  json doc = parse_json(body, "directory listing");
  if (!doc.is_object()) throw AcasEntryPayloadIncomplete(said("directory listing is not an object"));
  auto entries = doc.find("entries");
  if (entries == doc.end() || !entries->is_array())
    throw AcasEntryPayloadIncomplete(said("directory listing has no 'entries' list"));
  std::vector<EntryPayload> out;
  for (const auto& entry : *entries) {
    auto parsed = parse_entry(entry);
    if (parsed.path.empty()) throw AcasEntryPayloadIncomplete(said("a directory entry has no 'path'"));
    out.push_back(std::move(parsed));
  }
  return out;
}

std::optional<std::string> public_image_name(const json& item) {
  if (!item.is_object()) return std::nullopt;
  auto name = item.find("name");
  if (name == item.end() || !name->is_string()) return std::nullopt;
  return name->get<std::string>();
}

std::optional<std::pair<std::string, std::string>> imported_image(const json& item) {
  if (!item.is_object()) return std::nullopt;
  auto id = item.find("id");
  auto image = item.find("image");
  if (id == item.end() || !id->is_string() || image == item.end() || !image->is_object()) return std::nullopt;
  // `image` is an object; compare its `base`, never the object (a maf bug; ).
  auto base = image->find("base");
  if (base == image->end() || !base->is_string()) return std::nullopt;
  return std::pair{id->get<std::string>(), base->get<std::string>()};
}

std::string problem_summary(std::string_view body) {
  constexpr std::size_t kMax = 300;
  json doc = json::parse(body.begin(), body.end(), nullptr, false);
  std::string text;
  auto str = [](const json& o, const char* k) -> std::string {
    auto it = o.find(k);
    if (it == o.end()) return {};
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
    return {};
  };
  if (doc.is_object()) {
    const json* o = &doc;
    if (auto e = doc.find("error"); e != doc.end() && e->is_object()) o = &*e;
    for (const char* k : {"title", "code", "detail", "message"}) {
      std::string v = str(*o, k);
      if (!v.empty()) text += (text.empty() ? "" : ": ") + v;
    }
  }
  if (text.empty()) text = std::string(body.substr(0, kMax));
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view retry_after, std::string_view retry_after_ms,
                                                           std::chrono::milliseconds cap) {
  if (auto ms = decimal(trim(retry_after_ms))) return std::min(std::chrono::milliseconds(*ms), cap);
  auto seconds = decimal(trim(retry_after));
  if (!seconds) return std::nullopt;
  if (*seconds > cap.count() / 1000 + 1) return cap;
  return std::min(std::chrono::milliseconds(*seconds * 1000), cap);
}

TokenAnswer parse_token_output(std::string_view text) {
  std::string_view trimmed = trim(text);
  TokenAnswer out;
  if (!trimmed.empty() && trimmed.front() == '{') {
    json doc = json::parse(trimmed.begin(), trimmed.end(), nullptr, false);
    if (doc.is_discarded() || !doc.is_object())
      throw AcasResponseInvalid(said("the token command printed malformed JSON"));
    for (const char* k : {"accessToken", "access_token"})
      if (auto it = doc.find(k); it != doc.end() && it->is_string()) out.token = it->get<std::string>();
    for (const char* k : {"expires_on", "expiresOn"}) {
      auto it = doc.find(k);
      if (it == doc.end()) continue;
      if (it->is_number_integer()) out.expires_on = it->get<std::int64_t>();
      else if (it->is_string()) out.expires_on = decimal(it->get<std::string>());
      if (out.expires_on) break;
    }
    if (auto it = doc.find("expires_in"); it != doc.end()) {
      if (it->is_number_integer()) out.expires_in = it->get<std::int64_t>();
      else if (it->is_string()) out.expires_in = decimal(it->get<std::string>());
    }
  } else {
    out.token = std::string(trimmed);
  }
  if (out.token.empty() || out.token.find_first_of(" \t\r\n") != std::string::npos)
    throw AcasResponseInvalid(said("the token command printed no usable token"));
  return out;
}

CaptureManifest parse_capture_manifest(std::string_view out, std::string_view token, std::int64_t limit) {
  auto bad = [](const std::string& why) -> CaptureManifest {
    throw AcasResponseInvalid(said("exec capture manifest refused: ") + why);
  };
  if (out.size() > 200 || out.empty() || out.back() != '\n') return bad("not one short line");
  std::string_view line = out.substr(0, out.size() - 1);
  if (line.find('\n') != std::string_view::npos) return bad("more than one line");
  std::vector<std::string_view> fields;
  while (!line.empty()) {
    auto sp = line.find(' ');
    fields.push_back(line.substr(0, sp));
    if (sp == std::string_view::npos) break;
    line.remove_prefix(sp + 1);
  }
  if (fields.size() != 4) return bad("expected four fields");
  if (fields[0] != token) return bad("token mismatch");
  auto rc = decimal(fields[1]), o = decimal(fields[2]), e = decimal(fields[3]);
  if (!rc || !o || !e) return bad("non-decimal fields");
  if (*rc > 255) return bad("exit status above 255");
  if (*o > limit || *e > limit) return bad("a stream exceeds the output limit");
  return CaptureManifest{static_cast<int>(*rc), *o, *e};
}

std::string decode_utf8_collapsing(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  bool in_invalid_run = false;
  while (!bytes.empty()) {
    std::size_t n = utf8_sequence(bytes);
    if (n == 0) {
      if (!in_invalid_run) out += "\xEF\xBF\xBD";
      in_invalid_run = true;
      bytes.remove_prefix(1);
      continue;
    }
    in_invalid_run = false;
    out.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  return out;
}

std::string base64_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string clean;
  clean.reserve(text.size());
  for (char c : text)
    if (c != '\n' && c != '\r') clean.push_back(c);
  if (clean.size() % 4 != 0) throw AcasResponseInvalid(said("base64 length is not a multiple of 4"));
  std::string out;
  out.reserve(clean.size() / 4 * 3);
  for (std::size_t i = 0; i < clean.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      char c = clean[i + static_cast<std::size_t>(j)];
      if (c == '=' && i + 4 == clean.size() && j >= 2) {
        v[j] = 0;
        ++pad;
        continue;
      }
      if (pad) throw AcasResponseInvalid(said("base64 padding in the middle"));
      v[j] = value(c);
      if (v[j] < 0) throw AcasResponseInvalid(said("invalid base64 character"));
    }
    std::uint32_t bits = (std::uint32_t(v[0]) << 18) | (std::uint32_t(v[1]) << 12) | (std::uint32_t(v[2]) << 6) |
                         std::uint32_t(v[3]);
    out.push_back(static_cast<char>((bits >> 16) & 0xFF));
    if (pad < 2) out.push_back(static_cast<char>((bits >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(bits & 0xFF));
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t n = std::uint32_t(static_cast<unsigned char>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= std::uint32_t(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= std::uint32_t(static_cast<unsigned char>(bytes[i + 2]));
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[n & 63] : '=');
  }
  return out;
}

}  // namespace maf::sandbox::acas::detail
