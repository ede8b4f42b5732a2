#include "args.hpp"

namespace maf::sandbox::cli {

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::required(const std::string& name) const {
  if (auto v = get(name)) return *v;
  throw UsageError("`" + command + "` needs --" + name);
}

Args parse_args(const std::vector<std::string>& arguments, const std::map<std::string, CommandSpec>& commands) {
  if (arguments.empty()) throw UsageError("no subcommand given");
  Args out;
  out.command = arguments[0];
  auto cmd = commands.find(out.command);
  if (cmd == commands.end()) throw UsageError("unknown subcommand '" + out.command + "'");
  for (std::size_t i = 1; i < arguments.size(); ++i) {
    const std::string& arg = arguments[i];
    if (arg == "--") {
      if (!cmd->second.takes_argv) throw UsageError("`" + out.command + "` takes no command after --");
      out.argv.assign(arguments.begin() + static_cast<std::ptrdiff_t>(i) + 1, arguments.end());
      break;
    }
    if (arg.rfind("--", 0) != 0)
      throw UsageError("unexpected argument '" + arg + "'" +
                       (cmd->second.takes_argv ? " (put the command after --)" : ""));
    std::string name = arg.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionSpec* spec = nullptr;
    for (const auto& o : cmd->second.options)
      if (o.name == name) spec = &o;
    if (!spec) throw UsageError("`" + out.command + "` has no option --" + name);
    if (!spec->takes_value) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      out.flags.insert(name);
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= arguments.size()) throw UsageError("--" + name + " needs a value");
      inline_value = arguments[++i];
    }
    auto& slot = out.values[name];
    if (!slot.empty() && !spec->repeatable) throw UsageError("--" + name + " was given twice");
    slot.push_back(*inline_value);
  }
  return out;
}

}  // namespace maf::sandbox::cli
