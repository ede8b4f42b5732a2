#pragma once
// A small argument parser for `maf-sandbox SUBCOMMAND [--opt value | --opt=value | --flag]...
// [-- ARGV...]`. Hand-written so the command needs no Boost library beyond the headers.

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace maf::sandbox::cli {

/// The command line itself is wrong (exit code 2).
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One accepted option of a subcommand.
struct OptionSpec {
  std::string name;  ///< without the leading "--"
  bool takes_value = true;
  bool repeatable = false;
};

/// A subcommand's grammar: its options and whether it takes an argv after "--".
struct CommandSpec {
  std::vector<OptionSpec> options;
  bool takes_argv = false;
};

struct Args {
  std::string command;
  std::map<std::string, std::vector<std::string>> values;
  std::set<std::string> flags;
  std::vector<std::string> argv;  ///< everything after "--"

  bool flag(const std::string& name) const { return flags.count(name) != 0; }
  std::optional<std::string> get(const std::string& name) const;
  std::vector<std::string> all(const std::string& name) const;
  /// The option's value or UsageError naming the option and the subcommand.
  std::string required(const std::string& name) const;
};

/// Parse argv[1..] against `commands` (keyed by subcommand name). Throws UsageError for an
/// unknown subcommand or option, a missing value, a repeated single option, or a stray
/// positional argument.
Args parse_args(const std::vector<std::string>& arguments, const std::map<std::string, CommandSpec>& commands);

}  // namespace maf::sandbox::cli
