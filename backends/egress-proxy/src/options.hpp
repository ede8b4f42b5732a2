#pragma once
/// @file options.hpp
/// The proxy's command line and environment (docs/backends/egress-proxy.md lists them).
///
/// The allowlist is the union of every `--allow LIST`, `$MAF_EGRESS_ALLOW` and
/// `$MAF_SANDBOX_ALLOW` (the variable the Docker backend sets, "Fixed constants"). The listen
/// port defaults to `$MAF_SANDBOX_PROXY_PORT`, else 3128.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "allowlist.hpp"
#include "pinned_names.hpp"

namespace maf::sandbox::egress_proxy {

struct ProxyOptions {
  std::string listen_address = "0.0.0.0";
  std::uint16_t listen_port = 3128;
  Allowlist allow;
  PinnedNames pins;
  std::optional<std::string> log_path;  ///< absent: stdout
  std::size_t max_connections = 128;
  std::size_t max_head_bytes = 16 * 1024;
  std::chrono::milliseconds head_timeout{10'000};
  std::chrono::milliseconds connect_timeout{20'000};
  std::chrono::milliseconds idle_timeout{300'000};
  bool help = false;
  /// `--unsafe-allow-forwarding`: serve even in a namespace that forwards packets. For the
  /// conformance double that must show EG-3 failing (issue 22); never set by a backend.
  bool allow_forwarding = false;
};

/// Reads a file's whole text (the hosts file); injected so tests need no files.
using ReadFile = std::function<std::string(const std::string& path)>;
/// Reads an environment variable; nullopt when unset.
using GetEnv = std::function<std::optional<std::string>(const char* name)>;

/// Throws std::invalid_argument naming the offending argument.
ProxyOptions parse_options(const std::vector<std::string>& args, const GetEnv& env, const ReadFile& read_file);

std::string usage();

}  // namespace maf::sandbox::egress_proxy
