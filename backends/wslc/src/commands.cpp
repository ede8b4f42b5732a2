// The argv of every verb (wslc.md C-10…C-22). Options before the first positional (C-5).
#include "maf/sandbox/wslc/commands.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "maf/sandbox/egress_proxy/namespace_settings.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/resource_limits.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "said.hpp"

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

std::string cpus_argument(double cpus) {
  if (!std::isfinite(cpus) || cpus < ResourceLimits::kMinCpus || cpus > ResourceLimits::kMaxCpus)
    throw ValueError(said(fmt::format("cpus must be from {} to {} CPUs (wslc --cpus), got {}", ResourceLimits::kMinCpus,
                                      ResourceLimits::kMaxCpus, cpus)));
  // wslc reads --cpus with std::from_chars(..., chars_format::fixed): "1e-02" would be refused.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, cpus, std::chars_format::fixed);
  return std::string(buf, ec == std::errc{} ? end : buf);
}

std::vector<std::string> run_args(const std::string& name, const LabelList& labels, const std::string& image,
                                  const std::string& network, const LabelList& env, std::optional<double> cpus) {
  std::vector<std::string> args{"container", "run", "-d", "--name", name, "--network", network};
  if (cpus) args.insert(args.end(), {"--cpus", cpus_argument(*cpus)});
  for (const auto& [key, value] : env) args.insert(args.end(), {"-e", key + "=" + value});
  for (const auto& [label, value] : labels) args.insert(args.end(), {"-l", support::label_argument(label, value)});
  args.insert(args.end(), {image, "sleep", "infinity"});
  return args;
}

std::vector<std::string> proxy_run_args(const std::string& proxy, const std::string& network, const LabelList& env,
                                        const LabelList& labels, const std::string& image) {
  std::vector<std::string> args{"container", "run", "-d", "--name", proxy, "--network", network};
  for (const auto& [key, value] : env) args.insert(args.end(), {"-e", key + "=" + value});
  // Issue 22: the proxy's namespace never forwards (egress_proxy/namespace_settings.hpp). A
  // wslc that refused --sysctl would fail this run (W-33), never start an open router; and
  // the proxy refuses to serve where forwarding is still on.
  for (const auto& [key, value] : egress_proxy::proxy_sysctls()) args.insert(args.end(), {"--sysctl", key + "=" + value});
  for (const auto& [label, value] : labels) args.insert(args.end(), {"-l", support::label_argument(label, value)});
  args.insert(args.end(), {"-l", support::label_argument(support::kLabelRole, "proxy"), image});
  return args;
}

std::vector<std::string> logs_args(const std::string& name, std::optional<int> tail) {
  if (tail) return {"container", "logs", "--tail", std::to_string(*tail), name};
  return {"container", "logs", name};
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

std::vector<std::string> network_create_args(const std::string& network, const LabelList& labels) {
  std::vector<std::string> args{"network", "create", "--internal"};
  for (const auto& [label, value] : labels) args.insert(args.end(), {"-l", support::label_argument(label, value)});
  args.push_back(network);
  return args;
}

std::vector<std::string> network_connect_args(const std::string& container) {
  return {"network", "connect", "bridge", container};
}

std::vector<std::string> network_remove_args(const std::string& name) { return {"network", "remove", "--force", name}; }

bool proxy_reports_listening(std::string_view logs) {
  const std::string spec_form = "listening on " + std::to_string(kProxyPort);
  std::size_t start = 0;
  while (start < logs.size()) {
    std::size_t nl = logs.find('\n', start);
    if (nl == std::string_view::npos) nl = logs.size();
    std::string_view line = logs.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, spec_form.size()) == spec_form) return true;
    if (line.empty() || line.front() != '{') continue;
    try {
      const auto j = nlohmann::json::parse(line);
      if (j.is_object() && j.value("event", "") == "listening" && j.value("port", 0) == kProxyPort) return true;
    } catch (const nlohmann::json::exception&) {
      // A partial line (the log read is capped) or another writer's text: not readiness.
    }
  }
  return false;
}

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
