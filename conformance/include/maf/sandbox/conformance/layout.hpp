#pragma once
/// @file conformance/layout.hpp
/// The hostile layout (docs/conformance.md "The probes"): where the suites plant the secret, the links
/// that point at it, and the positive control — all derived from the working directory.
///
/// `outside` is a *sibling* of the working directory that shares it as a string prefix
/// (`/w` and `/w-outside`), so a containment check that compares prefixes without the
/// separator is caught.

#include <cstdint>
#include <string>
#include <string_view>

namespace maf::sandbox::conformance {

class ConformanceSubject;

/// Every probe read uses this cap, so no refusal a probe sees is a size refusal.
inline constexpr std::int64_t kProbeReadCap = std::int64_t{1} << 20;
/// Must never come back to the caller (30 bytes).
inline constexpr std::string_view kSecretBytes = "secret: must never be read out";
/// The positive control planted inside (20 bytes).
inline constexpr std::string_view kInsideBytes = "inside: legit bytes.";

struct ConformancePaths {
  std::string work;           ///< W, lexically normalised
  std::string outside;        ///< W + "-outside"
  std::string secret;         ///< outside/secret.txt
  std::string nested_secret;  ///< outside/sub/leaf.txt
  std::string inside;         ///< W/real/inside.txt (positive control)
  std::string plain;          ///< W/plain.txt (a file where a directory is expected)
  std::string link_dir;       ///< W/link-dir -> outside
  std::string under_link;     ///< W/link-dir/sub
  std::string link_file;      ///< W/link-file -> secret

  /// Derive every path from `working_directory` (absolute; a trailing slash is irrelevant).
  static ConformancePaths from(std::string_view working_directory);

  /// `outside/<name>` relative to W, e.g. "../work-outside/planted.txt" — computed, never
  /// hard-coded.
  std::string beyond(std::string_view name) const;
  /// `W/<relative>`.
  std::string in_work(std::string_view relative) const;
  /// `outside/<relative>`.
  std::string in_outside(std::string_view relative) const;
};

/// Plants, in this order: inside (control bytes), plain, secret, nested_secret (secret
/// bytes), link-dir, link-file. Public so a backend's own premise test can reuse it.
void plant_layout(ConformanceSubject& subject, const ConformancePaths& paths);

}  // namespace maf::sandbox::conformance
