#include "maf/sandbox/command.hpp"

#include "maf/sandbox/support/shell.hpp"
#include "maf/sandbox/errors.hpp"
#include "spec/command_check.hpp"

namespace maf::sandbox {

std::string Command::shell_line() const {
  if (is_argv()) return support::shell_join(argv());
  return std::get<0>(form_);
}

namespace detail {

std::string command_problem(const Command& command) {
  if (command.is_argv()) {
    const auto& argv = command.argv();
    if (argv.empty()) return "the command is empty (an argv with no program)";
    if (argv.front().empty()) return "the command's argv[0] is empty: there is no program to run";
    for (std::size_t i = 0; i < argv.size(); ++i)
      if (argv[i].find('\0') != std::string::npos)
        return "argv[" + std::to_string(i) + "] holds a NUL byte, which no program can receive";
    return {};
  }
  const std::string line = command.shell_line();
  if (line.find_first_not_of(" \t\r\n") == std::string::npos)
    return line.empty() ? "the command is empty" : "the command is blank (only white space)";
  if (line.find('\0') != std::string::npos) return "the command line holds a NUL byte, which sh -c cannot receive";
  return {};
}

void refuse_malformed_command(const std::string& who, const Command& command) {
  if (auto problem = command_problem(command); !problem.empty()) throw ValueError(who + ": " + problem);
}

}  // namespace detail

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
