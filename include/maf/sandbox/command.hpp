#pragma once
/// @file command.hpp
/// A command for Sandbox::exec: an argv or a shell command line (C-37).
///
/// An argv is never handed to a shell unquoted: each element is POSIX-quoted (C-121), so
/// spaces, `$()` and `;` arrive literally. A shell string is run by `sh -c` in the guest.

#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

namespace maf::sandbox {

class Command {
public:
  /// A shell command line, run by `sh -c` in the guest.
  Command(std::string shell_line) : form_(std::move(shell_line)) {}  // NOLINT: implicit by design
  Command(const char* shell_line) : form_(std::string(shell_line)) {}  // NOLINT
  /// An argv; run without a shell or, where the transport needs one, quoted element-wise.
  Command(std::vector<std::string> argv) : form_(std::move(argv)) {}  // NOLINT
  /// An argv written in place: `exec({"python3", "main.py"})`. Braces always mean argv,
  /// also with one element; a shell line is a plain string.
  Command(std::initializer_list<std::string> argv) : form_(std::vector<std::string>(argv)) {}  // NOLINT

  bool is_argv() const noexcept { return form_.index() == 1; }
  /// The argv (only when is_argv()).
  const std::vector<std::string>& argv() const { return std::get<1>(form_); }
  /// What `sh -c` runs: the shell string as given, or the argv POSIX-quoted and joined.
  std::string shell_line() const;

private:
  std::variant<std::string, std::vector<std::string>> form_;
};

}  // namespace maf::sandbox
