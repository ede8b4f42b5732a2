#pragma once
/// @file disposal.hpp
/// How a disposal or a scope purge went (C-32…C-34).
///
/// Disposal is best-effort by contract (C-59): it never throws; it *reports*. Only `code`
/// is stable; `detail` is for logs.

#include <optional>
#include <string>
#include <vector>

namespace maf::sandbox {

struct DisposalFailure {
  /// One of the kDisposal* codes; anything else folds to "unknown".
  std::string code;
  std::string detail;

  /// "code: detail"
  std::string to_string() const { return code + ": " + detail; }
  friend bool operator==(const DisposalFailure&, const DisposalFailure&) = default;
};

inline constexpr const char* kDisposalUnreachable = "unreachable";  ///< never reached
inline constexpr const char* kDisposalTimeout = "timeout";          ///< outcome unknown
inline constexpr const char* kDisposalRefused = "refused";          ///< answered; still there
inline constexpr const char* kDisposalUnlisted = "unlisted";        ///< sweep may be partial
inline constexpr const char* kDisposalUnknown = "unknown";

/// C-33: absent for none; otherwise the highest-precedence code
/// (unreachable > timeout > refused > unlisted > unknown) with every detail joined by "; ".
std::optional<DisposalFailure> fold(const std::vector<DisposalFailure>& failures);

/// What a scope purge did. `disposed` alone says nothing about completeness: inspect
/// `undisposed` (C-34).
struct ScopePurge {
  int disposed = 0;
  std::optional<DisposalFailure> undisposed;
  friend bool operator==(const ScopePurge&, const ScopePurge&) = default;
};

}  // namespace maf::sandbox
