#pragma once
/// @file egress_proxy/brokering.hpp
/// Brokered credentials as a backend that launches the proxy prepares them (docs/backends/
/// egress-proxy.md CRED-6…CRED-9; the process backend and wslc, issue 47): the placeholder a
/// guest holds, the proxy's non-secret `--credentials` text, and the values text that travels
/// by the backend's own channel (never the guest's). Header-only beside launch.hpp, so every
/// backend words the proxy's inputs the same way; only the channel differs per backend.

#include <array>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "maf/sandbox/spec.hpp"

namespace maf::sandbox::egress_proxy {

/// The proxy feature (`--features`, the image label) that brokering needs.
inline constexpr const char* kBrokerFeature = "brokered-credentials";

/// CRED-6: `maf-cred-<name>-<32 hex>` from the kernel's random source. Throws
/// std::runtime_error naming the credential when /dev/urandom cannot be read.
inline std::string new_placeholder(const std::string& credential) {
  std::array<unsigned char, 16> bytes{};
  std::ifstream random("/dev/urandom", std::ios::binary);
  if (!random.read(reinterpret_cast<char*>(bytes.data()), bytes.size()))
    throw std::runtime_error("cannot read /dev/urandom for the placeholder of credential '" + credential + "'");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "maf-cred-" + credential + "-";
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

/// The guest variables: each credential's `env` = its placeholder (spec order).
inline std::vector<std::pair<std::string, std::string>> placeholder_env(const SandboxSpec& spec,
                                                                       const std::vector<std::string>& placeholders) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < spec.attached_identity().size() && i < placeholders.size(); ++i)
    out.emplace_back(spec.attached_identity()[i].env(), placeholders[i]);
  return out;
}

/// The proxy's `--credentials` JSON: names, hosts, header, format, placeholder, allow_http —
/// never a value. Empty for a spec without credentials.
inline std::string credentials_json(const SandboxSpec& spec, const std::vector<std::string>& placeholders) {
  if (spec.attached_identity().empty()) return {};
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < spec.attached_identity().size(); ++i) {
    const auto& c = spec.attached_identity()[i];
    list.push_back({{"name", c.name()},
                    {"hosts", c.hosts()},
                    {"header", c.header()},
                    {"format", c.format()},
                    {"placeholder", i < placeholders.size() ? placeholders[i] : std::string()},
                    {"allow_http", c.allow_http()}});
  }
  return list.dump();
}

/// The names in a `--credentials` JSON text, in its order (to match values to them).
inline std::vector<std::string> credential_names(const std::string& credentials) {
  std::vector<std::string> out;
  if (credentials.empty()) return out;
  for (const auto& c : nlohmann::json::parse(credentials)) out.push_back(c.at("name").get<std::string>());
  return out;
}

/// How a sandbox's name folds one credential (C-55): a changed binding is another sandbox.
inline std::string credential_identity(const AttachedCredential& c) {
  std::string hosts;
  for (const auto& h : c.hosts()) hosts += (hosts.empty() ? "" : ",") + h;
  return "credential " + c.name() + " env=" + c.env() + " " + c.header() + ": " + c.format() + " hosts=" + hosts +
         (c.allow_http() ? " http" : "");
}

/// The values text the proxy reads from `--credential-values` (`{"name": "value"}`). The
/// caller wipes it once written to its channel.
inline std::string values_json(const std::vector<std::string>& names, const std::vector<SecretValue>& values) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) j[names[i]] = values[i].reveal();
  return j.dump();
}

}  // namespace maf::sandbox::egress_proxy
