// Operator-pinned names and the routability test (pinned_names.hpp).
#include "pinned_names.hpp"

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "request.hpp"

namespace maf::sandbox::egress_proxy {
namespace {

struct Net4 {
  std::uint32_t base;
  int bits;
};

bool in4(std::uint32_t a, Net4 n) { return n.bits == 0 || (a >> (32 - n.bits)) == (n.base >> (32 - n.bits)); }

bool v4_routable(std::uint32_t a) {
  // IANA special-purpose registry entries that are not globally reachable.
  static constexpr std::array<Net4, 16> kSpecial{{
      {0x00000000, 8},  {0x0A000000, 8},   {0x64400000, 10}, {0x7F000000, 8},  {0xA9FE0000, 16}, {0xAC100000, 12},
      {0xC0000000, 24}, {0xC0000200, 24},  {0xC0A80000, 16}, {0xC6120000, 15}, {0xC6336400, 24}, {0xCB007100, 24},
      {0xE0000000, 4},  {0xF0000000, 4},   {0xC0586300, 24}, {0xFFFFFFFF, 32},
  }};
  for (const auto& n : kSpecial)
    if (in4(a, n)) return false;
  return true;
}

}  // namespace

std::optional<std::string> canonical_ip(std::string_view text) {
  std::string t(text);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  unsigned char bytes[16];
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, t.c_str(), bytes) == 1 && inet_ntop(AF_INET, bytes, out, sizeof out)) return std::string(out);
  if (t.find('%') == std::string::npos && inet_pton(AF_INET6, t.c_str(), bytes) == 1 &&
      inet_ntop(AF_INET6, bytes, out, sizeof out))
    return std::string(out);
  return std::nullopt;
}

bool is_globally_routable(std::string_view ip) {
  const std::string t(ip);
  unsigned char b[16];
  if (inet_pton(AF_INET, t.c_str(), b) == 1)
    return v4_routable((std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3]);
  if (inet_pton(AF_INET6, t.c_str(), b) != 1) return false;
  auto embedded_v4 = [&](int at) {
    return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) |
           b[at + 3];
  };
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr unsigned char kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b, kMapped, 12) == 0 || std::memcmp(b, kNat64, 12) == 0) return v4_routable(embedded_v4(12));
  bool zero_prefix = true;  // ::, ::1 and the deprecated IPv4-compatible ::a.b.c.d
  for (int i = 0; i < 12; ++i) zero_prefix = zero_prefix && b[i] == 0;
  if (zero_prefix) return false;
  if ((b[0] & 0xfe) == 0xfc) return false;                      // fc00::/7 unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return false;      // fe80::/10 link-local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return false;      // fec0::/10 site-local
  if (b[0] == 0xff) return false;                               // multicast
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return false;  // 2001:db8::/32
  if (b[0] == 0x01 && b[1] == 0x00 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0)
    return false;                                               // 100::/64 discard
  if (b[0] == 0x20 && b[1] == 0x02) return v4_routable(embedded_v4(2));  // 6to4 carries its v4
  return true;
}

void PinnedNames::pin(std::string_view host, std::string_view ip) {
  auto h = normalize_host(host);
  auto a = canonical_ip(ip);
  if (!h || !a) throw std::invalid_argument("cannot pin '" + std::string(host) + "' to '" + std::string(ip) + "'");
  pins_[*h].push_back(*a);
}

void PinnedNames::add_pin(std::string_view host_equals_ip) {
  const auto eq = host_equals_ip.find('=');
  if (eq == std::string_view::npos)
    throw std::invalid_argument("--resolve expects host=ip, got '" + std::string(host_equals_ip) + "'");
  pin(host_equals_ip.substr(0, eq), host_equals_ip.substr(eq + 1));
}

void PinnedNames::add_hosts_text(std::string_view text) {
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::vector<std::string_view> words;
    for (std::size_t p = 0; p < line.size();) {
      const auto start = line.find_first_not_of(" \t\r", p);
      if (start == std::string_view::npos) break;
      const auto stop = line.find_first_of(" \t\r", start);
      words.push_back(line.substr(start, stop == std::string_view::npos ? std::string_view::npos : stop - start));
      p = stop == std::string_view::npos ? line.size() : stop;
    }
    if (words.empty()) continue;
    if (words.size() < 2)
      throw std::invalid_argument("hosts file line " + std::to_string(line_no) + " names no host");
    try {
      for (std::size_t i = 1; i < words.size(); ++i) pin(words[i], words[0]);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("hosts file line " + std::to_string(line_no) + ": " + e.what());
    }
  }
}

const std::vector<std::string>* PinnedNames::lookup(const std::string& host) const {
  auto it = pins_.find(host);
  return it == pins_.end() ? nullptr : &it->second;
}

}  // namespace maf::sandbox::egress_proxy
