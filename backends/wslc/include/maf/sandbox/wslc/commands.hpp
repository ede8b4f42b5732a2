#pragma once
/// @file wslc/commands.hpp
/// The argv of every wslc verb the backend sends (wslc.md C-10…C-22), without the program
/// itself. One builder per row, so golden-argv tests (T-9) pin exactly what reaches wslc.
/// Options always precede the first positional (C-5): after it, wslc forwards every token.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace maf::sandbox::wslc {

/// What `container list` selects: an exact-name probe (W-14) or label filters (W-35).
struct ListSelector {
  bool all = false;  ///< `-a`: stopped containers too
  std::optional<std::string> name{};
  std::vector<std::pair<std::string, std::string>> labels{};  ///< in filter order
};

std::vector<std::string> version_args();
std::vector<std::string> list_args(const ListSelector& selector);
using LabelList = std::vector<std::pair<std::string, std::string>>;

/// C-10, a workload: `--network` (`none` for closed egress, `N-net` behind the proxy),
/// `--cpus` when a CPU bound applies (C-23, docs/backends/wslc.md "Resource bounds"), the
/// environment, the labels, the image, `sleep infinity`.
std::vector<std::string> run_args(const std::string& name, const LabelList& labels, const std::string& image,
                                  const std::string& network = "none", const LabelList& env = {},
                                  std::optional<double> cpus = std::nullopt);
/// `--cpus`' value as wslc parses it (from_chars in fixed notation: no sign, no exponent, no
/// space, more than 0): the shortest fixed-notation text that reads back as `cpus`. Throws
/// ValueError naming the value outside ResourceLimits' CPU range (0.01…1024, LIM-2) — below
/// it wslc's nano-CPU truncation and the engine's 0.01 floor stop meaning a bound.
std::string cpus_argument(double cpus);
/// C-10, W-32 (2), W-44: the egress proxy `N-proxy` on `N-net` with `env` as its `-e` pairs
/// (egress_proxy/launch.hpp: MAF_SANDBOX_ALLOW, and for method/path rules MAF_SANDBOX_RULES
/// and MAF_SANDBOX_UPSTREAM_CA_PEM), with the labels plus `maf-sandbox.role=proxy`; the
/// image's own entrypoint runs.
std::vector<std::string> proxy_run_args(const std::string& proxy, const std::string& network, const LabelList& env,
                                        const LabelList& labels, const std::string& image);
/// C-17, W-32 (4): the proxy's output, read for its readiness line; with `tail`, only its
/// last `tail` lines (`--tail K`, the disposal's read of the proxy's decisions, OBS-7).
std::vector<std::string> logs_args(const std::string& name, std::optional<int> tail = std::nullopt);
std::vector<std::string> start_args(const std::string& name);
/// C-12: `--user` only when given; `-w` always.
std::vector<std::string> exec_args(const std::string& name, const std::string& working_directory,
                                   const std::vector<std::string>& argv, std::optional<std::string> user = std::nullopt);
/// C-13: the tar arrives on stdin and extracts at `/`.
std::vector<std::string> copy_in_args(const std::string& name);
/// C-14: the one regular file's bytes land in a local file named `-` in wslc's cwd.
std::vector<std::string> copy_out_args(const std::string& name, const std::string& guest_path);
std::vector<std::string> remove_args(const std::string& name);
/// C-18, W-32 (1): the per-sandbox internal network.
std::vector<std::string> network_create_args(const std::string& network, const LabelList& labels);
/// C-20, W-32 (3): the proxy's outbound leg on wslc's default `bridge` network.
std::vector<std::string> network_connect_args(const std::string& container);
/// C-19: `--force`, so an absent network is exit 0 in every locale (W-37).
std::vector<std::string> network_remove_args(const std::string& name);

/// W-32 (4): whether the proxy's output holds its readiness line. wslc.md words it as a
/// line starting `listening on 3128`; backends/egress-proxy writes it as the JSON decision
/// line `{"event":"listening",...,"port":3128,...}`. Either form counts; nothing else does.
bool proxy_reports_listening(std::string_view logs);
/// W-34: the port the proxy listens on inside the sandbox's network.
inline constexpr int kProxyPort = 3128;

/// `wslc 2.9.4.0` (CRLF or LF, C-22) -> {2,9,4,0}; absent when the line is not that shape.
std::optional<std::array<int, 4>> parse_wslc_version(std::string_view text);
/// C-2: the floor, 2.9.4.0.
inline constexpr std::array<int, 4> kMinimumWslcVersion{2, 9, 4, 0};

}  // namespace maf::sandbox::wslc
