// The operator's age-based reap and the ttl reap (D-28, LIM-7): inventory by label,
// qualification by name shape, re-validation by ID, then removal by ID in D-27's order.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <array>
#include <regex>

#include "lifetime.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "memory.hpp"
#include "said.hpp"
#include "teardown.hpp"

namespace maf::sandbox::docker {

using boost::asio::awaitable;
using detail::is_hex64;
using detail::is_proxy;
using detail::now_unix;
using detail::parse_rfc3339;
using detail::ttl_label;

awaitable<ScopePurge> DockerSandboxBackend::reap(std::chrono::seconds older_than, std::optional<std::string> scope) {
  DockerReapResult r = co_await reap_detailed(older_than, std::move(scope));
  co_return ScopePurge{r.disposed, fold(r.failures)};
}

awaitable<DockerReapResult> DockerSandboxBackend::reap_detailed(std::chrono::seconds older_than,
                                                                std::optional<std::string> scope) {
  if (older_than.count() <= 0)
    throw ValueError(said("reap older_than must be positive, got " + std::to_string(older_than.count()) +
                          " s"));
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

  // 4. The one plan (D-27) by the IDs just re-validated: proxy (drained; no caller key, only
  // its label attributes it), workload, network; a part the engine keeps leaves the rest of
  // its group, and a refused network is reported (an operator's sweep says what it left).
  for (Group* g : confirmed) {
    const auto part = [](const std::optional<LabelledResource>& r, const char* what) {
      return r ? detail::TeardownPart{r->id, std::string(what) + " " + r->name} : detail::TeardownPart{};
    };
    detail::TeardownPlan plan{part(g->proxy, "proxy"), part(g->workload, "container"), part(g->network, "network")};
    std::optional<SandboxKey> no_caller;
    auto running = detail::run_teardown(*transport_, config_, std::move(plan), std::move(no_caller));
    const detail::TeardownReport report = co_await std::move(running);
    if (report.proxy_removed) ++result.proxies_removed;
    if (report.workload_removed) {
      ++result.disposed;
      memory_->forget(g->workload->name);
    }
    if (report.network_removed) ++result.networks_removed;
    if (report.failure) result.failures.push_back(*report.failure);
    if (report.network_kept)
      result.failures.push_back({kDisposalRefused, "network " + g->network->name + ": " + *report.network_kept});
  }
  co_return result;
}

}  // namespace maf::sandbox::docker
