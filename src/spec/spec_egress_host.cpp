// egress_allow host validation (egress.hpp `egress_host_problem`; issue 22). A host string
// reaches a proxy's command line and its matcher, where a separator inside one entry (the
// proxy splits its list on commas and whitespace) becomes a second, unwritten entry. So the
// spec accepts only the shapes a host can have, and says which entry and why otherwise.
#include <arpa/inet.h>

#include <algorithm>
#include <string>

#include "maf/sandbox/egress.hpp"

namespace maf::sandbox {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_digit(c)) return false;
  return true;
}

/// Dotted quad, four decimal parts 0–255 without leading zeros (inet_pton's form; no octal,
/// hex or short forms, which resolvers read differently from one another).
bool is_ipv4(std::string_view s) {
  in_addr out{};
  return s.size() <= 15 && ::inet_pton(AF_INET, std::string(s).c_str(), &out) == 1;
}

bool is_ipv6(std::string_view s) {
  in6_addr out{};
  return !s.empty() && s.size() <= 45 && s.find('%') == std::string_view::npos &&
         ::inet_pton(AF_INET6, std::string(s).c_str(), &out) == 1;
}

/// Why `s` is not a DNS name: labels of 1–63 letters, digits, '-' (not first or last) and '_',
/// at most 253 characters, one optional trailing dot, and a last label that is not all digits
/// (no TLD is, and `1.2.3` is an IPv4 short form to some resolvers).
std::optional<std::string> name_problem(std::string_view s) {
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);
  if (s.empty()) return "empty name";
  if (s.size() > 253) return "longer than 253 characters";
  std::string_view last;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto dot = std::min(s.find('.', start), s.size());
    const auto label = s.substr(start, dot - start);
    if (label.empty()) return "an empty label (two dots, or a leading dot)";
    if (label.size() > 63) return "a label longer than 63 characters";
    for (char c : label)
      if (!is_alnum(c) && c != '-' && c != '_') {
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x80) return "a non-ASCII character (write an internationalised name in its xn-- form)";
        if (byte < 0x20 || byte == 0x7f) return "a control character";
        return std::string("the character '") + c + "'";
      }
    if (label.front() == '-' || label.back() == '-') return "a label starting or ending with '-'";
    last = label;
    start = dot + 1;
  }
  if (all_digits(last)) return "an all-numeric last label that is not an IPv4 address";
  return std::nullopt;
}

std::optional<std::string> port_problem(std::string_view port) {
  if (!all_digits(port) || port.size() > 5 || port.front() == '0') return "a port that is not a number 1–65535";
  if (std::stoul(std::string(port)) > 65535) return "a port above 65535";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> egress_host_problem(std::string_view host) {
  if (host.empty()) return "it is empty";
  if (host.find("://") != std::string_view::npos) return "a URL; write the host alone";
  // A bare IPv6 literal; with a port it must be bracketed.
  if (host.find(':') != host.rfind(':')) {
    if (host.front() == '[') {
      const auto close = host.find(']');
      if (close == std::string_view::npos || !is_ipv6(host.substr(1, close - 1)))
        return "a bracketed part that is not an IPv6 literal";
      const auto rest = host.substr(close + 1);
      if (rest.empty()) return std::nullopt;
      if (rest.front() != ':') return "text after the bracketed IPv6 literal";
      return port_problem(rest.substr(1));
    }
    if (is_ipv6(host)) return std::nullopt;
    return "several ':' but not an IPv6 literal (bracket one that has a port: [::1]:8443)";
  }
  if (host.front() == '[') return "a bracketed part that is not an IPv6 literal";
  std::string_view name = host;
  if (const auto colon = host.find(':'); colon != std::string_view::npos) {
    if (auto problem = port_problem(host.substr(colon + 1))) return problem;
    name = host.substr(0, colon);
  }
  if (is_ipv4(name)) return std::nullopt;
  bool wildcard = false;
  if (name.size() >= 2 && name.substr(0, 2) == "*.") {
    wildcard = true;
    name.remove_prefix(2);
  }
  if (name.find('*') != std::string_view::npos)
    return "a '*' that is not the whole leftmost label of a wildcard name (*.example.com)";
  if (auto problem = name_problem(name)) return problem;
  if (wildcard) {
    auto base = name;
    if (base.back() == '.') base.remove_suffix(1);
    if (base.find('.') == std::string_view::npos)
      return "a wildcard over a top-level domain ('*.' must be followed by at least two labels)";
    if (is_ipv4(base) || all_digits(base.substr(base.rfind('.') + 1))) return "a wildcard over an address";
  }
  return std::nullopt;
}

}  // namespace maf::sandbox
