#pragma once
/// @file docker/backend.hpp
/// DockerSandboxBackend: plain Docker containers, driven through a DockerTransport (the
/// docker CLI by default), files over the tar plane of `docker cp` (docker.md).
///
/// Declarations (docs/backends/docker.md "Declarations"): isolation `container`, always; capabilities
/// {exec, files_in, files_out, files_delete, host_tools} — never files_list, never run_code;
/// egress_modes {closed}, plus allowlist when `egress_proxy_image` is set (D-5, D-31);
/// isolation_scopes {conversation, call}; limits 64 MiB per file,
/// 256 MiB total, 256 files per direction; os_families {posix} when the bound daemon says
/// `linux` — filled only by `create()` (and the plugin factory, which calls it), empty from
/// the plain constructor.
///
/// Where docker.md and the 0.22 README (seed 004) disagree, the seed wins; those places are
/// marked [seed>mirror] in the sources. [port decision] marks choices no source makes.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/transport.hpp"
#include "maf/sandbox/docker/transport_choice.hpp"

namespace maf::sandbox::docker {

/// The backend's name ("Declarations").
inline constexpr const char* kBackendName = "docker";
/// Container name prefix (D-7, "Fixed constants").
inline constexpr const char* kContainerPrefix = "maf-sandbox-docker-";

/// What one age-based sweep did (D-28).
struct DockerReapResult {
  int disposed = 0;          ///< workloads removed
  int proxies_removed = 0;
  int networks_removed = 0;
  std::vector<DisposalFailure> failures;
};

class DockerSandboxBackend : public SandboxBackend {
public:
  /// The plain constructor: no engine call, no os_families (docs/backends/docker.md "OS family"). `transport`
  /// defaults to the one `config.transport` resolves to (transport_choice.hpp).
  explicit DockerSandboxBackend(DockerConfig config, std::shared_ptr<DockerTransport> transport = nullptr);

  /// Binds now and asks the daemon's OS once: os_families = {posix} iff it says `linux`;
  /// any other answer, a failure or a timeout declares nothing. A backend built here
  /// re-asks on every cold acquire (D-30).
  static boost::asio::awaitable<std::shared_ptr<DockerSandboxBackend>> create(
      DockerConfig config, std::shared_ptr<DockerTransport> transport = nullptr);

  /// No engine call now, first contact at first use (what the plugin factory builds, so
  /// `maf-sandbox plugins` and a router's policy checks work with the engine down): declares
  /// os_families = {posix} — what a Linux daemon serves — and checks that claim against the
  /// daemon on every cold acquire, refusing with SandboxOsFamilyNotSupported before any
  /// container is made if the daemon says otherwise (docs/backends/docker.md "OS family").
  static std::shared_ptr<DockerSandboxBackend> deferred(DockerConfig config,
                                                        std::shared_ptr<DockerTransport> transport = nullptr);

  std::string name() const override { return kBackendName; }
  std::string isolation() const override { return "container"; }
  const BackendDeclarations& declarations() const override { return declarations_; }

  boost::asio::awaitable<std::shared_ptr<Sandbox>> acquire(SandboxKey key, SandboxSpec spec) override;
  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey key, std::optional<std::string> kind,
                                                                 std::optional<std::string> instance_id) override;
  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) override;
  bool supports_reap() const noexcept override { return true; }
  boost::asio::awaitable<ScopePurge> reap(std::chrono::seconds older_than, std::optional<std::string> scope) override;
  /// reap() with the per-resource counts and every failure.
  boost::asio::awaitable<DockerReapResult> reap_detailed(std::chrono::seconds older_than,
                                                         std::optional<std::string> scope);
  /// LIM-7: removes every workload (with its proxy and network) whose `ttl` — the
  /// `maf-sandbox.ttl_seconds` label put on at creation — has run out since the engine's
  /// `Created`, in `scope` or everywhere.
  bool supports_reap_expired() const noexcept override { return true; }
  boost::asio::awaitable<ScopePurge> reap_expired(std::optional<std::string> scope) override;

  /// {"transport", "api" | "cli" | "injected"} and {"transport_reason", why}.
  std::vector<std::pair<std::string, std::string>> facts() const override;

  const DockerConfig& config() const noexcept { return config_; }
  DockerTransport& transport() const noexcept { return *transport_; }
  /// The container name for (key, kind): derived, never stored (D-7).
  static std::string container_name(const SandboxKey& key, const std::string& kind);

private:
  /// The image user's uid:gid inputs are owned by (D-14, D-25); `resolved` false means the
  /// root fallback, which is not cached.
  struct GuestUser {
    long long uid = 0;
    long long gid = 0;
    bool resolved = false;
  };
  boost::asio::awaitable<void> recover_paused(const std::string& container);
  /// True when the container was created by this call (not restarted, not adopted).
  /// `state` is what the acquire last read (absent: no such container).
  boost::asio::awaitable<bool> ensure_running(const std::string& container, const SandboxSpec& spec,
                                              const std::string& image, const SandboxKey& key,
                                              const std::string& base, const std::optional<ContainerState>& state);
  boost::asio::awaitable<bool> create_container(const std::string& container, const SandboxSpec& spec,
                                                const std::string& image, const SandboxKey& key,
                                                const std::string& base);
  /// Between create and start (issue 24): upload the work directory into a created container
  /// of an image whose facts are all known — the missing suffix of `base`, the image user,
  /// and every probe the spec needs passed — so a cold acquire needs no freeze for it.
  boost::asio::awaitable<void> prepare_before_start(const std::string& container, const SandboxSpec& spec,
                                                    const std::string& base);
  /// Every probe `spec` needs was passed by a fresh container of `image_key`; under state_mutex_.
  bool probes_known_locked(const std::string& image_key, const SandboxSpec& spec) const;
  boost::asio::awaitable<void> check_os_family(const SandboxSpec& spec);
  /// `fresh_image`: the image ID of a container this acquire created, else empty — what a
  /// fresh container of that image passed counts for this one.
  boost::asio::awaitable<void> run_probes(const std::string& container, const std::string& id,
                                          const std::string& fresh_image, const SandboxSpec& spec,
                                          const std::string& image);
  boost::asio::awaitable<GuestUser> resolve_guest_user(const std::string& container, const std::string& id,
                                                    const std::string& fresh_image, const SandboxSpec& spec);
  /// `fresh_image` as for run_probes: a fresh container's finding is recorded as its image's.
  boost::asio::awaitable<void> prepare_work_dir(const std::string& container, const std::string& id,
                                                const std::string& fresh_image, const std::string& base,
                                                const GuestUser& identity);
  boost::asio::awaitable<std::optional<std::string>> read_account_file(const std::string& container,
                                                                       const std::string& path);
  /// D-27: the drained proxy, then the workload, then the network. `caller` may stand in
  /// for the proxy's attribution label (D-8). `removed`, when given, is set when
  /// this removal is the one that removed the workload (the engine did not find it absent).
  boost::asio::awaitable<std::optional<DisposalFailure>> remove_workload(std::string container,
                                                                         std::optional<SandboxKey> caller,
                                                                         bool* removed = nullptr);
  /// Reap's inventory, qualification, re-validation and removal, written once; `decide`
  /// decides a group from its deciding resource's creation (Unix seconds: the
  /// workload's, else the proxy's, else the network's) and its workload, when it has one.
  boost::asio::awaitable<DockerReapResult> reap_where(
      std::optional<std::string> scope, std::function<bool(std::int64_t created, const LabelledResource* workload)> decide);
  /// LIM-7: the container carries a ttl label and its lifetime ran out (one inspect).
  boost::asio::awaitable<bool> past_ttl(const std::string& container);
  void remember(const SandboxKey& key, const std::string& container);
  std::vector<std::string> remembered(const SandboxKey& key, bool forget);

  DockerConfig config_;
  TransportChoice transport_choice_;  ///< before transport_: it decides which one is made
  std::shared_ptr<DockerTransport> transport_;
  BackendDeclarations declarations_;
  bool os_checked_ = false;  ///< built by create() or deferred(): cold acquires (re-)ask the daemon

  std::mutex state_mutex_;
  std::map<std::string, std::shared_ptr<void>> identity_locks_;  ///< per container name
  /// (container id, probe), and ("image:" + image id, probe) for what fresh containers passed
  std::set<std::pair<std::string, std::string>> probes_passed_;
  std::map<std::string, GuestUser> guest_users_;  ///< container id, or "image:" + image id -> its user
  /// (image id, work dir base) -> index in the base's component chain of the first component
  /// a fresh container of that image lacked (the chain's size: none); the ones before it were
  /// real directories. A fact of the image, recorded once from a fresh container (issue 24).
  std::map<std::pair<std::string, std::string>, std::size_t> work_dir_suffix_;
  std::map<std::string, std::set<std::string>> registry_;        ///< to_string(key) -> names
};

}  // namespace maf::sandbox::docker
