#pragma once
/// @file wslc/backend.hpp
/// WslcSandboxBackend: Linux containers inside WSL's session VM, driven through the `wslc`
/// CLI (WSL 2.9.4 and later) as a subprocess (W-n, docs/backends/wslc.md).
///
/// Declarations (W-1…W-6): isolation `container`; capabilities exactly {EXEC, FILES_IN};
/// os_families {POSIX}; egress_modes {CLOSED}, plus ALLOWLIST when `egress_proxy_image` is
/// configured (W-4); isolation_scopes {CONVERSATION, CALL}; limits undeclared (the core
/// defaults: 8 MiB per file); resource_bounds {cpus} — `--cpus`, the one bound wslc can
/// enforce that the LIMITS suite proves (docs/backends/wslc.md "Resource bounds"). Cleanup
/// is disposal only — no `stop`.
/// ALLOWLIST runs the workload on an internal network `N-net` whose only way out is the
/// per-sandbox proxy `N-proxy`, dual-homed on wslc's `bridge` (W-31…W-34, egress.cpp).
/// Names and labels come from support/labels.hpp, so acquire and every disposal agree.
/// `acquire` is the core's (ACQ-1…ACQ-4, docs/writing-a-backend.md): it refuses what the
/// declarations do not serve, settles the work base, serialises acquires of one identity and
/// walks the base through the sandbox's engine stat; `do_acquire` is the wslc work alone.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/support/proxy_log.hpp"
#include "maf/sandbox/wslc/commands.hpp"
#include "maf/sandbox/wslc/config.hpp"
#include "maf/sandbox/wslc/container_list.hpp"
#include "maf/sandbox/wslc/runner.hpp"

namespace maf::sandbox::wslc {

inline constexpr const char* kBackendName = "wslc";
inline constexpr const char* kContainerPrefix = "maf-sandbox-wslc-";


class WslcSandboxBackend : public SandboxBackend {
public:
  /// No wslc call here (plugin.hpp's rule); the version is checked on the first acquire.
  explicit WslcSandboxBackend(WslcConfig config, std::shared_ptr<WslcRunner> runner = nullptr);
  ~WslcSandboxBackend() override;

  std::string name() const override { return kBackendName; }
  std::string isolation() const override { return "container"; }
  const BackendDeclarations& declarations() const override { return declarations_; }

  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey key, std::optional<std::string> kind,
                                                                 std::optional<std::string> instance_id) override;
  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) override;

  const WslcConfig& config() const noexcept { return config_; }
  /// W-10: the container name for (key, kind, work base, allowlist hosts when the sandbox
  /// runs behind the proxy — W-31, the spec's resource bounds when any — LIM-5); derived,
  /// never stored.
  static std::string container_name(const SandboxKey& key, const std::string& kind, const std::string& work_base,
                                    const std::vector<std::string>& allow_hosts = {},
                                    const ResourceLimits& resources = {});

protected:
  /// W-13…W-18 after the core's checks: get-or-create of the container under the core's
  /// per-identity lock (ACQ-3); the work base is made afterwards by the sandbox's
  /// do_prepare_storage_base (W-18, ACQ-4).
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec,
                                                              AcquirePlan plan) override;

private:
  struct Removal {
    bool removed = false;
    std::optional<DisposalFailure> failure;
  };
  boost::asio::awaitable<void> check_version();
  boost::asio::awaitable<WslcOutcome> lifecycle(std::vector<std::string> args);
  boost::asio::awaitable<std::vector<ListedContainer>> list(const ListSelector& selector);
  boost::asio::awaitable<void> create(const std::string& name, const SandboxKey& key, const SandboxSpec& spec,
                                      const std::string& image, bool behind_proxy);
  /// W-31: ALLOWLIST with hosts and a proxy image configured.
  bool behind_proxy(const SandboxSpec& spec) const;
  /// W-32, W-33 (egress.cpp): network, proxy, outbound leg, readiness; `fresh` = the
  /// workload is about to be created, so a failure also removes the network. W-44: for a
  /// spec with method/path rules, answers the proxy's CA certificate (refusing a proxy that
  /// printed none); nullopt otherwise.
  boost::asio::awaitable<std::optional<std::string>> ensure_egress(const std::string& name, const SandboxKey& key,
                                                                   const SandboxSpec& spec, bool fresh);
  /// W-44 (egress.cpp): the CA in the running workload `name` — egress_proxy::guest_ca_tar
  /// over the guest's own bundle — at every acquire with rules (each proxy makes a new CA).
  boost::asio::awaitable<void> install_egress_ca(const std::string& name, const SandboxSpec& spec,
                                                 const std::string& ca_pem);
  /// Removes `N-proxy`, then (when asked) `N-net`, logging what fails: an acquire's
  /// cleanup, whose own error is the one raised.
  boost::asio::awaitable<void> remove_egress(const std::string& name, bool with_network);
  boost::asio::awaitable<void> remove_network(const std::string& network, std::vector<DisposalFailure>& failures);
  boost::asio::awaitable<bool> start(const std::string& name);
  boost::asio::awaitable<Removal> remove(const std::string& name);
  /// OBS-7 (egress.cpp): `remove` of a proxy, its decisions read first from its running log
  /// (only when observers are attached) and delivered once it is gone, keyed `key`.
  boost::asio::awaitable<Removal> remove_proxy(const std::string& proxy, std::optional<SandboxKey> key);
  /// The proxy's decisions so far (`container logs --tail`), or nullopt when unreadable
  /// (logged; never throws but for cancellation).
  boost::asio::awaitable<std::optional<support::ProxyDecisions>> read_proxy_decisions(const std::string& proxy);
  /// Removes `names` in order, each listed proxy followed by its network. `caller`: the
  /// disposal's key when its label filter pinned every key label (a call id given).
  boost::asio::awaitable<std::vector<DisposalFailure>> remove_all(const std::vector<std::string>& names, int* removed,
                                                                  const std::optional<SandboxKey>& caller);
  void remember(const SandboxKey& key, const std::string& name);
  std::set<std::string> remembered(const SandboxKey& key, const std::optional<std::string>& scope_thread_only);
  void forget(const std::string& name);
  /// The key this backend acquired `name` with (W-19: `acquired_`), if it did.
  std::optional<SandboxKey> remembered_key(const std::string& name);

  WslcConfig config_;
  std::shared_ptr<WslcRunner> runner_;
  BackendDeclarations declarations_;
  bool version_checked_ = false;

  std::mutex state_mutex_;
  /// W-19's fallback: per key, the names this process acquired (and whose removal failed).
  std::map<std::string, std::pair<SandboxKey, std::set<std::string>>> acquired_;
};

}  // namespace maf::sandbox::wslc
