// Path rules of egress_allow (egress_path.hpp; C-10). Standard library only: the egress
// proxy compiles this file into its static binary, so the spec and the proxy canonicalise
// a path with the same code (fuzz/fuzz_egress_path.cpp).
#include "maf/sandbox/egress_path.hpp"

#include <vector>

namespace maf::sandbox {
namespace {

bool is_alnum(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
/// RFC 3986 unreserved, '.' aside (an encoded '.' is refused, a literal one is a character).
bool is_unreserved_not_dot(unsigned char c) { return is_alnum(c) || c == '-' || c == '_' || c == '~'; }
/// What may appear literally in a path: unreserved, sub-delims, ':', '@', and '/'.
bool is_path_char(unsigned char c) {
  return is_unreserved_not_dot(c) || c == '.' || c == '/' || c == ':' || c == '@' ||
         std::string_view("!$&'()*+,;=").find(static_cast<char>(c)) != std::string_view::npos;
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
void append_escape(std::string& out, unsigned char b) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  out += '%';
  out += kHex[b >> 4];
  out += kHex[b & 0xF];
}
std::string describe_char(unsigned char c) {
  if (c < 0x20 || c == 0x7f) return "a control byte";
  if (c >= 0x80) return "a raw non-ASCII byte (percent-encode it)";
  return std::string("the character '") + static_cast<char>(c) + "'";
}

PathCanonicalisation refuse(std::string problem) {
  PathCanonicalisation r;
  r.problem = std::move(problem);
  return r;
}

/// The escaped byte at `raw[i]` ('%' there), or -1 when `raw[i..i+2]` is no escape.
int escaped_at(std::string_view raw, std::size_t i) {
  if (i + 2 >= raw.size()) return -1;
  const int hi = hex_value(raw[i + 1]), lo = hex_value(raw[i + 2]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

PathCanonicalisation canonicalize_request_path(std::string_view target) {
  if (target.empty() || target.front() != '/') return refuse("not an origin-form path (it must start with '/')");
  if (target.find('#') != std::string_view::npos) return refuse("a fragment ('#')");
  std::optional<std::string> query;
  std::string_view raw = target;
  if (const auto q = target.find('?'); q != std::string_view::npos) {
    query = std::string(target.substr(q + 1));
    raw = target.substr(0, q);
    for (unsigned char c : *query)
      if (c <= 0x20 || c >= 0x7f) return refuse("a space, control or raw non-ASCII byte in the query");
  }

  // 1. Characters and escapes.
  std::string decoded;
  decoded.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size();) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c != '%') {
      if (!is_path_char(c)) return refuse(describe_char(c) + " in the path");
      decoded += static_cast<char>(c);
      ++i;
      continue;
    }
    const int b = escaped_at(raw, i);
    if (b < 0) return refuse("a '%' not followed by two hex digits");
    if (b == '/') return refuse("an encoded '/' (%2F)");
    if (b == '\\') return refuse("an encoded '\\' (%5C)");
    if (b == '.') return refuse("an encoded '.' (%2E)");
    if (b == 0) return refuse("an encoded NUL (%00)");
    if (b < 0x20 || b == 0x7f) return refuse("an encoded control byte");
    if (b < 0x80) {
      if (is_unreserved_not_dot(static_cast<unsigned char>(b)))
        decoded += static_cast<char>(b);
      else
        append_escape(decoded, static_cast<unsigned char>(b));
      i += 3;
      continue;
    }
    // An escaped UTF-8 sequence: valid and shortest-form, or refused (overlong '/' or '.'
    // spellings such as %C0%AF are the attack this stops).
    const auto lead = static_cast<unsigned char>(b);
    int length = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) lo = 0xA0;
      if (lead == 0xED) hi = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) lo = 0x90;
      if (lead == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
      return refuse("an encoded byte that is not valid UTF-8 (an overlong or stray byte)");
    }
    append_escape(decoded, lead);
    i += 3;
    for (int k = 1; k < length; ++k, i += 3) {
      const int next = i < raw.size() && raw[i] == '%' ? escaped_at(raw, i) : -1;
      const unsigned char min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
      if (next < min || next > max) return refuse("an encoded byte that is not valid UTF-8 (an overlong or stray byte)");
      append_escape(decoded, static_cast<unsigned char>(next));
    }
  }

  // 2. Segments: no empty one but a trailing slash's; dot segments removed.
  std::vector<std::string_view> kept;
  bool trailing_slash = false;
  const std::string_view body = std::string_view(decoded).substr(1);
  std::size_t start = 0;
  while (true) {
    const auto slash = body.find('/', start);
    const bool last = slash == std::string_view::npos;
    const std::string_view segment = body.substr(start, last ? std::string_view::npos : slash - start);
    trailing_slash = false;
    if (segment.empty()) {
      if (!last) return refuse("an empty path segment ('//')");
      trailing_slash = !kept.empty();
    } else if (segment == ".") {
      trailing_slash = last;
    } else if (segment == "..") {
      if (kept.empty()) return refuse("a '..' segment above the root");
      kept.pop_back();
      trailing_slash = last;
    } else {
      kept.push_back(segment);
    }
    if (last) break;
    start = slash + 1;
  }
  std::string path = "/";
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (i) path += '/';
    path += kept[i];
  }
  if (trailing_slash && !kept.empty()) path += '/';
  PathCanonicalisation ok;
  ok.value = CanonicalRequestPath{std::move(path), std::move(query)};
  return ok;
}

std::optional<std::string> egress_path_pattern_problem(std::string_view pattern) {
  if (pattern.empty()) return "it is empty";
  if (pattern.front() != '/') return "it does not start with '/'";
  if (pattern.find('?') != std::string_view::npos) return "a '?' (queries are not matched by path rules)";
  if (pattern.find('#') != std::string_view::npos) return "a '#' (a fragment never reaches a server)";
  const auto star = pattern.find('*');
  if (star != std::string_view::npos && star + 1 != pattern.size())
    return "a '*' before its end ('*' may only end a prefix pattern)";
  const std::string_view body = star == std::string_view::npos ? pattern : pattern.substr(0, star);
  const auto canonical = canonicalize_request_path(body);
  if (!canonical.value) return canonical.problem;
  if (canonical.value->path != body)
    return "not in canonical form (write '" + canonical.value->path + (star == std::string_view::npos ? "" : "*") +
           "')";
  return std::nullopt;
}

bool egress_path_matches(std::string_view pattern, std::string_view path) noexcept {
  if (!pattern.empty() && pattern.back() == '*') pattern.remove_suffix(1);
  else if (pattern.empty() || pattern.back() != '/') return path == pattern;
  return path.substr(0, pattern.size()) == pattern;
}

}  // namespace maf::sandbox
