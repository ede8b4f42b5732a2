#pragma once
/// @file resource_limits.hpp
/// Resource bounds a workload asks of its sandbox (issue 31, docs/limits.md): memory,
/// CPUs, process count, wall-clock lifetime (TTL) and idle timeout.
///
/// Every bound is optional: unset means "no bound asked" — the backend's own configuration
/// (if any) applies, and the router asks nothing of the backend for it. A bound that is set
/// is a demand: the router refuses a backend that does not declare it enforces that bound
/// (LIM-3, SandboxResourceBoundNotEnforced), never serving it unbounded.
///
/// Validated at construction (LIM-1): a value outside its range throws ValueError naming
/// the field and the value. The ranges (kMin…/kMax…) are the documented bounds of LIM-2.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// One kind of bound, as a backend declares it enforces it (BackendDeclarations::resource_bounds).
enum class ResourceBound {
  Memory,       ///< "memory": bytes of memory the sandbox's processes may use together
  Cpus,         ///< "cpus": CPU time per wall-clock time, in CPUs (0.5 = half of one)
  Processes,    ///< "processes": processes (tasks) alive in the sandbox at once
  Ttl,          ///< "ttl": the sandbox's wall-clock lifetime from creation
  IdleTimeout,  ///< "idle_timeout": the longest gap between uses before it expires
};

template <>
struct EnumTraits<ResourceBound> {
  static constexpr std::string_view type_name = "ResourceBound";
  static constexpr std::array<std::pair<ResourceBound, std::string_view>, 5> values{{
      {ResourceBound::Memory, "memory"},
      {ResourceBound::Cpus, "cpus"},
      {ResourceBound::Processes, "processes"},
      {ResourceBound::Ttl, "ttl"},
      {ResourceBound::IdleTimeout, "idle_timeout"},
  }};
};

constexpr std::string_view to_string(ResourceBound b) noexcept { return enum_value(b); }
using ResourceBoundSet = EnumSet<ResourceBound>;

/// The bounds of one spec. Immutable after construction; `ResourceLimits{}` asks nothing.
class ResourceLimits {
public:
  /// LIM-2 ranges. Below the minimum nothing meaningful runs (Docker itself refuses less
  /// than 6 MiB of memory; a shell and one child need more than two processes; a lifetime
  /// shorter than a cold acquire expires before the first command); above the maximum the
  /// value is a unit mistake, not a bound.
  static constexpr std::int64_t kMinMemoryBytes = 6 * 1024 * 1024;
  static constexpr std::int64_t kMaxMemoryBytes = std::int64_t{1} << 40;  // 1 TiB
  static constexpr double kMinCpus = 0.01;
  static constexpr double kMaxCpus = 1024;
  static constexpr std::int64_t kMinProcesses = 4;
  static constexpr std::int64_t kMaxProcesses = 4194304;  // the kernel's pid_max ceiling
  static constexpr std::chrono::seconds kMinLifetime{10};
  static constexpr std::chrono::seconds kMaxLifetime{30 * 24 * 3600};  // 30 days

  struct Fields {
    std::optional<std::int64_t> memory_bytes{};
    std::optional<double> cpus{};
    std::optional<std::int64_t> processes{};
    std::optional<std::chrono::seconds> ttl{};
    std::optional<std::chrono::seconds> idle_timeout{};
  };

  ResourceLimits() = default;
  /// Throws ValueError naming the field and its value when a set field is outside its
  /// LIM-2 range, or when idle_timeout exceeds ttl (it could never fire first).
  explicit ResourceLimits(Fields fields);

  const std::optional<std::int64_t>& memory_bytes() const noexcept { return f_.memory_bytes; }
  const std::optional<double>& cpus() const noexcept { return f_.cpus; }
  const std::optional<std::int64_t>& processes() const noexcept { return f_.processes; }
  const std::optional<std::chrono::seconds>& ttl() const noexcept { return f_.ttl; }
  const std::optional<std::chrono::seconds>& idle_timeout() const noexcept { return f_.idle_timeout; }
  const Fields& fields() const noexcept { return f_; }

  /// The bounds this value sets: what the router checks against the backend's declaration.
  ResourceBoundSet asked() const noexcept;
  bool empty() const noexcept { return asked().empty(); }

  /// "memory_bytes=536870912, cpus=1, processes=128, ttl=1800s" ("none" when empty).
  std::string to_string() const;

  friend bool operator==(const ResourceLimits& a, const ResourceLimits& b) noexcept {
    return a.f_.memory_bytes == b.f_.memory_bytes && a.f_.cpus == b.f_.cpus && a.f_.processes == b.f_.processes &&
           a.f_.ttl == b.f_.ttl && a.f_.idle_timeout == b.f_.idle_timeout;
  }

private:
  Fields f_;
};

}  // namespace maf::sandbox
