// The egress proxy's request-head parser (request.hpp). Hand-written: the grammar the
// proxy accepts is small, and a strict parser of our own has no reading we did not choose.
#include "request.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <vector>

namespace maf::sandbox::egress_proxy {
namespace {

bool is_tchar(char c) {
  // RFC 9110 token characters.
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return lower(x) == lower(y);
         });
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<std::uint16_t> parse_port(std::string_view s) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  unsigned value = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value == 0 || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

bool is_reg_name(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  std::size_t label = 0;
  for (char c : host) {
    if (c == '.') {
      if (label == 0) return false;  // empty label
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok || ++label > 63) return false;
  }
  return label != 0;
}

ParseResult refuse(int status, std::string reason) {
  ParseResult r;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

bool is_hop_by_hop(std::string_view name, const std::vector<std::string>& connection_tokens) {
  static constexpr std::array<std::string_view, 9> kAlways{
      "connection", "proxy-connection", "keep-alive", "proxy-authorization", "proxy-authenticate",
      "te",         "trailer",          "upgrade",    "host"};
  const std::string n = to_lower(name);
  if (std::find(kAlways.begin(), kAlways.end(), n) != kAlways.end()) return true;
  return std::find(connection_tokens.begin(), connection_tokens.end(), n) != connection_tokens.end();
}

}  // namespace

std::size_t find_head_end(std::string_view buffer) noexcept {
  const auto at = buffer.find("\r\n\r\n");
  return at == std::string_view::npos ? std::string_view::npos : at + 4;
}

std::optional<std::string> normalize_host(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    const std::string inner(host.substr(1, host.size() - 2));
    unsigned char bytes[16];
    if (inner.find('%') != std::string::npos || inet_pton(AF_INET6, inner.c_str(), bytes) != 1) return std::nullopt;
    char text[INET6_ADDRSTRLEN];
    if (!inet_ntop(AF_INET6, bytes, text, sizeof text)) return std::nullopt;
    return std::string(text);  // canonical spelling, so "::0001" and "::1" match alike
  }
  std::string h = to_lower(host);
  if (!h.empty() && h.back() == '.') h.pop_back();
  if (!is_reg_name(h)) return std::nullopt;
  return h;
}

std::optional<std::pair<std::string, std::optional<std::uint16_t>>> parse_authority(std::string_view authority,
                                                                                     bool port_required) {
  if (authority.find('@') != std::string_view::npos) return std::nullopt;  // userinfo: refused
  std::string_view host = authority;
  std::optional<std::string_view> port_text;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(0, close + 1);
    const auto rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port_text = rest.substr(1);
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port_text = authority.substr(colon + 1);
  }
  std::optional<std::uint16_t> port;
  if (port_text) {
    port = parse_port(*port_text);
    if (!port) return std::nullopt;
  }
  if (port_required && !port) return std::nullopt;
  auto normalized = normalize_host(host);
  if (!normalized) return std::nullopt;
  return std::pair{std::move(*normalized), port};
}

SplitResult split_request_head(std::string_view head, std::size_t max_head_bytes) {
  SplitResult out;
  auto fail = [&out](int status, std::string reason) {
    out.status = status;
    out.reason = std::move(reason);
    return std::move(out);
  };
  if (head.size() > max_head_bytes)
    return fail(431, "request head larger than " + std::to_string(max_head_bytes) + " bytes");
  if (head.size() < 4 || head.substr(head.size() - 4) != "\r\n\r\n" || find_head_end(head) != head.size())
    return fail(400, "request head does not end with one blank line");
  // Every CR must start a CRLF and every LF end one; no other control byte but HT.
  for (std::size_t i = 0; i < head.size(); ++i) {
    const auto c = static_cast<unsigned char>(head[i]);
    if (c == '\r' && (i + 1 >= head.size() || head[i + 1] != '\n')) return fail(400, "bare CR in request head");
    if (c == '\n' && (i == 0 || head[i - 1] != '\r')) return fail(400, "bare LF in request head");
    if ((c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f) return fail(400, "control byte in request head");
  }

  std::vector<std::string_view> lines;
  for (std::size_t pos = 0; pos < head.size() - 2;) {
    const auto end = head.find("\r\n", pos);
    lines.push_back(head.substr(pos, end - pos));
    pos = end + 2;
  }
  if (lines.empty() || lines.size() - 1 > kMaxHeaderLines) return fail(400, "too many header lines");

  // Request line: exactly three fields separated by single spaces.
  RequestHead h;
  const std::string_view line = lines.front();
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return fail(400, "malformed request line");
  h.method = line.substr(0, sp1);
  h.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  h.version = line.substr(sp2 + 1);
  if (!is_token(h.method)) return fail(400, "malformed method");
  if (h.version != "HTTP/1.1" && h.version != "HTTP/1.0") return fail(400, "unsupported HTTP version");
  if (h.target.empty()) return fail(400, "empty request target");
  for (char c : h.target)
    if (c == ' ' || c == '\t' || static_cast<unsigned char>(c) >= 0x80) return fail(400, "malformed request target");

  // Header fields: `name: value`; no continuation lines (obs-fold).
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    const auto colon = l.find(':');
    if (colon == std::string_view::npos || !is_token(l.substr(0, colon))) return fail(400, "malformed header line");
    HeadField f{l.substr(0, colon), trim_ows(l.substr(colon + 1))};
    if (iequals(f.name, "connection")) {
      std::size_t p = 0;
      const std::string_view v = f.value;
      while (p <= v.size()) {
        auto comma = v.find(',', p);
        if (comma == std::string_view::npos) comma = v.size();
        const auto tok = trim_ows(v.substr(p, comma - p));
        if (!tok.empty()) h.connection_tokens.push_back(to_lower(tok));
        p = comma + 1;
      }
    }
    if (iequals(f.name, "content-length")) h.has_content_length = true;
    if (iequals(f.name, "transfer-encoding")) h.has_transfer_encoding = true;
    h.fields.push_back(f);
  }
  // Both framings at once is the classic smuggling shape; refuse instead of choosing one.
  if (h.has_content_length && h.has_transfer_encoding) return fail(400, "both Content-Length and Transfer-Encoding");
  out.head = std::move(h);
  return out;
}

bool ascii_iequals(std::string_view a, std::string_view b) { return iequals(a, b); }
std::string ascii_lower(std::string_view s) { return to_lower(s); }

ParseResult parse_request_head(std::string_view head_text, std::size_t max_head_bytes) {
  SplitResult split = split_request_head(head_text, max_head_bytes);
  if (!split.head) return refuse(split.status, std::move(split.reason));
  const RequestHead& h = *split.head;
  const std::string_view method = h.method, target = h.target, version = h.version;
  const auto& fields = h.fields;
  const auto& connection_tokens = h.connection_tokens;
  const std::string_view head = head_text;

  ProxyRequest request;
  request.method = std::string(method);
  if (method == "CONNECT") {
    auto authority = parse_authority(target, /*port_required=*/true);
    if (!authority) return refuse(400, "CONNECT target is not host:port");
    request.kind = RequestKind::Connect;
    request.target = Target{std::move(authority->first), *authority->second};
    ParseResult ok;
    ok.request = std::move(request);
    return ok;
  }

  // Absolute-form plain HTTP. https:// belongs in a CONNECT tunnel; origin-form means the
  // client talked to the proxy as if it were the server.
  constexpr std::string_view kScheme = "http://";
  if (target.size() < kScheme.size() || !iequals(target.substr(0, kScheme.size()), kScheme)) {
    if (target.front() == '/') return refuse(400, "origin-form request target; a proxy needs absolute-form");
    return refuse(400, "only http:// absolute-form targets are forwarded (use CONNECT for https)");
  }
  const std::string_view rest = target.substr(kScheme.size());
  const auto path_at = rest.find_first_of("/?#");
  const std::string_view authority_text = rest.substr(0, path_at);
  std::string_view path = path_at == std::string_view::npos ? std::string_view("/") : rest.substr(path_at);
  if (path.find('#') != std::string_view::npos) return refuse(400, "fragment in request target");
  std::string origin_path = path.front() == '?' ? "/" + std::string(path) : std::string(path);
  auto authority = parse_authority(authority_text, /*port_required=*/false);
  if (!authority) return refuse(400, "malformed authority in request target");
  request.kind = RequestKind::Forward;
  request.target = Target{std::move(authority->first), authority->second.value_or(80)};

  const bool v6 = request.target.host.find(':') != std::string::npos;
  std::string host_header = v6 ? "[" + request.target.host + "]" : request.target.host;
  if (request.target.port != 80) host_header += ":" + std::to_string(request.target.port);
  std::string out;
  out.reserve(head.size() + 64);
  out.append(method).append(" ").append(origin_path).append(" ").append(version).append("\r\n");
  out.append("Host: ").append(host_header).append("\r\n");
  for (const auto& f : fields) {
    if (is_hop_by_hop(f.name, connection_tokens)) continue;
    out.append(f.name).append(": ").append(f.value).append("\r\n");
  }
  out.append("Connection: close\r\n\r\n");
  request.upstream_head = std::move(out);
  request.origin_target = std::move(origin_path);
  ParseResult ok;
  ok.request = std::move(request);
  return ok;
}

}  // namespace maf::sandbox::egress_proxy
