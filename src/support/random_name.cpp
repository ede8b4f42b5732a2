#include "support/random_name.hpp"

#include <cstdint>
#include <random>

namespace maf::sandbox::detail {

std::string random_hex(std::size_t digits) {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(digits);
  while (out.size() < digits) {
    std::uint64_t v = engine();
    for (int i = 0; i < 16 && out.size() < digits; ++i, v >>= 4) out += kHex[v & 15];
  }
  return out;
}

}  // namespace maf::sandbox::detail
