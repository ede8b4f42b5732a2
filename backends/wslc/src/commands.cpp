// The argv of every verb (wslc.md C-10…C-22). Options before the first positional (C-5).
#include "maf/sandbox/wslc/commands.hpp"

#include <cstdio>

#include "maf/sandbox/support/labels.hpp"

namespace maf::sandbox::wslc {

std::vector<std::string> version_args() { return {"version"}; }

std::vector<std::string> list_args(const ListSelector& selector) {
  std::vector<std::string> args{"container", "list"};
  if (selector.all) args.push_back("-a");
  args.insert(args.end(), {"--format", "json"});
  if (selector.name) args.insert(args.end(), {"--filter", "name=" + *selector.name});
  for (const auto& [label, value] : selector.labels)
    args.insert(args.end(), {"--filter", "label=" + support::label_argument(label, value)});
  return args;
}

std::vector<std::string> run_args(const std::string& name, const std::vector<std::pair<std::string, std::string>>& labels,
                                  const std::string& image) {
  std::vector<std::string> args{"container", "run", "-d", "--name", name, "--network", "none"};
  for (const auto& [label, value] : labels) args.insert(args.end(), {"-l", support::label_argument(label, value)});
  args.insert(args.end(), {image, "sleep", "infinity"});
  return args;
}

std::vector<std::string> start_args(const std::string& name) { return {"container", "start", name}; }

std::vector<std::string> exec_args(const std::string& name, const std::string& working_directory,
                                   const std::vector<std::string>& argv, std::optional<std::string> user) {
  std::vector<std::string> args{"container", "exec"};
  if (user) args.insert(args.end(), {"--user", *user});
  args.insert(args.end(), {"-w", working_directory, name});
  args.insert(args.end(), argv.begin(), argv.end());
  return args;
}

std::vector<std::string> copy_in_args(const std::string& name) { return {"container", "cp", "-", name + ":/"}; }

std::vector<std::string> copy_out_args(const std::string& name, const std::string& guest_path) {
  // Never a trailing '/': that follows links (W-21).
  return {"container", "cp", name + ":" + guest_path, "-"};
}

std::vector<std::string> remove_args(const std::string& name) { return {"container", "remove", "-f", name}; }

std::vector<std::string> network_remove_args(const std::string& name) { return {"network", "remove", "--force", name}; }

std::optional<std::array<int, 4>> parse_wslc_version(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  constexpr std::string_view prefix = "wslc ";
  if (text.substr(0, prefix.size()) != prefix) return std::nullopt;
  text.remove_prefix(prefix.size());
  std::array<int, 4> v{0, 0, 0, 0};
  std::size_t part = 0;
  bool digit_seen = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      if (v[part] > 100000) return std::nullopt;
      v[part] = v[part] * 10 + (c - '0');
      digit_seen = true;
    } else if (c == '.' && digit_seen && part < 3) {
      ++part;
      digit_seen = false;
    } else {
      return std::nullopt;
    }
  }
  if (!digit_seen || part < 2) return std::nullopt;  // at least major.minor.patch
  return v;
}

}  // namespace maf::sandbox::wslc
