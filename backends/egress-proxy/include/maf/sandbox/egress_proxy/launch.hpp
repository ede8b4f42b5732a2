#pragma once
/// @file egress_proxy/launch.hpp
/// The egress proxy's contract as a backend that launches it sees it (docs/backends/egress-proxy.md
/// "Launching it"): what goes in (the environment variables naming allowed hosts, method/path
/// rules and the upstream trust store), what comes out (the readiness line, with the
/// per-sandbox CA certificate when the proxy terminates TLS), and what the guest is given
/// (the proxy variables and the CA's paths). The readiness line's CA is read by
/// support::ca_certificate_in_readiness (support/proxy_log.hpp, fuzzed with the decision log). Header-only and shared by every backend that runs
/// the proxy (Docker, wslc, process), so their topologies differ only in how the proxy is
/// reached, never in what it is told or what the guest trusts.

#include <algorithm>
#include <array>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/support/tar.hpp"

namespace maf::sandbox::egress_proxy {

/// The hosts allowed whole, comma-separated (options.cpp reads it).
inline constexpr const char* kAllowVariable = "MAF_SANDBOX_ALLOW";
/// The method/path rules as JSON `[{"host","methods","paths"}]` (l7_rules.cpp reads it).
inline constexpr const char* kRulesVariable = "MAF_SANDBOX_RULES";
/// The PEM trust store a terminated host's upstream is verified against; unset = the bundle
/// baked into the proxy image.
inline constexpr const char* kUpstreamCaVariable = "MAF_SANDBOX_UPSTREAM_CA_PEM";
/// The image label scripts/egress-proxy-image writes from the proxy's `--features`, and the
/// feature a method/path rule needs (issue 45).
inline constexpr const char* kFeaturesLabel = "org.maf-sandbox.egress-proxy.features";
inline constexpr const char* kTerminationFeature = "tls-termination";
/// Where the per-sandbox CA lands in the guest: the CA alone, and the guest's own bundle with
/// the CA appended (issue 45 item 2).
inline constexpr const char* kGuestCaFile = "/etc/maf-sandbox/egress-ca.pem";
inline constexpr const char* kGuestCaBundle = "/etc/maf-sandbox/egress-ca-bundle.pem";
/// The guest bundles kGuestCaBundle starts from, first regular file wins: Debian's, Fedora's,
/// Alpine's.
inline constexpr std::array<const char*, 3> kGuestBundleSources{
    "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"};

/// True when the spec holds a method or path rule (EgressRule, C-9/C-10): the proxy must then
/// terminate TLS for that host, and the backend must declare egress_methods/egress_paths.
inline bool spec_has_rules(const SandboxSpec& spec) {
  for (const auto& entry : spec.egress_allow())
    if (std::holds_alternative<EgressRule>(entry)) return true;
  return false;
}

/// kAllowVariable's value: the hosts allowed whole (a rule's host reaches the proxy through
/// kRulesVariable instead).
inline std::string whole_hosts(const SandboxSpec& spec) {
  std::string out;
  for (const auto& entry : spec.egress_allow())
    if (const auto* host = std::get_if<std::string>(&entry)) out += (out.empty() ? "" : ",") + *host;
  return out;
}

/// kRulesVariable's value: the spec's rules as `[{"host","methods","paths"}]`.
inline std::string rules_json(const SandboxSpec& spec) {
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& entry : spec.egress_allow())
    if (const auto* rule = std::get_if<EgressRule>(&entry)) {
      nlohmann::json r = {{"host", rule->host()}};
      if (rule->methods()) r["methods"] = *rule->methods();
      if (rule->paths()) r["paths"] = *rule->paths();
      rules.push_back(std::move(r));
    }
  return rules.dump();
}

/// kUpstreamCaVariable's value: the operator's trust-store file (PEM), or nullopt when it
/// cannot be read or holds no certificate (the backend refuses the acquire, naming it).
inline std::optional<std::string> upstream_ca_pem(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().find("-----BEGIN CERTIFICATE-----") == std::string::npos) return std::nullopt;
  return text.str();
}

/// An entry as a sandbox's name folds it (C-55): the host, and a rule's methods and paths
/// (each sorted), so a changed rule is another sandbox.
inline std::string entry_identity(const EgressEntry& entry) {
  const auto* rule = std::get_if<EgressRule>(&entry);
  if (!rule) return std::get<std::string>(entry);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
    return out;
  };
  std::string out = rule->host();
  if (rule->methods()) out += " methods=" + sorted(*rule->methods());
  if (rule->paths()) out += " paths=" + sorted(*rule->paths());
  return out;
}

/// The guest's environment behind the proxy at `proxy_url`: HTTP_PROXY, HTTPS_PROXY and their
/// lowercase twins (curl reads only the lowercase http_proxy); with `terminating`, also
/// SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and GIT_SSL_CAINFO (the guest's bundle
/// plus the sandbox CA) and NODE_EXTRA_CA_CERTS (the CA alone: Node adds it to its own roots).
inline std::vector<std::pair<std::string, std::string>> guest_proxy_env(const std::string& proxy_url,
                                                                        bool terminating) {
  std::vector<std::pair<std::string, std::string>> env{
      {"HTTP_PROXY", proxy_url}, {"HTTPS_PROXY", proxy_url}, {"http_proxy", proxy_url}, {"https_proxy", proxy_url}};
  if (!terminating) return env;
  for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"})
    env.emplace_back(name, kGuestCaBundle);
  env.emplace_back("NODE_EXTRA_CA_CERTS", kGuestCaFile);
  return env;
}

/// The tar (extracted at `/`) that puts the sandbox CA in the guest: kGuestCaFile, and
/// kGuestCaBundle = `guest_bundle_text` (the guest's own bundle, the first regular file of
/// kGuestBundleSources; empty when it has none) newline-terminated, then the CA — so hosts
/// allowed whole still verify for clients that read SSL_CERT_FILE. Root-owned, mode 0644.
/// Every acquire writes it again: each proxy makes its CA when it starts.
inline std::string guest_ca_tar(std::string guest_bundle_text, const std::string& ca_pem) {
  if (!guest_bundle_text.empty() && guest_bundle_text.back() != '\n') guest_bundle_text += '\n';
  support::TarWriter tar;
  const support::TarEntryMeta dir{.mode = 0755, .uid = 0, .gid = 0};
  const support::TarEntryMeta file{.mode = 0644, .uid = 0, .gid = 0};
  tar.add_directory("etc", dir);
  tar.add_directory("etc/maf-sandbox", dir);
  tar.add_file(std::string(kGuestCaFile).substr(1), ca_pem, file);
  tar.add_file(std::string(kGuestCaBundle).substr(1), guest_bundle_text + ca_pem, file);
  return std::move(tar).finish();
}

}  // namespace maf::sandbox::egress_proxy
