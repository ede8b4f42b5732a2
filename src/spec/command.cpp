#include "maf/sandbox/command.hpp"

#include "maf/sandbox/support/shell.hpp"

namespace maf::sandbox {

std::string Command::shell_line() const {
  if (is_argv()) return support::shell_join(argv());
  return std::get<0>(form_);
}

namespace support {

std::string shell_quote(std::string_view argument) {
  if (argument.empty()) return "''";
  bool safe = true;
  for (unsigned char c : argument) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("_@%+=:,./-").find(static_cast<char>(c)) != std::string_view::npos;
    if (!ok) { safe = false; break; }
  }
  if (safe) return std::string(argument);
  std::string out = "'";
  for (char c : argument) {
    if (c == '\'') out += "'\"'\"'";
    else out += c;
  }
  out += "'";
  return out;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(a);
  }
  return out;
}

}  // namespace support
}  // namespace maf::sandbox
