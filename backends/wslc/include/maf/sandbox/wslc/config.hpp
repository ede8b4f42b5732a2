#pragma once
/// @file wslc/config.hpp
/// WslcConfig (wslc.md W-8): an immutable value read from the plugin's JSON configuration.
/// Unknown keys, wrong types and unsupported values are refused by name.

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace maf::sandbox::wslc {

struct WslcConfig {
  /// The wslc executable: a bare name is searched on PATH (the Linux shim in tests); a
  /// relative path such as `./wslc` is resolved against the working directory when the
  /// backend is created.
  std::string wslc_path = "wslc";
  /// Bounds every verb except `exec`, which takes the caller's timeout (W-8).
  double command_timeout_seconds = 60.0;
  /// Used when a spec names neither `image` nor `image_id`; absent = such a spec is refused.
  std::optional<std::string> image;
  /// The egress proxy image (backends/egress-proxy, W-34). Set: egress_modes gains ALLOWLIST
  /// and a spec with hosts runs behind a per-sandbox proxy (W-4, W-31…W-33). "" reads as unset.
  std::optional<std::string> egress_proxy_image;
  /// The operator's word that `egress_proxy_image` terminates TLS (issue 45), so egress_methods
  /// and egress_paths are declared. wslc cannot read an image's labels, so each acquire of a
  /// spec with method/path rules checks the proxy itself: one that starts without printing a
  /// CA certificate is refused (SandboxEgressNotEnforced), never run as a plain tunnel.
  bool egress_proxy_terminates = false;
  /// The PEM trust store the proxy verifies a terminated host's upstream against (passed as
  /// MAF_SANDBOX_UPSTREAM_CA_PEM); absent = the bundle baked into the proxy image. Read at
  /// each acquire with rules; an unreadable file fails that acquire by name.
  std::optional<std::string> egress_upstream_ca_file;
  /// `--cpus` for every workload whose spec asks no CPU bound (LIM-5: a spec's `cpus` replaces
  /// it). Absent = no CPU bound. 0.01…1024, as ResourceLimits' range (commands.hpp).
  std::optional<double> cpus;
  /// TEST-ONLY broken double of the LIMITS suite (not a JSON key): the spec's bounds are
  /// declared and folded into the name, but not applied — only the configuration's `cpus` is
  /// put on the container. Never set it outside a test.
  bool test_only_unapplied_resource_bounds = false;

  std::chrono::milliseconds command_timeout() const;
};

/// `null` reads as `{}`; throws ValueError naming the offending key.
WslcConfig parse_wslc_config(const nlohmann::json& json);

}  // namespace maf::sandbox::wslc
