#pragma once
/// @file docker/config.hpp
/// DockerConfig (docs/backends/docker.md "Configuration (plugin JSON)"): an immutable value, read from the plugin's JSON config.
///
/// It reads no environment variable itself; the client environment is snapshotted when a
/// transport binds (D-29).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "maf/sandbox/docker/egress_events.hpp"

namespace maf::sandbox::docker {

/// How the backend reaches the engine (issue 9): the docker CLI, the Engine HTTP API, or
/// whichever of the two the endpoint allows (Auto: transport_choice.hpp says how).
enum class DockerTransportKind { Auto, Cli, Api };

struct DockerConfig {
  /// `"transport"`: "auto" (the default: the Engine API on a local socket this process can
  /// open, the CLI otherwise — transport_choice.hpp), "cli" or "api" (api_transport.hpp).
  DockerTransportKind transport = DockerTransportKind::Auto;
  /// `"docker_host"` ("api" or "auto", which then binds the API): the daemon endpoint, e.g.
  /// "unix:///run/docker.sock"; absent = DOCKER_HOST as the backend is created, else
  /// unix:///var/run/docker.sock.
  std::optional<std::string> docker_host;
  /// The Docker CLI. Debian's docker.io ships a 20.10 client at /usr/bin/docker; a 28.x
  /// client (e.g. /usr/local/bin/docker) negotiates down to a 20.10 engine's API 1.41.
  /// Both are supported. It must be Docker's CLI: binding needs `docker context inspect`.
  std::string docker_path = "docker";
  /// A locally built egress proxy image (scripts/egress-proxy-image); "" counts as unset
  /// (upstream issue #407). Set, it enables ALLOWLIST (D-31) on either transport.
  std::optional<std::string> egress_proxy_image;
  /// [port decision] Extra arguments after the proxy image's entrypoint, e.g.
  /// `["--resolve", "allowed.test=172.30.0.2"]` (docs/backends/egress-proxy.md).
  std::vector<std::string> egress_proxy_args;
  /// [port decision] D-32: below Engine 28, ALLOWLIST with hosts is refused unless this is
  /// true; then N is `--internal --ipv6=false -o com.docker.network.bridge.inhibit_ipv4=true`
  /// and the host-side bridge must be verified address-less (D-32, "Egress").
  bool egress_inhibit_ipv4_fallback = false;
  /// The trust store (PEM file on this host) the proxy verifies upstreams of terminated hosts
  /// against (method/path rules, issue 45); unset: the image's Debian bundle.
  std::optional<std::string> egress_upstream_ca_file;
  /// A backend built without an engine call (the plugin: deferred) declares egress_methods
  /// and egress_paths only when this says the proxy image terminates TLS; every acquire of a
  /// spec with rules then checks the image's features label all the same. DockerSandboxBackend::create
  /// reads the label itself and ignores this.
  bool egress_proxy_terminates = false;
  /// The proxy's way out; the EG stage points it at a local `--internal` server network.
  std::string outbound_network = "bridge";
  /// Bound on every lifecycle and file-plane client call, not on exec.
  double command_timeout_seconds = 60.0;
  /// Bound on the explicit `docker image pull` alone.
  double image_pull_timeout_seconds = 600.0;
  int pids_limit = 512;
  std::optional<std::string> memory;
  std::optional<double> cpus;
  bool cap_drop_all = false;
  /// `--init` (HostConfig.Init): the workload's PID 1 is the engine's reaping init (tini), so
  /// the orphans a killed or backgrounded program leaves are reaped instead of staying as
  /// zombies that hold `pids_limit` slots (docs/limits.md). False only for an engine without
  /// its init binary.
  bool init = true;
  /// TEST-ONLY broken double of the LIMITS suite (not a JSON key): a spec's memory, cpus,
  /// processes and ttl are declared but not applied — only the configuration's memory, cpus
  /// and pids_limit are, and no ttl label is put on the container. Never
  /// set it outside a test.
  bool test_only_unapplied_resource_bounds = false;
  /// [port decision] Per-stream cap on what one exec may return; past it the client is
  /// killed and exec raises. The Python backend buffers without a bound.
  std::size_t max_exec_output_bytes = std::size_t{16} << 20;
  /// [port decision] When true (the default), the plugin factory declares os_families
  /// {posix} and checks it against the daemon at each cold acquire
  /// (DockerSandboxBackend::deferred); false gives the plain constructor (no os_families
  /// declared, nothing checked). The factory makes no engine call either way.
  bool declare_os_family = true;
  /// Receives the proxy's decisions at each proxy teardown (egress_events.hpp, D-27). A host
  /// that builds the backend itself sets any callable; the JSON key `"egress_event_log"`
  /// (a file path) sets egress_event_log(path), which appends one JSON line per event.
  /// Empty: nothing published.
  EgressObserver egress_observer;
  /// Issue 49 (docs/backends/docker.md "Snapshots and pause"): declare SNAPSHOT at fidelity
  /// `work_tree` — snapshot, restore, fork, release, and RESET to the acquire-time tree.
  /// Off by default: with it, every acquire reads its work tree once more (the RESET snapshot).
  bool snapshots = false;
  /// Bytes all snapshots this backend holds may take together; past it snapshot() is refused.
  std::uint64_t snapshot_budget_bytes = std::uint64_t{1} << 30;
  /// How long a snapshot stays restorable after it was taken.
  std::chrono::seconds snapshot_ttl{24 * 3600};

  std::chrono::milliseconds command_timeout() const;
  std::chrono::milliseconds image_pull_timeout() const;
  /// `--cpus` formatted like Python's str(float): "1.0", "0.5", "2.25".
  std::optional<std::string> cpus_argument() const;
};

/// A CPU count as `--cpus` is given it, formatted like Python's str(float): "1.0", "0.5".
std::string format_cpus(double cpus);

/// Parse a JSON object; unknown keys, wrong types and invalid values are refused by name
/// with ValueError. `null` reads as `{}`.
DockerConfig parse_docker_config(const nlohmann::json& json);

}  // namespace maf::sandbox::docker
