// WslcConfig parsing: every key known by name, every value checked before any wslc call.
#include "maf/sandbox/wslc/config.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/plugin.hpp"
#include "maf/sandbox/wslc/commands.hpp"
#include "said.hpp"

namespace maf::sandbox::wslc {
namespace {

[[noreturn]] void refuse(const std::string& key, const std::string& why) {
  throw ValueError(said("configuration key '") + key + "' " + why);
}

std::string get_string(const nlohmann::json& j, const char* key) {
  if (!j.is_string()) refuse(key, "must be a string, got " + std::string(j.type_name()));
  return j.get<std::string>();
}

}  // namespace

std::chrono::milliseconds WslcConfig::command_timeout() const {
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(command_timeout_seconds * 1000.0)));
}

WslcConfig parse_wslc_config(const nlohmann::json& json) {
  require_known_keys(json,
                     {"wslc_path", "command_timeout_seconds", "image", "egress_proxy_image", "cpus",
                      "egress_proxy_terminates", "egress_upstream_ca_file"},
                     "wslc");
  WslcConfig c;
  if (json.is_null()) return c;
  if (auto it = json.find("wslc_path"); it != json.end()) {
    c.wslc_path = get_string(*it, "wslc_path");
    if (c.wslc_path.empty()) refuse("wslc_path", "must not be empty");
  }
  if (auto it = json.find("command_timeout_seconds"); it != json.end()) {
    if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
      refuse("command_timeout_seconds", "must be a positive finite number of seconds, got " + it->dump());
    c.command_timeout_seconds = it->get<double>();
  }
  if (auto it = json.find("image"); it != json.end() && !it->is_null()) {
    c.image = get_string(*it, "image");
    if (c.image->empty()) refuse("image", "must not be empty (omit it to require an image in every spec)");
  }
  if (auto it = json.find("egress_proxy_image"); it != json.end() && !it->is_null()) {
    // "" is unset, as upstream reads it; a real image declares ALLOWLIST (W-4, W-31).
    if (std::string image = get_string(*it, "egress_proxy_image"); !image.empty()) c.egress_proxy_image = image;
  }
  if (auto it = json.find("egress_proxy_terminates"); it != json.end()) {
    if (!it->is_boolean()) refuse("egress_proxy_terminates", "must be true or false, got " + it->dump());
    c.egress_proxy_terminates = it->get<bool>();
  }
  if (auto it = json.find("egress_upstream_ca_file"); it != json.end() && !it->is_null()) {
    c.egress_upstream_ca_file = get_string(*it, "egress_upstream_ca_file");
    if (c.egress_upstream_ca_file->empty()) refuse("egress_upstream_ca_file", "must not be empty (omit it for the image's bundle)");
  }
  if (auto it = json.find("cpus"); it != json.end() && !it->is_null()) {
    if (!it->is_number()) refuse("cpus", "must be a number of CPUs, got " + it->dump());
    try {
      cpus_argument(it->get<double>());  // the range wslc and the engine take (commands.hpp)
    } catch (const ValueError& e) {
      refuse("cpus", std::string("is out of range: ") + e.what());
    }
    c.cpus = it->get<double>();
  }
  return c;
}

}  // namespace maf::sandbox::wslc
