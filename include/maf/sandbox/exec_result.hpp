#pragma once
/// @file exec_result.hpp
/// What a program returned (core.md §1.11).
///
/// The bytes are the truth (C-27); the text views decode UTF-8 with replacement, one U+FFFD
/// per maximal invalid subpart (the practice Python uses), for display only.

#include <string>
#include <string_view>

namespace maf::sandbox {

struct ExecResult {
  std::string stdout_bytes;  ///< opaque octets, never translated
  std::string stderr_bytes;  ///< opaque octets, never translated
  int exit_code = 0;         ///< the program's own status, never normalised (C-39)

  /// Convenience for doubles and tests: text is already UTF-8 in C++.
  static ExecResult from_text(std::string out, std::string err = {}, int code = 0) {
    return ExecResult{std::move(out), std::move(err), code};
  }

  std::string stdout_text() const;
  std::string stderr_text() const;

  friend bool operator==(const ExecResult&, const ExecResult&) = default;
};

/// UTF-8 decode with replacement: each maximal invalid subpart becomes U+FFFD.
std::string decode_utf8_replace(std::string_view bytes);

/// True when `bytes` is well-formed UTF-8 (no surrogates, no overlongs).
bool is_valid_utf8(std::string_view bytes) noexcept;

}  // namespace maf::sandbox
