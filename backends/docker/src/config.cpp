// DockerConfig parsing: every key known by name, every value checked before any engine call.
#include "maf/sandbox/docker/config.hpp"

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/plugin.hpp"
#include "said.hpp"

namespace maf::sandbox::docker {
namespace {

[[noreturn]] void refuse(const std::string& key, const std::string& why) {
  throw ValueError(said("configuration key '" + key + "' " + why));
}

std::string get_string(const nlohmann::json& j, const char* key) {
  if (!j.is_string()) refuse(key, "must be a string, got " + std::string(j.type_name()));
  return j.get<std::string>();
}

double get_positive_seconds(const nlohmann::json& j, const char* key) {
  if (!j.is_number()) refuse(key, "must be a number of seconds, got " + std::string(j.type_name()));
  const double v = j.get<double>();
  if (!(v > 0) || !std::isfinite(v)) refuse(key, "must be a positive finite number of seconds, got " + j.dump());
  return v;
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000.0)));
}

}  // namespace

std::chrono::milliseconds DockerConfig::command_timeout() const { return to_ms(command_timeout_seconds); }
std::chrono::milliseconds DockerConfig::image_pull_timeout() const { return to_ms(image_pull_timeout_seconds); }

std::optional<std::string> DockerConfig::cpus_argument() const {
  if (!cpus) return std::nullopt;
  return format_cpus(*cpus);
}

std::string format_cpus(double cpus) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, cpus);  // shortest round-trip, as repr()
  std::string text(buf, ec == std::errc{} ? end : buf);
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

DockerConfig parse_docker_config(const nlohmann::json& json) {
  require_known_keys(json,
                     {"docker_path", "egress_proxy_image", "outbound_network", "command_timeout_seconds",
                      "image_pull_timeout_seconds", "pids_limit", "memory", "cpus", "cap_drop_all", "init",
                      "max_exec_output_bytes", "declare_os_family", "transport", "docker_host", "egress_proxy_args",
                      "egress_inhibit_ipv4_fallback", "egress_event_log", "egress_upstream_ca_file",
                      "egress_proxy_terminates", "snapshots", "snapshot_budget_bytes", "snapshot_ttl_seconds"},
                     "docker");
  DockerConfig c;
  if (json.is_null()) return c;
  if (auto it = json.find("docker_path"); it != json.end()) {
    c.docker_path = get_string(*it, "docker_path");
    if (c.docker_path.empty()) refuse("docker_path", "must not be empty");
  }
  if (auto it = json.find("egress_proxy_image"); it != json.end() && !it->is_null()) {
    std::string image = get_string(*it, "egress_proxy_image");
    // "" is unset (upstream #407): declaration and behaviour agree on CLOSED.
    if (!image.empty()) c.egress_proxy_image = std::move(image);
  }
  if (auto it = json.find("egress_proxy_args"); it != json.end()) {
    if (!it->is_array()) refuse("egress_proxy_args", "must be an array of strings, got " + it->dump());
    for (const auto& arg : *it) c.egress_proxy_args.push_back(get_string(arg, "egress_proxy_args"));
  }
  if (auto it = json.find("egress_inhibit_ipv4_fallback"); it != json.end()) {
    if (!it->is_boolean()) refuse("egress_inhibit_ipv4_fallback", "must be true or false, got " + it->dump());
    c.egress_inhibit_ipv4_fallback = it->get<bool>();
  }
  if (auto it = json.find("egress_upstream_ca_file"); it != json.end() && !it->is_null())
    c.egress_upstream_ca_file = get_string(*it, "egress_upstream_ca_file");
  if (auto it = json.find("egress_proxy_terminates"); it != json.end()) {
    if (!it->is_boolean()) refuse("egress_proxy_terminates", "must be true or false, got " + it->dump());
    c.egress_proxy_terminates = it->get<bool>();
  }
  if (auto it = json.find("egress_event_log"); it != json.end() && !it->is_null())
    c.egress_observer = egress_event_log(get_string(*it, "egress_event_log"));  // opens it now: refused by name
  if (auto it = json.find("outbound_network"); it != json.end()) c.outbound_network = get_string(*it, "outbound_network");
  if (auto it = json.find("command_timeout_seconds"); it != json.end())
    c.command_timeout_seconds = get_positive_seconds(*it, "command_timeout_seconds");
  if (auto it = json.find("image_pull_timeout_seconds"); it != json.end())
    c.image_pull_timeout_seconds = get_positive_seconds(*it, "image_pull_timeout_seconds");
  if (auto it = json.find("pids_limit"); it != json.end()) {
    if (!it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > 4194304)
      refuse("pids_limit", "must be an integer from 1 to 4194304, got " + it->dump());
    c.pids_limit = it->get<int>();
  }
  if (auto it = json.find("memory"); it != json.end() && !it->is_null()) {
    c.memory = get_string(*it, "memory");
    if (c.memory->empty()) refuse("memory", "must not be empty (omit it for no limit)");
  }
  if (auto it = json.find("cpus"); it != json.end() && !it->is_null()) {
    if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
      refuse("cpus", "must be a positive number, got " + it->dump());
    c.cpus = it->get<double>();
  }
  if (auto it = json.find("cap_drop_all"); it != json.end()) {
    if (!it->is_boolean()) refuse("cap_drop_all", "must be true or false, got " + it->dump());
    c.cap_drop_all = it->get<bool>();
  }
  if (auto it = json.find("init"); it != json.end()) {
    if (!it->is_boolean()) refuse("init", "must be true or false, got " + it->dump());
    c.init = it->get<bool>();
  }
  if (auto it = json.find("max_exec_output_bytes"); it != json.end()) {
    if (!it->is_number_unsigned() || it->get<unsigned long long>() < 1)
      refuse("max_exec_output_bytes", "must be a positive integer, got " + it->dump());
    c.max_exec_output_bytes = it->get<std::size_t>();
  }
  if (auto it = json.find("declare_os_family"); it != json.end()) {
    if (!it->is_boolean()) refuse("declare_os_family", "must be true or false, got " + it->dump());
    c.declare_os_family = it->get<bool>();
  }
  if (auto it = json.find("transport"); it != json.end()) {
    const std::string kind = get_string(*it, "transport");
    if (kind == "api")
      c.transport = DockerTransportKind::Api;
    else if (kind == "cli")
      c.transport = DockerTransportKind::Cli;
    else if (kind != "auto")
      refuse("transport", "must be \"auto\", \"cli\" or \"api\", got " + it->dump());
  }
  if (auto it = json.find("snapshots"); it != json.end()) {
    if (!it->is_boolean()) refuse("snapshots", "must be true or false, got " + it->dump());
    c.snapshots = it->get<bool>();
  }
  if (auto it = json.find("snapshot_budget_bytes"); it != json.end()) {
    if (!it->is_number_integer() || it->get<long long>() < 1)
      refuse("snapshot_budget_bytes", "must be a positive integer, got " + it->dump());
    c.snapshot_budget_bytes = it->get<std::uint64_t>();
  }
  if (auto it = json.find("snapshot_ttl_seconds"); it != json.end()) {
    if (!it->is_number_integer() || it->get<long long>() < 1)
      refuse("snapshot_ttl_seconds", "must be a positive integer, got " + it->dump());
    c.snapshot_ttl = std::chrono::seconds(it->get<long long>());
  }
  if (auto it = json.find("docker_host"); it != json.end() && !it->is_null()) {
    // The CLI transport resolves its endpoint from the client's context (D-29).
    if (c.transport == DockerTransportKind::Cli)
      refuse("docker_host", "is read by the Engine-API transport only (\"transport\": \"api\" or \"auto\")");
    c.docker_host = get_string(*it, "docker_host");
    if (c.docker_host->empty()) refuse("docker_host", "must not be empty (omit it for DOCKER_HOST)");
  }
  return c;
}

}  // namespace maf::sandbox::docker
