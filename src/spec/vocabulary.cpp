// Out-of-line parts of the vocabulary headers: messages, hashing, egress rules, folding.
#include <algorithm>
#include <functional>

#include "maf/sandbox/caller_context.hpp"
#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/egress_path.hpp"
#include "maf/sandbox/isolation.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/limits.hpp"
#include "maf/sandbox/snapshot.hpp"

namespace maf::sandbox {

std::string isolation_ladder_text() {
  std::string out;
  for (const auto& [rung, text] : EnumTraits<Isolation>::values) {
    if (!out.empty()) out += " < ";
    out += text;
  }
  return out;
}

std::string snapshot_fidelity_ladder_text() {
  std::string out;
  for (const auto& [rung, text] : EnumTraits<SnapshotFidelity>::values) {
    if (!out.empty()) out += " < ";
    out += text;
  }
  return out;
}

std::size_t SandboxKeyHash::operator()(const SandboxKey& key) const noexcept {
  std::size_t h = 0;
  for (const std::string* part : {&key.scope, &key.thread_id, &key.agent_id, &key.call_id})
    h = h * 1000003u ^ (std::hash<std::string>{}(*part) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  return h;
}

std::string to_string(const SandboxKey& key) {
  std::string out = key.scope + "/" + key.thread_id + "/" + key.agent_id;
  if (!key.call_id.empty()) out += "/" + key.call_id;
  return out;
}

SandboxKey key_for_call(const CallerContext& context, std::string agent_id, std::string call_id) {
  if (!context.current_scope || !context.current_thread_id)
    throw ValueError("CallerContext is incomplete: current_scope and current_thread_id are required");
  std::string scope = context.current_scope();
  std::optional<std::string> thread = context.current_thread_id();
  if (!thread)
    throw ValueError("no conversation is bound to this call (current_thread_id returned nothing); "
                     "refusing rather than synthesising a placeholder key");
  return SandboxKey{std::move(scope), std::move(*thread), std::move(agent_id), std::move(call_id)};
}

std::string to_string(const TransferLimits& limits) {
  return "max_bytes_per_file=" + std::to_string(limits.max_bytes_per_file()) +
         ", max_total_bytes=" + std::to_string(limits.max_total_bytes()) +
         ", max_files=" + std::to_string(limits.max_files());
}

// ---- egress rules -----------------------------------------------------------------------

bool is_http_token(std::string_view text) noexcept {
  if (text.empty()) return false;
  for (unsigned char c : text) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool special = std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    if (!alnum && !special) return false;
  }
  return true;
}

EgressRule::EgressRule(std::string host, std::optional<std::vector<std::string>> methods,
                       std::optional<std::vector<std::string>> paths)
    : host_(std::move(host)), methods_(std::move(methods)), paths_(std::move(paths)) {
  if (methods_) {
    if (methods_->empty())
      throw ValueError("EgressRule for host '" + host_ +
                       "': methods must not be empty (omit it to allow every method)");
    for (std::size_t i = 0; i < methods_->size(); ++i) {
      const std::string& m = (*methods_)[i];
      if (!is_http_token(m))
        throw ValueError("EgressRule for host '" + host_ + "': method '" + m + "' is not an RFC 9110 token");
      for (std::size_t j = 0; j < i; ++j)
        if ((*methods_)[j] == m)
          throw ValueError("EgressRule for host '" + host_ + "': method '" + m + "' is listed twice");
    }
  }
  if (paths_) {
    if (paths_->empty())
      throw ValueError("EgressRule for host '" + host_ + "': paths must not be empty (omit it to allow every path)");
    for (std::size_t i = 0; i < paths_->size(); ++i) {
      const std::string& p = (*paths_)[i];
      if (auto problem = egress_path_pattern_problem(p))
        throw ValueError("EgressRule for host '" + host_ + "': path '" + p +
                         "' is not a path pattern (/exact, /prefix/ or /prefix*): " + *problem);
      for (std::size_t j = 0; j < i; ++j)
        if ((*paths_)[j] == p)
          throw ValueError("EgressRule for host '" + host_ + "': path '" + p + "' is listed twice");
    }
  }
}

const std::string& egress_entry_host(const EgressEntry& entry) noexcept {
  if (const auto* host = std::get_if<std::string>(&entry)) return *host;
  return std::get<EgressRule>(entry).host();
}

namespace {
std::string ascii_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
  return out;
}
std::optional<std::vector<std::string>> sorted_set(const std::optional<std::vector<std::string>>& list) {
  if (!list) return std::nullopt;
  auto sorted = *list;
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}
/// What an entry allows of one host, as comparable sets: (methods, paths), absent = all.
std::pair<std::optional<std::vector<std::string>>, std::optional<std::vector<std::string>>> rule_sets(
    const EgressEntry& e) {
  const auto* rule = std::get_if<EgressRule>(&e);
  if (!rule) return {};
  return {sorted_set(rule->methods()), sorted_set(rule->paths())};
}
}  // namespace

std::vector<EgressEntry> canonicalize_egress_allow(std::vector<EgressEntry> entries) {
  std::vector<EgressEntry> out;
  std::vector<std::string> keys;  // lowercased host of each kept entry
  for (auto& entry : entries) {
    // A rule narrowing nothing is the bare host.
    if (auto* rule = std::get_if<EgressRule>(&entry); rule && !rule->narrows())
      entry = std::string(rule->host());
    const std::string key = ascii_lower(egress_entry_host(entry));
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      out.push_back(std::move(entry));
      continue;
    }
    const EgressEntry& kept = out[static_cast<std::size_t>(it - keys.begin())];
    const auto a = rule_sets(kept);
    const auto b = rule_sets(entry);
    if (a == b) continue;  // equivalent: first spelling wins
    const std::string named = "'" + egress_entry_host(kept) + "'" +
                              (egress_entry_host(kept) == egress_entry_host(entry)
                                   ? std::string()
                                   : " (also spelled '" + egress_entry_host(entry) + "')");
    const bool a_whole = !std::holds_alternative<EgressRule>(kept), b_whole = !std::holds_alternative<EgressRule>(entry);
    if (a_whole || b_whole)
      throw ValueError("egress_allow lists host " + named +
                       " both for every method and narrowed to some methods or paths; choose one");
    throw ValueError("egress_allow lists host " + named +
                     " with two different method sets or path sets; merge them into one rule");
  }
  return out;
}

// ---- disposal ---------------------------------------------------------------------------

std::optional<DisposalFailure> fold(const std::vector<DisposalFailure>& failures) {
  static constexpr const char* precedence[] = {kDisposalUnreachable, kDisposalTimeout, kDisposalRefused,
                                              kDisposalUnlisted, kDisposalUnknown};
  auto rank = [](const std::string& code) {
    for (int i = 0; i < 5; ++i)
      if (code == precedence[i]) return i;
    return 4;
  };
  if (failures.empty()) return std::nullopt;
  if (failures.size() == 1) {
    DisposalFailure one = failures.front();
    one.code = precedence[rank(one.code)];
    return one;
  }
  int best = 4;
  std::string details;
  for (const auto& f : failures) {
    best = std::min(best, rank(f.code));
    if (!details.empty()) details += "; ";
    details += f.detail;
  }
  return DisposalFailure{precedence[best], details};
}

}  // namespace maf::sandbox
