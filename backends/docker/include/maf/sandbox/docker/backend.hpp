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

namespace maf::sandbox::docker::detail {
struct GuestUser;
class DockerMemory;
}  // namespace maf::sandbox::docker::detail

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

protected:
  /// The engine work of an acquire (docs/backends/docker.md "Acquire, step by step"); the
  /// core has refused what the declarations do not serve, settled the work directory and
  /// serialised the identity (ACQ-1…ACQ-3), and walks the work directory afterwards (ACQ-4).
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec,
                                                              AcquirePlan plan) override;
  /// Issue 49 (fork.cpp): an acquire for `key` whose work tree then becomes the one `source`'s
  /// snapshot kept (SNAPSHOT declared only with `snapshots: true`).
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_fork(std::shared_ptr<Sandbox> source, std::string snapshot_id,
                                                           SandboxKey key, SandboxSpec spec, AcquirePlan plan) override;

private:
  // Image (image.cpp): present, else pulled explicitly (D-9).
  boost::asio::awaitable<void> ensure_image(const std::string& image, const SandboxSpec& spec);
  // Container (container.cpp): OS re-check, paused recovery, create/adopt/start (D-10, D-11, D-30).
  boost::asio::awaitable<void> check_os_family(const SandboxSpec& spec);
  boost::asio::awaitable<void> recover_paused(const std::string& container);
  /// True when the container was created by this call (not restarted, not adopted).
  /// `state` is what the acquire last read (absent: no such container).
  boost::asio::awaitable<bool> ensure_running(const std::string& container, const SandboxSpec& spec,
                                              const std::string& image, const SandboxKey& key,
                                              const AcquirePlan& plan, const std::optional<ContainerState>& state);
  boost::asio::awaitable<bool> create_container(const std::string& container, const SandboxSpec& spec,
                                                const std::string& image, const SandboxKey& key,
                                                const AcquirePlan& plan);
  /// A create that lost the name race (issue 54): the container holding the name, checked to
  /// be this key's and kind's by its labels, once its creator started it (or, past
  /// `deadline`, started here). False: no container holds the name any more (the winner's
  /// create failed, or it was disposed): create again.
  boost::asio::awaitable<bool> adopt_container(const std::string& container, const SandboxSpec& spec,
                                               const SandboxKey& key, std::chrono::steady_clock::time_point deadline);
  /// LIM-7: the container carries a ttl label and its lifetime ran out (one inspect; lifetime.cpp).
  boost::asio::awaitable<bool> past_ttl(const std::string& container);
  // Probes (probes.cpp, D-24). `fresh_image`: the image ID of a container this acquire
  // created, else empty — what a fresh container of that image passed counts for this one.
  boost::asio::awaitable<void> run_probes(const std::string& container, const std::string& id,
                                          const std::string& fresh_image, const SandboxSpec& spec,
                                          const std::string& image);
  // Guest user (guest_user.cpp, D-25).
  boost::asio::awaitable<detail::GuestUser> resolve_guest_user(const std::string& container, const std::string& id,
                                                               const std::string& fresh_image, const SandboxSpec& spec);
  boost::asio::awaitable<std::optional<std::string>> read_account_file(const std::string& container,
                                                                       const std::string& path);
  // Work directory (work_dir.cpp). Between create and start (issue 24): upload the work
  // directory into a created container of an image whose facts are all known — the missing
  // suffix of the base, the image user, and every probe the spec needs passed — so a cold
  // acquire needs no freeze for it.
  boost::asio::awaitable<void> prepare_before_start(const std::string& container, const SandboxSpec& spec,
                                                    const AcquirePlan& plan);
  // Teardown (disposal.cpp, reap.cpp over teardown.hpp).
  /// D-27 through detail::teardown_workload; a workload it leaves gone is forgotten.
  boost::asio::awaitable<std::optional<DisposalFailure>> remove_workload(std::string container,
                                                                         std::optional<SandboxKey> caller,
                                                                         bool* removed = nullptr);
  /// Reap's inventory, qualification, re-validation and removal, written once; `decide`
  /// decides a group from its deciding resource's creation (Unix seconds: the
  /// workload's, else the proxy's, else the network's) and its workload, when it has one.
  boost::asio::awaitable<DockerReapResult> reap_where(
      std::optional<std::string> scope, std::function<bool(std::int64_t created, const LabelledResource* workload)> decide);

  DockerConfig config_;
  TransportChoice transport_choice_;  ///< before transport_: it decides which one is made
  std::shared_ptr<DockerTransport> transport_;
  BackendDeclarations declarations_;
  bool os_checked_ = false;  ///< built by create() or deferred(): cold acquires (re-)ask the daemon
  /// Per container (pruned when its sandbox goes) and per image (a cache): probes passed, the
  /// image user, the work directory's facts, and the names acquired (memory.hpp). Shared with
  /// the sandboxes, which record their work directory and forget an abandoned container.
  std::shared_ptr<detail::DockerMemory> memory_;
  /// Issue 46: each acquiring container's placeholder variables (CRED-6), set by do_acquire
  /// before the workload is created and read by create_container; never a value.
  std::mutex credential_env_mutex_;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> credential_env_;
};

}  // namespace maf::sandbox::docker
