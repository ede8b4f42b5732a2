// UTF-8 validation and replacement decoding with Python's "maximal subpart" practice
// (The Unicode Standard 15, section 3.9, U+FFFD substitution): an invalid sequence is replaced by one U+FFFD per
// maximal prefix of a well-formed sequence, or per lone byte.
#include "maf/sandbox/exec_result.hpp"

namespace maf::sandbox {
namespace {

// Length of the well-formed sequence starting at s[i], or 0 with `bad` = length of the
// maximal subpart to replace (at least 1).
std::size_t scan(std::string_view s, std::size_t i, std::size_t& bad) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  bad = 1;
  if (c < 0x80) return 1;
  std::size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) { need = 2; lo = 0xA0; }
  else if (c >= 0xE1 && c <= 0xEC) need = 2;
  else if (c == 0xED) { need = 2; hi = 0x9F; }  // no surrogates
  else if (c >= 0xEE && c <= 0xEF) need = 2;
  else if (c == 0xF0) { need = 3; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else if (c == 0xF4) { need = 3; hi = 0x8F; }
  else return 0;
  for (std::size_t k = 1; k <= need; ++k) {
    if (i + k >= s.size()) { bad = k; return 0; }
    const unsigned char t = b(i + k);
    const unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (t < l || t > h) { bad = k; return 0; }
  }
  return need + 1;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) noexcept {
  std::size_t i = 0, bad = 0;
  while (i < bytes.size()) {
    const std::size_t n = scan(bytes, i, bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string decode_utf8_replace(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0, bad = 0;
  while (i < bytes.size()) {
    const std::size_t n = scan(bytes, i, bad);
    if (n) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      i += bad;
    }
  }
  return out;
}

std::string ExecResult::stdout_text() const { return decode_utf8_replace(stdout_bytes); }
std::string ExecResult::stderr_text() const { return decode_utf8_replace(stderr_bytes); }

}  // namespace maf::sandbox
