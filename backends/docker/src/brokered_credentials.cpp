// Brokered credentials on Docker (brokered_credentials.hpp).
#include "brokered_credentials.hpp"

#include <algorithm>
#include <array>
#include <fstream>

#include <nlohmann/json.hpp>

#include "maf/sandbox/egress_proxy/brokering.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/tar.hpp"

namespace maf::sandbox::docker::detail {

std::string join_hosts(const std::vector<std::string>& hosts) {
  std::string out;
  for (const auto& h : hosts) out += (out.empty() ? "" : ",") + h;
  return out;
}

std::string new_placeholder(const std::string& credential) {
  try {
    return egress_proxy::new_placeholder(credential);  // shared with the process backend and wslc
  } catch (const std::runtime_error& e) {
    throw OSError(std::string("backend 'docker': ") + e.what());
  }
}

std::vector<std::string> placeholders_in_inspect(const SandboxSpec& spec, const std::string& inspect_json) {
  nlohmann::json env = nlohmann::json::array();
  try {
    env = nlohmann::json::parse(inspect_json).value("/Config/Env"_json_pointer, nlohmann::json::array());
  } catch (const nlohmann::json::exception&) {
  }
  std::vector<std::string> out;
  for (const auto& c : spec.attached_identity()) {
    const std::string prefix = c.env() + "=";
    std::string found;
    for (const auto& e : env)
      if (e.is_string() && e.get<std::string>().rfind(prefix, 0) == 0) found = e.get<std::string>().substr(prefix.size());
    if (found.rfind("maf-cred-", 0) != 0)
      throw OSError("backend 'docker': the running workload of kind '" + spec.kind() + "' holds no placeholder for "
                    "credential '" + c.name() + "' in " + c.env() + "; dispose it to create it again");
    out.push_back(found);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> credential_env(const SandboxSpec& spec,
                                                                const std::vector<std::string>& placeholders) {
  return egress_proxy::placeholder_env(spec, placeholders);
}

std::string proxy_credentials_json(const SandboxSpec& spec, const std::vector<std::string>& placeholders) {
  return egress_proxy::credentials_json(spec, placeholders);
}

std::vector<std::string> proxy_credential_args(const SandboxSpec& spec) {
  if (spec.attached_identity().empty()) return {};
  return {"--credential-values", kCredentialValuesPath};
}

std::string credential_values_tar(const SandboxSpec& spec, const Brokering& brokering) {
  nlohmann::json values = nlohmann::json::object();
  for (std::size_t i = 0; i < spec.attached_identity().size() && i < brokering.values.size(); ++i)
    values[spec.attached_identity()[i].name()] = brokering.values[i].reveal();
  std::string text = values.dump();
  support::TarWriter tar;
  tar.add_directory("run", {.mode = 0755, .uid = 0, .gid = 0});
  tar.add_directory("run/maf-credentials", {.mode = 0700, .uid = kProxyUid, .gid = kProxyUid});
  tar.add_file(std::string(kCredentialValuesPath).substr(1), text, {.mode = 0400, .uid = kProxyUid, .gid = kProxyUid});
  std::fill(text.begin(), text.end(), '\0');
  return std::move(tar).finish();
}

bool labels_list_feature(const std::string& labels_json, std::string_view feature) {
  try {
    const auto j = nlohmann::json::parse(labels_json);
    if (!j.is_object()) return false;
    const std::string features = j.value("org.maf-sandbox.egress-proxy.features", "");
    std::size_t start = 0;
    while (start <= features.size()) {
      const auto comma = std::min(features.find(',', start), features.size());
      if (std::string_view(features).substr(start, comma - start) == feature) return true;
      start = comma + 1;
    }
  } catch (const nlohmann::json::exception&) {
  }
  return false;
}

}  // namespace maf::sandbox::docker::detail
