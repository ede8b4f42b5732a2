#include "maf/sandbox/support/labels.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::support {
namespace {

constexpr std::size_t kLabelValueMax = 63;
constexpr std::size_t kLabelDigestHex = 48;
constexpr std::size_t kNameDigestHex = 12;
// "-proxy" is the longest derived suffix; Docker names are at most 63 characters here.
constexpr std::size_t kPrefixMax = 63 - kNameDigestHex - 6;
constexpr std::string_view kDigestTag = "sha256-";

bool is_label_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

bool is_lower_hex(unsigned char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool is_digest_shaped(std::string_view v) {
  if (v.size() != kDigestTag.size() + kLabelDigestHex || v.substr(0, kDigestTag.size()) != kDigestTag) return false;
  return std::all_of(v.begin() + kDigestTag.size(), v.end(), [](char c) { return is_lower_hex(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw RuntimeError("sha256: OpenSSL EVP_Digest failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::string length_prefixed(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    out += std::to_string(p.size());
    out += ':';
    out += p;
  }
  return out;
}

bool is_valid_label_key(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) { return is_label_char(static_cast<unsigned char>(c)); });
}

std::string label_value(std::string_view raw) {
  if (raw.size() <= kLabelValueMax && is_valid_label_key(raw) && !is_digest_shaped(raw)) return std::string(raw);
  return std::string(kDigestTag) + sha256_hex(raw).substr(0, kLabelDigestHex);
}

std::string sandbox_name(std::string_view prefix, const SandboxKey& key, std::string_view kind,
                         const NameQualifiers& qualifiers) {
  const bool prefix_ok = !prefix.empty() && prefix.size() <= kPrefixMax && is_valid_label_key(prefix) &&
                         std::isalnum(static_cast<unsigned char>(prefix.front()));
  if (!prefix_ok)
    throw ValueError("sandbox_name: prefix '" + std::string(prefix) + "' must be 1-" + std::to_string(kPrefixMax) +
                     " bytes of [A-Za-z0-9_.-] starting alphanumeric");
  std::vector<std::string> parts{key.scope, key.thread_id, key.agent_id, std::string(kind)};
  if (!qualifiers.egress_allow.empty()) {
    auto hosts = qualifiers.egress_allow;
    std::sort(hosts.begin(), hosts.end());  // char_traits<char> compares as unsigned: code point order
    std::string joined = "allow:";
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      if (i) joined += ',';
      joined += hosts[i];
    }
    parts.push_back(std::move(joined));
  }
  if (!key.call_id.empty()) parts.push_back("call:" + key.call_id);
  if (!qualifiers.work_base.empty()) parts.push_back("base:" + qualifiers.work_base);
  if (!qualifiers.resources.empty()) parts.push_back("resources:" + qualifiers.resources);
  return std::string(prefix) + sha256_hex(length_prefixed(parts)).substr(0, kNameDigestHex);
}

std::map<std::string, std::string> sandbox_labels(const SandboxKey& key, std::string_view kind,
                                                  const std::map<std::string, std::string>& spec_labels) {
  std::map<std::string, std::string> out;
  for (auto& [label, value] : key_selector(key, kind)) out.emplace(std::move(label), std::move(value));
  for (const auto& [k, v] : spec_labels) {
    if (!is_valid_label_key(k))
      throw ValueError("spec label key '" + k + "' for kind '" + std::string(kind) +
                       "' is not [A-Za-z0-9._-]+");
    out.emplace(std::string(kLabelUserPrefix) + k, label_value(v));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> key_selector(const SandboxKey& key,
                                                              std::optional<std::string_view> kind) {
  std::vector<std::pair<std::string, std::string>> out{
      {std::string(kLabelScope), label_value(key.scope)},
      {std::string(kLabelThread), label_value(key.thread_id)},
      {std::string(kLabelAgent), label_value(key.agent_id)},
  };
  if (kind) out.emplace_back(std::string(kLabelKind), label_value(*kind));
  if (!key.call_id.empty()) out.emplace_back(std::string(kLabelCall), label_value(key.call_id));
  return out;
}

std::vector<std::pair<std::string, std::string>> scope_selector(std::string_view scope, std::string_view thread_id) {
  return {{std::string(kLabelScope), label_value(scope)}, {std::string(kLabelThread), label_value(thread_id)}};
}

std::string label_argument(std::string_view label, std::string_view value) {
  std::string out(label);
  out += '=';
  out += value;
  return out;
}

}  // namespace maf::sandbox::support
