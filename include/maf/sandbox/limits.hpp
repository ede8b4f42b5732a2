#pragma once
/// @file limits.hpp
/// Transfer caps (C-21, C-22): per file, in total, and a file count, per direction.
///
/// [gap] C-23: the sources never validate zero or negative values. This port refuses them
/// at construction with ValueError naming the field (docs/policy.md), because a zero cap
/// silently refuses everything and a negative one wraps in unsigned arithmetic.

#include <cstdint>
#include <string>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {

class TransferLimits {
public:
  /// Throws ValueError naming the field when any value is below 1.
  constexpr TransferLimits(std::int64_t max_bytes_per_file, std::int64_t max_total_bytes,
                           std::int64_t max_files)
      : max_bytes_per_file_(positive("max_bytes_per_file", max_bytes_per_file)),
        max_total_bytes_(positive("max_total_bytes", max_total_bytes)),
        max_files_(positive("max_files", max_files)) {}

  constexpr std::int64_t max_bytes_per_file() const noexcept { return max_bytes_per_file_; }
  constexpr std::int64_t max_total_bytes() const noexcept { return max_total_bytes_; }
  constexpr std::int64_t max_files() const noexcept { return max_files_; }

  /// Each field <= the same field of `ceiling` (C-21).
  constexpr bool within(const TransferLimits& ceiling) const noexcept {
    return max_bytes_per_file_ <= ceiling.max_bytes_per_file_ &&
           max_total_bytes_ <= ceiling.max_total_bytes_ && max_files_ <= ceiling.max_files_;
  }
  friend constexpr bool operator==(const TransferLimits&, const TransferLimits&) = default;

private:
  static constexpr std::int64_t positive(const char* field, std::int64_t value) {
    if (value < 1)
      throw ValueError(std::string("TransferLimits.") + field + " must be at least 1, got " +
                       std::to_string(value));
    return value;
  }
  std::int64_t max_bytes_per_file_;
  std::int64_t max_total_bytes_;
  std::int64_t max_files_;
};

/// "max_bytes_per_file=8388608, max_total_bytes=33554432, max_files=64"
std::string to_string(const TransferLimits& limits);

/// 8 MiB per file, 32 MiB in total, 64 files (C-22): the spec default *and* the meaning of a
/// silent backend, so a silent backend serves a silent spec.
inline constexpr TransferLimits kDefaultTransferLimits{8 * 1024 * 1024, 32 * 1024 * 1024, 64};

/// One TransferLimits per direction (C-23).
struct SandboxLimits {
  TransferLimits files_in = kDefaultTransferLimits;
  TransferLimits files_out = kDefaultTransferLimits;
  friend constexpr bool operator==(const SandboxLimits&, const SandboxLimits&) = default;
};

inline constexpr SandboxLimits kDefaultSandboxLimits{};

}  // namespace maf::sandbox
