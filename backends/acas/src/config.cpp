// parse_acas_config: the plugin's JSON, validated by name.
#include <cmath>

#include <nlohmann/json.hpp>

#include "maf/sandbox/acas/backend.hpp"
#include "maf/sandbox/plugin.hpp"
#include "said.hpp"

namespace maf::sandbox::acas {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& why) {
  throw ValueError(said("configuration '") + key + "' " + why);
}

void read_string(const nlohmann::json& j, const char* key, std::string& out) {
  if (!j.contains(key)) return;
  if (!j[key].is_string()) bad(key, "must be a string");
  out = j[key].get<std::string>();
}

void read_bool(const nlohmann::json& j, const char* key, bool& out) {
  if (!j.contains(key)) return;
  if (!j[key].is_boolean()) bad(key, "must be a boolean");
  out = j[key].get<bool>();
}

void read_positive(const nlohmann::json& j, const char* key, double& out) {
  if (!j.contains(key)) return;
  const auto& v = j[key];
  if (!v.is_number() || v.is_boolean()) bad(key, "must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d) || d <= 0) bad(key, "must be finite and positive");
  out = d;
}

template <typename Int>
void read_positive_int(const nlohmann::json& j, const char* key, Int& out) {
  if (!j.contains(key)) return;
  const auto& v = j[key];
  // booleans are not integers here, whatever JSON libraries think.
  if (!v.is_number_integer() || v.is_boolean() || v.get<std::int64_t>() < 1) bad(key, "must be a positive integer");
  out = static_cast<Int>(v.get<std::int64_t>());
}

}  // namespace

AcasConfig parse_acas_config(const nlohmann::json& j) {
  require_known_keys(j,
                     {"endpoint", "subscription_id", "resource_group", "sandbox_group", "registry", "default_image", "api_version",
                      "allow_insecure_loopback", "token", "token_command", "token_env", "scope",
                      "managed_identity", "managed_identity_client_id", "imds_endpoint",
                      "service_principal", "workload_identity", "authority_host",
                      "auto_suspend_seconds", "auto_delete_seconds", "read_timeout_seconds", "probe_timeout_seconds",
                      "exec_output_limit_bytes", "request_timeout_seconds", "create_timeout_seconds",
                      "delete_timeout_seconds", "poll_interval_seconds", "retry_after_cap_seconds", "http_workers",
                      "max_clients_per_loop", "client_wait_seconds", "client_close_seconds"},
                     "acas");
  AcasConfig c;
  if (j.is_null()) return c;
  read_string(j, "endpoint", c.endpoint);
  read_string(j, "subscription_id", c.subscription_id);
  read_string(j, "resource_group", c.resource_group);
  read_string(j, "sandbox_group", c.sandbox_group);
  read_string(j, "registry", c.registry);
  read_string(j, "api_version", c.api_version);
  read_string(j, "default_image", c.default_image);
  read_string(j, "token", c.token);
  read_string(j, "token_env", c.token_env);
  read_string(j, "scope", c.scope);
  read_bool(j, "allow_insecure_loopback", c.allow_insecure_loopback);
  read_bool(j, "managed_identity", c.managed_identity);
  read_string(j, "managed_identity_client_id", c.managed_identity_client_id);
  read_bool(j, "service_principal", c.service_principal);
  read_bool(j, "workload_identity", c.workload_identity);
  read_string(j, "imds_endpoint", c.imds_endpoint);
  read_string(j, "authority_host", c.authority_host);
  for (const auto& [key, url] : {std::pair{"imds_endpoint", c.imds_endpoint}, std::pair{"authority_host", c.authority_host}})
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
      bad(key, "must be an http:// or https:// URL, got '" + url + "'");
  if (j.contains("token_command")) {
    const auto& v = j["token_command"];
    if (!v.is_array() || v.empty()) bad("token_command", "must be a non-empty array of strings (an argv)");
    for (const auto& a : v) {
      if (!a.is_string()) bad("token_command", "must be a non-empty array of strings (an argv)");
      c.token_command.push_back(a.get<std::string>());
    }
  }
  read_positive_int(j, "auto_suspend_seconds", c.auto_suspend_seconds);
  read_positive_int(j, "auto_delete_seconds", c.auto_delete_seconds);
  read_positive_int(j, "exec_output_limit_bytes", c.exec_output_limit_bytes);
  read_positive_int(j, "http_workers", c.http_workers);
  read_positive_int(j, "max_clients_per_loop", c.max_clients_per_loop);
  read_positive(j, "read_timeout_seconds", c.read_timeout_seconds);
  read_positive(j, "probe_timeout_seconds", c.probe_timeout_seconds);
  read_positive(j, "request_timeout_seconds", c.request_timeout_seconds);
  read_positive(j, "create_timeout_seconds", c.create_timeout_seconds);
  read_positive(j, "delete_timeout_seconds", c.delete_timeout_seconds);
  read_positive(j, "poll_interval_seconds", c.poll_interval_seconds);
  read_positive(j, "retry_after_cap_seconds", c.retry_after_cap_seconds);
  read_positive(j, "client_wait_seconds", c.client_wait_seconds);
  read_positive(j, "client_close_seconds", c.client_close_seconds);
  return c;
}

}  // namespace maf::sandbox::acas
