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
    auto authority = parse_authority(item, /*port_required=*/false);
    if (!authority) throw std::invalid_argument("allowlist entry '" + std::string(item) + "' is not host or host:port");
    out.entries_.push_back(AllowEntry{std::move(authority->first), authority->second});
  }
  return out;
}

void Allowlist::add(const Allowlist& other) {
  entries_.insert(entries_.end(), other.entries_.begin(), other.entries_.end());
}

bool Allowlist::allows(RequestKind kind, const Target& target) const {
  const std::uint16_t default_port = kind == RequestKind::Connect ? 443 : 80;
  for (const auto& e : entries_)
    if (e.host == target.host && target.port == e.port.value_or(default_port)) return true;
  return false;
}

std::string Allowlist::describe() const {
  if (entries_.empty()) return "nothing";
  std::string out;
  for (const auto& e : entries_) {
    if (!out.empty()) out += ',';
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
