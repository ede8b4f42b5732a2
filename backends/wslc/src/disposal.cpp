// Disposal by label, read back from `wslc container list` (wslc.md W-35…W-39). Never throws
// (except cancellation): every failure is returned. No `container stop`, ever (W-39).
#include <map>
#include <regex>

#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/wslc/backend.hpp"
#include "maf/sandbox/wslc/error_codes.hpp"

namespace maf::sandbox::wslc {

using boost::asio::awaitable;

namespace {

constexpr std::string_view kProxySuffix = "-proxy";

bool is_proxy_name(const std::string& name) {
  return name.size() > kProxySuffix.size() && name.compare(name.size() - kProxySuffix.size(), std::string::npos,
                                                           kProxySuffix) == 0;
}

/// Labels are not reported by `container list` (C-24), so only our own name shapes are
/// acted on: a workload or its proxy.
bool is_ours(const std::string& name) {
  static const std::regex shape("^maf-sandbox-wslc-[0-9a-f]{12}(-proxy)?$");
  return std::regex_match(name, shape);
}

bool same_instance(const std::string& listed_id, const std::string& wanted) {
  // The Docker shape lists 12-hex ids, the array shapes 64: a prefix either way is the same.
  if (listed_id.empty() || wanted.empty()) return false;
  return listed_id.rfind(wanted, 0) == 0 || wanted.rfind(listed_id, 0) == 0;
}

/// Workloads first, then proxies, each followed by its network (W-37). With a proxy image
/// configured every workload's proxy is visited too, listed or not: a proxy whose listing
/// was missed, or whose network outlived it, is still reached by name (removing an absent
/// proxy is "already gone", an absent network exit 0).
std::vector<std::string> removal_order(const std::set<std::string>& names, bool proxy_configured) {
  std::vector<std::string> ordered;
  std::set<std::string> proxies;
  for (const auto& n : names) {
    if (is_proxy_name(n)) {
      proxies.insert(n);
    } else {
      ordered.push_back(n);
      if (proxy_configured) proxies.insert(n + std::string(kProxySuffix));
    }
  }
  ordered.insert(ordered.end(), proxies.begin(), proxies.end());
  return ordered;
}

}  // namespace

awaitable<WslcSandboxBackend::Removal> WslcSandboxBackend::remove(const std::string& name) {
  // W-38: exit 0 counts; CONTAINER_NOT_FOUND is already gone; anything else is kept.
  try {
    auto args = remove_args(name);
    WslcOutcome r = co_await lifecycle(std::move(args));
    if (r.exit_code == 0) {
      forget(name);
      co_return Removal{true, std::nullopt};
    }
    if (find_symbol(r.stderr_bytes) == WslcSymbol::ContainerNotFound) {
      forget(name);
      co_return Removal{false, std::nullopt};
    }
    co_return Removal{false, DisposalFailure{kDisposalRefused, "container " + name + ": " + r.stderr_bytes}};
  } catch (const Error& e) {
    co_return Removal{false, DisposalFailure{kDisposalUnreachable, "container " + name + ": " + e.what()}};
  }
}

awaitable<void> WslcSandboxBackend::remove_network(const std::string& network,
                                                   std::vector<DisposalFailure>& failures) {
  // W-37: `--force` makes an absent network exit 0 in every locale (C-19).
  try {
    auto args = network_remove_args(network);
    WslcOutcome n = co_await lifecycle(std::move(args));
    if (n.exit_code != 0) failures.push_back({kDisposalRefused, "network " + network + ": " + n.stderr_bytes});
  } catch (const Error& e) {
    failures.push_back({kDisposalUnreachable, "network " + network + ": " + e.what()});
  }
}

awaitable<std::vector<DisposalFailure>> WslcSandboxBackend::remove_all(const std::vector<std::string>& names,
                                                                       int* removed,
                                                                       const std::optional<SandboxKey>& caller) {
  // OBS-7: whose decisions each proxy holds, read before the workloads go (removing a
  // workload forgets it). wslc reports no labels (C-24), so the key is the one this backend
  // wrote the proxy's W-11 labels from, else the disposal's own when its label filter pinned
  // every key label; otherwise the decisions go unattributed rather than guessed.
  std::map<std::string, std::optional<SandboxKey>> proxy_keys;
  for (const auto& name : names) {
    if (!is_proxy_name(name)) continue;
    auto known = remembered_key(name.substr(0, name.size() - kProxySuffix.size()));
    proxy_keys[name] = known ? known : caller;
  }
  std::vector<DisposalFailure> failures;
  for (const auto& name : names) {
    Removal r;
    if (is_proxy_name(name))
      r = co_await remove_proxy(name, proxy_keys[name]);
    else
      r = co_await remove(name);
    if (r.failure) failures.push_back(*r.failure);
    if (r.removed && removed && !is_proxy_name(name)) ++*removed;  // proxies are not counted
    // W-37: a listed proxy's network goes after it; `--force` makes absence exit 0.
    if (is_proxy_name(name) && !r.failure) {
      const std::string network = name.substr(0, name.size() - kProxySuffix.size()) + "-net";
      co_await remove_network(network, failures);
    }
  }
  co_return failures;
}

awaitable<std::optional<DisposalFailure>> WslcSandboxBackend::dispose(SandboxKey key, std::optional<std::string> kind,
                                                                      std::optional<std::string> instance_id) {
  std::vector<DisposalFailure> failures;
  std::set<std::string> names;
  bool listed = false;
  try {
    ListSelector selector{.all = true};
    for (auto& [label, value] : support::key_selector(key, kind)) selector.labels.emplace_back(label, value);
    for (const auto& entry : co_await list(selector))
      for (const auto& n : entry.names)
        if (is_ours(n) && (!instance_id || same_instance(entry.id, *instance_id) || is_proxy_name(n))) names.insert(n);
    listed = true;
  } catch (const Error& e) {
    failures.push_back({kDisposalUnlisted, std::string("listing by label failed: ") + e.what()});
  }
  if (!listed && !instance_id && !kind) {
    // W-19: the acquired names (acquired_) are a fallback only (and holds names whose removal failed). It
    // records names, not kinds, so a one-kind disposal does not use it: the failed listing
    // is reported instead of removing the key's other kinds.
    for (const auto& n : remembered(key, std::nullopt)) names.insert(n);
  }
  auto ordered = removal_order(names, config_.egress_proxy_image.has_value());
  // Every key label is in the filter only with a call id: without one, a CALL-scope sandbox
  // of the same agent is listed too (W-35), and its proxy is not the caller's.
  std::optional<SandboxKey> caller;
  if (!key.call_id.empty()) caller = key;
  auto more = co_await remove_all(ordered, nullptr, caller);
  failures.insert(failures.end(), more.begin(), more.end());
  co_return fold(failures);
}

awaitable<ScopePurge> WslcSandboxBackend::dispose_scope(std::string scope, std::string thread_id) {
  // By label, read back from wslc — never from process memory (W-36).
  ScopePurge purge;
  std::vector<DisposalFailure> failures;
  std::set<std::string> names;
  try {
    ListSelector selector{.all = true};
    for (auto& [label, value] : support::scope_selector(scope, thread_id)) selector.labels.emplace_back(label, value);
    for (const auto& entry : co_await list(selector))
      for (const auto& n : entry.names)
        if (is_ours(n)) names.insert(n);
  } catch (const Error& e) {
    failures.push_back({kDisposalUnlisted, std::string("listing by label failed: ") + e.what()});
    for (const auto& n : remembered(SandboxKey{scope, thread_id, {}, {}}, std::string("scope+thread")))
      names.insert(n);
  }
  auto ordered = removal_order(names, config_.egress_proxy_image.has_value());
  const std::optional<SandboxKey> no_caller;  // agent and call are not in the filter
  auto more = co_await remove_all(ordered, &purge.disposed, no_caller);
  failures.insert(failures.end(), more.begin(), more.end());
  purge.undisposed = fold(failures);
  co_return purge;
}

}  // namespace maf::sandbox::wslc
