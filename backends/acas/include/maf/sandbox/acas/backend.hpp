#pragma once
/// @file acas/backend.hpp
/// The ACAS backend (A-n, docs/backends/acas.md): Azure Container Apps Sandboxes over the data-plane REST
/// API, with libcurl and no Azure SDK. Tested against maf-sandbox-acas-emulator; see
/// docs/backends/acas.md for what is proven where.
///
/// Where acas.md and seed 002 (maf-sandbox-acas 0.25.0) disagree, the seed wins (the
/// specification says so too); the places where that matters are marked "[seed]" in the sources.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "maf/sandbox/acas/credentials.hpp"
#include "maf/sandbox/acas/errors.hpp"
#include "maf/sandbox/backend.hpp"

namespace maf::sandbox::acas {

/// Every setting, with acas.md's defaults. Parsed from the plugin's JSON by
/// `parse_acas_config`, which refuses unknown keys by name.
struct AcasConfig {
  /// `https://management.<region>.azuredevcompute.io`. `http://` only for a loopback
  /// host and only with `allow_insecure_loopback` (the emulator, E-2).
  std::string endpoint;
  std::string subscription_id;
  std::string resource_group;
  std::string sandbox_group;
  /// Qualifies imported `repository:tag` images; empty = unchanged.
  std::string registry;
  /// Used when a spec names neither image nor image_id (e.g. the conformance runner's
  /// subject); same namespace rule as spec.image. Empty = such a spec is refused.
  std::string default_image;
  std::string api_version = "2026-02-01-preview";  ///< R-3, pinned by the client
  bool allow_insecure_loopback = false;

  /// the host's per-operation resolver (credentials.hpp). When set, the chain below
  /// is never used, not even when the resolver fails.
  AcasCredentialResolver credential_resolver;

  /// Token sources (docs/backends/acas.md "The credential chain"), first configured wins, a configured source that fails is an
  /// error (never a fall-through): `token`, then `token_command` (argv; prints the token or
  /// az-CLI JSON), then `service_principal`, then `workload_identity`, then
  /// `managed_identity`, then the environment variable `token_env` (default ACAS_ACCESS_TOKEN).
  std::string token;
  std::vector<std::string> token_command;
  /// Managed identity: `$IDENTITY_ENDPOINT` with `X-IDENTITY-HEADER: $IDENTITY_HEADER` (App
  /// Service, Container Apps) when both are set, else the VM's IMDS endpoint with
  /// `Metadata: true` and a 2 s connect bound. The resource is `scope` without `/.default`.
  bool managed_identity = false;
  /// Service principal: the client-credentials grant with `$AZURE_TENANT_ID`, `$AZURE_CLIENT_ID`,
  /// `$AZURE_CLIENT_SECRET` (each required) at `$AZURE_AUTHORITY_HOST` or `authority_host`.
  bool service_principal = false;
  /// Workload identity: the same token endpoint with the federated token read from
  /// `$AZURE_FEDERATED_TOKEN_FILE` (re-read at each fetch) as `client_assertion`, for
  /// `$AZURE_CLIENT_ID` in `$AZURE_TENANT_ID` (each required).
  bool workload_identity = false;
  std::string authority_host = "https://login.microsoftonline.com";
  std::string managed_identity_client_id;  ///< a user-assigned identity; empty = system-assigned
  std::string imds_endpoint = "http://169.254.169.254/metadata/identity/oauth2/token";
  std::string token_env = "ACAS_ACCESS_TOKEN";
  std::string scope = "https://dynamicsessions.io/.default";  ///< R-4, passed to commands as $ACAS_TOKEN_SCOPE

  int auto_suspend_seconds = 60;
  int auto_delete_seconds = 600;
  double read_timeout_seconds = 120;
  /// the command probes share one deadline of min(this, read_timeout_seconds). The
  /// spec's 10 s; a loaded host (or CI box) may need more.
  double probe_timeout_seconds = 10;
  std::int64_t exec_output_limit_bytes = 1 << 20;
  double request_timeout_seconds = 30;   ///< one HTTP request outside exec
  double create_timeout_seconds = 300;   ///< R-71 create poll cap
  double delete_timeout_seconds = 300;   ///< R-71 delete poll cap
  double poll_interval_seconds = 3;      ///< R-71; tests use tens of milliseconds
  double retry_after_cap_seconds = 30;   ///< T-4 cap on a server-requested wait
  int http_workers = 8;                  ///< curl worker threads (http_client.hpp)
  /// clients (curl workers + token source + token cache) alive at once per executor's
  /// execution context, counting those being built and being closed.
  int max_clients_per_loop = 32;
  double client_wait_seconds = 30;       ///< A-61: bound of resolver + lease (wait and build)
  double client_close_seconds = 30;      ///< A-62: bound of close()'s drain and of each client close
};

/// Throws ValueError naming the key for unknown keys, wrong types or out-of-range values.
AcasConfig parse_acas_config(const nlohmann::json& json);

class AcasSandboxBackend : public SandboxBackend, public std::enable_shared_from_this<AcasSandboxBackend> {
public:
  explicit AcasSandboxBackend(AcasConfig config);
  ~AcasSandboxBackend() override;

  std::string name() const override { return "acas"; }
  std::string isolation() const override { return "microvm"; }
  const BackendDeclarations& declarations() const override;

  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey key, std::optional<std::string> kind,
                                                                 std::optional<std::string> instance_id) override;
  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) override;

  /// refuses new work for good (AcasCredentialError "closing or closed"), waits up to
  /// `client_close_seconds` for admitted operations, then closes every cached client on its
  /// owner executor, each within `client_close_seconds`. Never deletes sandboxes. Throws
  /// AcasClientCloseError naming what is left (operations still running, a client whose
  /// close timed out, failed, or whose owner executor does not run); a later close() closes
  /// what is still open and nothing twice.
  boost::asio::awaitable<void> close();

  struct State;

protected:
  /// A-1…A-16 after the core's checks (ACQ-1, ACQ-2) and under its per-identity lock
  /// (ACQ-3): get or create the sandbox and run its probes. The storage base is walked and
  /// made afterwards, by the core and the sandbox (ACQ-4, A-13).
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec,
                                                              AcquirePlan plan) override;

private:
  std::shared_ptr<State> state_;
};

}  // namespace maf::sandbox::acas
