#pragma once
/// @file exec_result.hpp
/// What a program returned (C-27, C-39).
///
/// The bytes are the truth (C-27); the text views decode UTF-8 with replacement, one U+FFFD
/// per maximal invalid subpart (the practice Python uses), for display only.

#include <string>
#include <string_view>

#include "maf/sandbox/resource_limits.hpp"

namespace maf::sandbox {

struct ExecResult {
  std::string stdout_bytes;  ///< opaque octets, never translated
  std::string stderr_bytes;  ///< opaque octets, never translated
  int exit_code = 0;         ///< the program's own status, never normalised (C-39)
  /// The sandbox's resource bounds this command ran into, where the engine says so
  /// (docs/limits.md LIM-6): `memory` — a process of it was killed by the memory bound
  /// (the exit code is then whatever the program's shell made of that, e.g. 137);
  /// `processes` — a fork of it was refused at the process bound (nothing was killed; the
  /// program saw EAGAIN). Empty: no bound was reached, or the backend cannot tell. Apart
  /// from a non-zero exit (the program's own) and from the command deadline (TimeoutError).
  ResourceBoundSet limits_hit{};

  /// Convenience for doubles and tests: text is already UTF-8 in C++.
  static ExecResult from_text(std::string out, std::string err = {}, int code = 0) {
    return ExecResult{std::move(out), std::move(err), code, {}};
  }

  std::string stdout_text() const;
  std::string stderr_text() const;
  /// True when a process of the command was killed by a resource bound (LIM-6).
  bool killed_by_limit() const noexcept { return limits_hit.contains(ResourceBound::Memory); }

  friend bool operator==(const ExecResult&, const ExecResult&) = default;
};

/// UTF-8 decode with replacement: each maximal invalid subpart becomes U+FFFD.
std::string decode_utf8_replace(std::string_view bytes);

/// True when `bytes` is well-formed UTF-8 (no surrogates, no overlongs).
bool is_valid_utf8(std::string_view bytes) noexcept;

}  // namespace maf::sandbox
