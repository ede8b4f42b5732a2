// NFC and Python-compatible lowercasing over utf8proc (see unicode_text.hpp for what is pinned).
#include "support/unicode_text.hpp"

#include <cstdlib>
#include <memory>
#include <vector>

#include <utf8proc.h>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::detail {
namespace {

std::vector<utf8proc_int32_t> decode(std::string_view utf8) {
  std::vector<utf8proc_int32_t> out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(utf8.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) throw ValueError("text is not valid UTF-8");
    out.push_back(cp);
    p += n;
    left -= n;
  }
  return out;
}

void encode(utf8proc_int32_t cp, std::string& out) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(cp, buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
}

bool is_cased(utf8proc_int32_t cp) {
  // Other_Lowercase / Other_Uppercase code points that have no case mapping of their own
  // (found by comparing every code point against CPython 3.11).
  if (cp == 0x00AA || cp == 0x00BA || (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
      (cp >= 0x1F170 && cp <= 0x1F189))
    return true;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
      return true;
    default:
      return utf8proc_tolower(cp) != cp || utf8proc_toupper(cp) != cp;
  }
}

bool is_case_ignorable(utf8proc_int32_t cp) {
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      break;
  }
  switch (cp) {
    case 0x0027: case 0x002E: case 0x003A: case 0x00B7: case 0x0387: case 0x055F: case 0x05F4: case 0x2018:
    case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55: case 0xFF07:
    case 0xFF0E: case 0xFF1A:
      return true;
    default:
      return false;
  }
}

/// CPython's handle_capital_sigma: cased (case-ignorable)* SIGMA !((case-ignorable)* cased).
bool is_final_sigma(const std::vector<utf8proc_int32_t>& cps, std::size_t i) {
  std::size_t j = i;
  while (j > 0 && is_case_ignorable(cps[j - 1])) --j;
  if (j == 0 || !is_cased(cps[j - 1])) return false;
  std::size_t k = i + 1;
  while (k < cps.size() && is_case_ignorable(cps[k])) ++k;
  return k == cps.size() || !is_cased(cps[k]);
}

}  // namespace

std::string nfc(std::string_view utf8) {
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()), static_cast<utf8proc_ssize_t>(utf8.size()),
                   &mapped, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) throw ValueError(std::string("cannot NFC-normalise text: ") + utf8proc_errmsg(n));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  return std::string(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(n));
}

std::string python_lower(std::string_view utf8) {
  const auto cps = decode(utf8);
  std::string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < cps.size(); ++i) {
    const utf8proc_int32_t cp = cps[i];
    if (cp == 0x0130) {
      encode(0x0069, out);
      encode(0x0307, out);
    } else if (cp == 0x03A3) {
      encode(is_final_sigma(cps, i) ? 0x03C2 : 0x03C3, out);
    } else {
      encode(utf8proc_tolower(cp), out);
    }
  }
  return out;
}

}  // namespace maf::sandbox::detail
