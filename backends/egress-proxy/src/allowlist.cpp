// The egress proxy's allowlist (allowlist.hpp).
#include "allowlist.hpp"

#include <stdexcept>

namespace maf::sandbox::egress_proxy {

Allowlist Allowlist::parse(std::string_view list) {
  Allowlist out;
  std::size_t pos = 0;
  while (pos < list.size()) {
    const auto end = list.find_first_of(", \t\r\n", pos);
    const auto item = list.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? list.size() : end + 1;
    if (item.empty()) continue;
    const bool wildcard = item.size() > 2 && item.substr(0, 2) == "*.";
    std::string authority_text(wildcard ? item.substr(2) : item);
    // A bare IPv6 literal (the spec allows one): bracket it so its last group is no port.
    if (!wildcard && authority_text.front() != '[' && authority_text.find(':') != authority_text.rfind(':'))
      authority_text = "[" + authority_text + "]";
    auto authority = parse_authority(authority_text, /*port_required=*/false);
    // A wildcard stands for one DNS label: its base must be a name with a dot, not an address.
    const bool bad_wildcard =
        authority && wildcard &&
        (authority->first.find('.') == std::string::npos || authority->first.find(':') != std::string::npos ||
         authority->first.find_first_not_of("0123456789.") == std::string::npos);
    if (!authority || bad_wildcard)
      throw std::invalid_argument("allowlist entry '" + std::string(item) +
                                  "' is not host, host:port or *.domain[:port] over at least two labels");
    out.entries_.push_back(AllowEntry{std::move(authority->first), authority->second, wildcard});
  }
  return out;
}

bool AllowEntry::matches(const std::string& name) const {
  if (!wildcard) return name == host;
  // One label, then ".host": "a.example.com" for "*.example.com"; never the base itself.
  if (name.size() < host.size() + 2) return false;
  const auto dot = name.size() - host.size() - 1;
  return name.compare(dot + 1, std::string::npos, host) == 0 && name[dot] == '.' &&
         name.find('.') == dot && name.find(':') == std::string::npos;
}

void Allowlist::add(const Allowlist& other) {
  entries_.insert(entries_.end(), other.entries_.begin(), other.entries_.end());
}

bool Allowlist::allows(RequestKind kind, const Target& target) const {
  const std::uint16_t default_port = kind == RequestKind::Connect ? 443 : 80;
  for (const auto& e : entries_)
    if (e.matches(target.host) && target.port == e.port.value_or(default_port)) return true;
  return false;
}

std::string Allowlist::describe() const {
  if (entries_.empty()) return "nothing";
  std::string out;
  for (const auto& e : entries_) {
    if (!out.empty()) out += ',';
    if (e.wildcard) out += "*.";
    const bool v6 = e.host.find(':') != std::string::npos;
    // Appended piecewise: `"[" + host + "]"` trips a false GCC 12 -Wrestrict at -O2.
    if (v6 && e.port) {
      out += '[';
      out += e.host;
      out += ']';
    } else {
      out += e.host;
    }
    if (e.port) {
      out += ':';
      out += std::to_string(*e.port);
    }
  }
  return out;
}

}  // namespace maf::sandbox::egress_proxy
