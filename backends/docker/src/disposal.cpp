// Disposal by label read back from the engine, and the operator's age-based reap
// (D-26…D-28; docs/backends/docker.md "Disposal, in order"). Teardown never throws except on cancellation: failures are reported.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <exception>
#include <functional>
#include <mutex>
#include <regex>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/async_mutex.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "memory.hpp"
#include "proxy_drain.hpp"
#include "teardown.hpp"

namespace maf::sandbox::docker {

using boost::asio::awaitable;

namespace {

bool is_hex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::vector<std::string> filters(const std::vector<std::pair<std::string, std::string>>& selector) {
  std::vector<std::string> out;
  for (const auto& [label, value] : selector) out.push_back(support::label_argument(label, value));
  return out;
}

bool is_proxy(const LabelledResource& r) {
  auto it = r.labels.find(std::string(support::kLabelRole));
  return it != r.labels.end() && it->second == "proxy";
}

/// RFC 3339 with its timezone honoured; fractional seconds accepted and truncated.
std::optional<std::int64_t> parse_rfc3339(const std::string& text) {
  int y, mo, d, h, mi, s;
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &consumed) != 6)
    return std::nullopt;
  std::size_t i = static_cast<std::size_t>(consumed);
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t digits = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    if (i == digits) return std::nullopt;
  }
  long offset = 0;
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    int oh, om, n = 0;
    if (std::sscanf(text.c_str() + i + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5) return std::nullopt;
    offset = (text[i] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != text.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<std::int64_t>(timegm(&tm)) - offset;
}

std::int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// The `maf-sandbox.ttl_seconds` label's whole seconds; absent (or not a positive number: a
/// label nobody here wrote) when the workload was created without a lifetime bound.
std::optional<std::int64_t> ttl_label(const std::map<std::string, std::string>& labels) {
  auto it = labels.find(std::string(support::kLabelTtl));
  if (it == labels.end() || it->second.empty() || it->second.size() > 12 ||
      !std::all_of(it->second.begin(), it->second.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const std::int64_t seconds = std::stoll(it->second);
  return seconds > 0 ? std::optional(seconds) : std::nullopt;
}

/// Runs every task at once and returns when all have ended, rethrowing the first exception
/// (teardown reports its failures as values, so that is cancellation). The tasks share one
/// strand: their engine calls overlap, their code never runs on two threads at once, so an
/// egress observer is never called concurrently by one purge.
awaitable<void> run_together(std::vector<std::function<awaitable<void>()>>& tasks) {
  if (tasks.empty()) co_return;
  auto strand = boost::asio::make_strand(co_await boost::asio::this_coro::executor);
  support::AsyncMutex all_ended;  // held until the last task ends: a latch
  co_await all_ended.lock();
  std::atomic<std::size_t> running{tasks.size()};
  std::mutex first_mutex;
  std::exception_ptr first;
  for (auto& task : tasks)
    boost::asio::co_spawn(strand, task(), [&](std::exception_ptr e) {
      if (e) {
        std::lock_guard lock(first_mutex);
        if (!first) first = e;
      }
      if (--running == 0) all_ended.unlock();
    });
  co_await all_ended.lock();
  all_ended.unlock();
  if (first) std::rethrow_exception(first);
}

}  // namespace

namespace detail {

awaitable<std::optional<DisposalFailure>> teardown_workload(DockerTransport& transport, const DockerConfig& config,
                                                           std::string container, std::optional<SandboxKey> caller,
                                                           bool* removed) {
  // Order (D-27): the proxy drained and removed, then the workload, then the network.
  try {
    std::string proxy_name = container + "-proxy";
    auto proxy = co_await drain_and_remove_proxy(transport, config, std::move(proxy_name), std::move(caller));
    if (proxy.outcome == RemoveOutcome::Refused)
      co_return DisposalFailure{kDisposalRefused, "proxy " + container + "-proxy: " + proxy.detail};
    auto workload = co_await transport.remove_container(container);
    if (workload.outcome == RemoveOutcome::Refused)
      co_return DisposalFailure{kDisposalRefused, "container " + container + ": " + workload.detail};
    if (removed) *removed = workload.outcome == RemoveOutcome::Removed;
    std::string network_name = container + "-net";
    auto network = co_await transport.remove_network(std::move(network_name));
    if (network.outcome == RemoveOutcome::Refused)
      logger()->warn("backend 'docker': network {}-net remains: {}", container, network.detail);
  } catch (const Error& e) {
    co_return DisposalFailure{kDisposalUnreachable, "container " + container + ": " + e.what()};
  }
  co_return std::nullopt;
}

}  // namespace detail

awaitable<std::optional<DisposalFailure>> DockerSandboxBackend::remove_workload(std::string container,
                                                                               std::optional<SandboxKey> caller,
                                                                               bool* removed) {
  // Made, then awaited: no by-value temporaries inside the co_await (GCC 12).
  const std::string name = container;
  auto teardown = detail::teardown_workload(*transport_, config_, std::move(container), std::move(caller), removed);
  std::optional<DisposalFailure> failure = co_await std::move(teardown);
  if (!failure) memory_->forget(name);  // gone (or absent): its facts go with it
  co_return failure;
}

awaitable<std::optional<DisposalFailure>> DockerSandboxBackend::dispose(SandboxKey key, std::optional<std::string> kind,
                                                                        std::optional<std::string> instance_id) {
  if (instance_id) {
    if (!is_hex64(*instance_id))
      co_return DisposalFailure{kDisposalRefused, "backend 'docker': instance_id must be a full 64-hex container ID, got '" +
                                                      *instance_id + "'; nothing removed"};
    std::optional<std::string> doc;
    try {
      doc = co_await transport_->inspect_container(*instance_id);
    } catch (const Error& e) {
      co_return DisposalFailure{kDisposalUnreachable, e.what()};
    }
    if (!doc) co_return std::nullopt;  // already gone
    std::map<std::string, std::string> labels;
    std::string name;
    try {
      LabelledResource inspected = detail::inspected_container(*doc);
      name = std::move(inspected.name);
      labels = std::move(inspected.labels);
    } catch (const nlohmann::json::exception& e) {
      co_return DisposalFailure{kDisposalUnknown, std::string("unreadable inspect answer: ") + e.what()};
    }
    // A foreign owner's container is not ours to remove: report nothing, remove nothing.
    for (const auto& [label, value] : support::key_selector(key, kind))
      if (labels[label] != value) co_return std::nullopt;
    try {
      // The proxy goes first, as in every teardown (D-27).
      if (!name.empty()) {
        std::string proxy_name = name + "-proxy";
        std::optional<SandboxKey> caller = key;
        auto proxy =
            co_await detail::drain_and_remove_proxy(*transport_, config_, std::move(proxy_name), std::move(caller));
        if (proxy.outcome == RemoveOutcome::Refused)
          co_return DisposalFailure{kDisposalRefused, "proxy " + name + "-proxy: " + proxy.detail};
      }
      auto removed = co_await transport_->remove_container(*instance_id);
      if (removed.outcome == RemoveOutcome::Refused)
        co_return DisposalFailure{kDisposalRefused, "container " + *instance_id + ": " + removed.detail};
      if (!name.empty()) co_await transport_->remove_network(name + "-net");
    } catch (const Error& e) {
      co_return DisposalFailure{kDisposalUnreachable, e.what()};
    }
    co_return std::nullopt;
  }

  std::vector<DisposalFailure> failures;
  std::set<std::string> names;
  try {
    for (const auto& r : co_await transport_->list_containers(filters(support::key_selector(key, kind)), std::nullopt))
      if (!is_proxy(r)) names.insert(r.name);
  } catch (const Error& e) {
    failures.push_back({kDisposalUnlisted, std::string("listing by label failed: ") + e.what()});
  }
  // The in-process registry is only a fallback for a failed listing; its entries are
  // dropped either way.
  const std::string exact = kind ? container_name(key, *kind) : std::string();
  for (auto& name : memory_->remembered(key, /*forget=*/!kind))
    if (!kind || name == exact) names.insert(name);
  for (const auto& name : names) {
    std::optional<SandboxKey> caller = key;
    if (auto failure = co_await remove_workload(name, std::move(caller))) failures.push_back(*failure);
  }
  co_return fold(failures);
}

awaitable<ScopePurge> DockerSandboxBackend::dispose_scope(std::string scope, std::string thread_id) {
  // By label, read back from the engine — never from process memory (D-26).
  ScopePurge purge;
  std::vector<LabelledResource> workloads;
  try {
    workloads = co_await transport_->list_containers(filters(support::scope_selector(scope, thread_id)), std::nullopt);
  } catch (const Error& e) {
    purge.undisposed = DisposalFailure{kDisposalUnlisted, std::string("listing by label failed: ") + e.what()};
    co_return purge;
  }
  // [port decision] (issue 24) The sandboxes are torn down at once: each keeps D-27's order
  // (proxy, workload, network), and nothing orders one sandbox's teardown against
  // another's. Removals cost the engine ~50 ms each, so three in a row were most of a purge.
  // A listed workload counts as disposed when this purge's removal is the one that removed
  // it: one that vanished since the listing (another disposer) is the engine's "absent".
  // (Until issue 24 an inspect before each removal asked the same; the removal's own
  // answer says it without that call.)
  struct Outcome {
    std::optional<DisposalFailure> failure;
    bool removed = false;
  };
  std::vector<Outcome> outcomes(workloads.size());
  std::vector<std::function<awaitable<void>()>> tasks;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (is_proxy(workloads[i])) continue;  // proxies are removed with their workload and not counted
    tasks.push_back([this, &outcomes, &workloads, i]() -> awaitable<void> {
      std::string workload = workloads[i].name;  // named: no temporaries inside co_await (GCC 12)
      std::optional<SandboxKey> no_caller;       // dispose_scope has no key to stand in (D-8)
      outcomes[i].failure = co_await remove_workload(std::move(workload), std::move(no_caller), &outcomes[i].removed);
    });
  }
  co_await run_together(tasks);
  std::vector<DisposalFailure> failures;
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    if (is_proxy(workloads[i])) continue;
    if (outcomes[i].failure)
      failures.push_back(*outcomes[i].failure);
    else if (outcomes[i].removed)
      ++purge.disposed;
  }
  purge.undisposed = fold(failures);
  co_return purge;
}

awaitable<ScopePurge> DockerSandboxBackend::reap(std::chrono::seconds older_than, std::optional<std::string> scope) {
  DockerReapResult r = co_await reap_detailed(older_than, std::move(scope));
  co_return ScopePurge{r.disposed, fold(r.failures)};
}

awaitable<DockerReapResult> DockerSandboxBackend::reap_detailed(std::chrono::seconds older_than,
                                                                std::optional<std::string> scope) {
  if (older_than.count() <= 0)
    throw ValueError("backend 'docker': reap older_than must be positive, got " + std::to_string(older_than.count()) +
                     " s");
  const std::int64_t cutoff = now_unix() - older_than.count();  // strict `<` (D-28)
  co_return co_await reap_where(std::move(scope), [cutoff](std::int64_t created, const LabelledResource*) {
    return created < cutoff;
  });
}

awaitable<ScopePurge> DockerSandboxBackend::reap_expired(std::optional<std::string> scope) {
  // LIM-7: judged by the workload alone (its label and Created); a proxy or network left
  // without one is the age-based reap's, not this one's.
  const std::int64_t now = now_unix();
  DockerReapResult r = co_await reap_where(std::move(scope), [now](std::int64_t created, const LabelledResource* workload) {
    if (!workload) return false;
    const auto ttl = ttl_label(workload->labels);
    return ttl && now >= created + *ttl;
  });
  co_return ScopePurge{r.disposed, fold(r.failures)};
}

awaitable<bool> DockerSandboxBackend::past_ttl(const std::string& container) {
  auto text = co_await transport_->inspect_container(container);
  if (!text) co_return false;  // gone meanwhile: the acquire creates it
  const auto doc = nlohmann::json::parse(*text, nullptr, false);
  std::map<std::string, std::string> labels;
  std::optional<std::int64_t> created;
  if (doc.is_object()) {
    if (auto c = doc.find("Created"); c != doc.end() && c->is_string()) created = parse_rfc3339(c->get<std::string>());
    const auto config = doc.find("Config");
    if (config != doc.end() && config->is_object())
      if (auto l = config->find("Labels"); l != config->end() && l->is_object())
        for (const auto& [k, v] : l->items())
          if (v.is_string()) labels[k] = v.get<std::string>();
  }
  const auto ttl = ttl_label(labels);
  if (!ttl) co_return false;  // created without a lifetime bound (by a configuration that set none)
  // An unreadable creation time cannot be judged young: the bound is not kept, so refuse.
  if (!created)
    throw OSError("backend 'docker': container " + container +
                  " carries a ttl but the engine's creation time of it is unreadable; not handing it out");
  co_return now_unix() >= *created + *ttl;
}

awaitable<DockerReapResult> DockerSandboxBackend::reap_where(
    std::optional<std::string> scope, std::function<bool(std::int64_t, const LabelledResource*)> decide) {
  DockerReapResult result;

  // 1. Inventory: all four identity labels, the scope narrowed by label_value.
  std::vector<std::string> label_filters{
      scope ? support::label_argument(support::kLabelScope, support::label_value(*scope))
            : std::string(support::kLabelScope),
      std::string(support::kLabelThread), std::string(support::kLabelAgent), std::string(support::kLabelKind)};
  std::vector<LabelledResource> containers, networks;
  try {
    containers = co_await transport_->list_containers(label_filters, "^" + std::string(kContainerPrefix));
    networks = co_await transport_->list_networks(label_filters);
  } catch (const Error& e) {
    result.failures.push_back({kDisposalUnlisted, std::string("reap inventory failed: ") + e.what()});
    co_return result;
  }

  // 2. Qualify and group by base name.
  static const std::regex name_shape("^maf-sandbox-docker-[0-9a-f]{12}(-proxy|-net)?$");
  struct Group {
    std::optional<LabelledResource> workload, proxy, network;
    std::int64_t created_workload = 0, created_proxy = 0, created_network = 0;
  };
  std::map<std::string, Group> groups;
  auto qualify = [&](const LabelledResource& r, bool is_network) -> bool {
    std::smatch m;
    if (!std::regex_match(r.name, m, name_shape)) return false;  // foreign look-alikes
    const std::string suffix = m[1].str();
    if (is_network != (suffix == "-net")) return false;
    for (auto label : {support::kLabelScope, support::kLabelThread, support::kLabelAgent, support::kLabelKind})
      if (!r.labels.contains(std::string(label))) return false;
    if (scope && r.labels.at(std::string(support::kLabelScope)) != support::label_value(*scope)) return false;
    if ((suffix == "-proxy") != is_proxy(r)) return false;
    return true;
  };
  for (bool is_network : std::array{false, true}) {  // not a braced list: GCC 12 coroutine bug
    for (const auto& r : is_network ? networks : containers) {
      if (!qualify(r, is_network)) continue;
      auto created = parse_rfc3339(r.created);
      if (!created || !is_hex64(r.id)) {
        result.failures.push_back({kDisposalUnlisted, "unreadable metadata of " + r.name + " (Id '" + r.id +
                                                          "', Created '" + r.created + "'); nothing removed"});
        co_return result;
      }
      const std::string base = r.name.substr(0, std::string(kContainerPrefix).size() + 12);
      Group& g = groups[base];
      if (is_network) {
        g.network = r;
        g.created_network = *created;
      } else if (is_proxy(r)) {
        g.proxy = r;
        g.created_proxy = *created;
      } else {
        g.workload = r;
        g.created_workload = *created;
      }
    }
  }

  // 3. Decide, then re-validate every deciding resource by ID before any deletion.
  std::vector<Group*> expired;
  for (auto& [base, g] : groups) {
    const std::int64_t created = g.workload ? g.created_workload : g.proxy ? g.created_proxy : g.created_network;
    if (decide(created, g.workload ? &*g.workload : nullptr)) expired.push_back(&g);
  }
  std::vector<Group*> confirmed;
  try {
    for (Group* g : expired) {
      bool present;
      if (g->workload || g->proxy)
        present = (co_await transport_->container_state(g->workload ? g->workload->id : g->proxy->id)).has_value();
      else
        present = (co_await transport_->inspect_network(g->network->id)).has_value();
      if (present) confirmed.push_back(g);  // a vanished deciding resource skips its group
    }
  } catch (const Error& e) {
    result.failures.push_back({kDisposalUnlisted, std::string("reap re-validation failed: ") + e.what()});
    co_return result;
  }

  // 4. Remove by ID: proxy, workload, network; a failure leaves the rest of its group.
  for (Group* g : confirmed) {
    try {
      if (g->proxy) {
        // Drained like every proxy teardown; no caller key: only its label attributes it.
        std::string proxy_id = g->proxy->id;
        std::optional<SandboxKey> no_caller;
        auto r =
            co_await detail::drain_and_remove_proxy(*transport_, config_, std::move(proxy_id), std::move(no_caller));
        if (r.outcome != RemoveOutcome::Removed) {
          if (r.outcome == RemoveOutcome::Refused)
            result.failures.push_back({kDisposalRefused, "proxy " + g->proxy->name + ": " + r.detail});
          continue;
        }
        ++result.proxies_removed;
      }
      if (g->workload) {
        auto r = co_await transport_->remove_container(g->workload->id);
        if (r.outcome != RemoveOutcome::Removed) {
          if (r.outcome == RemoveOutcome::Refused)
            result.failures.push_back({kDisposalRefused, "container " + g->workload->name + ": " + r.detail});
          continue;
        }
        ++result.disposed;
      }
      if (g->network) {
        auto r = co_await transport_->remove_network(g->network->id);
        if (r.outcome == RemoveOutcome::Removed)
          ++result.networks_removed;
        else if (r.outcome == RemoveOutcome::Refused)
          result.failures.push_back({kDisposalRefused, "network " + g->network->name + ": " + r.detail});
      }
    } catch (const Error& e) {
      result.failures.push_back({kDisposalRefused, e.what()});
    }
  }
  co_return result;
}

}  // namespace maf::sandbox::docker
