#pragma once
/// @file snapshot.hpp
/// The snapshot fidelity ladder (docs/snapshots.md SNAP-1…SNAP-4) and what a snapshot is.
///
/// Shaped exactly like the isolation ladder (isolation.hpp): a backend declares the one rung
/// its snapshots keep (`BackendDeclarations::snapshot_fidelity`), a spec asks a minimum
/// (`SandboxSpec::Fields::min_snapshot_fidelity`), and the router — and a direct acquire —
/// refuses a backend below it with SandboxSnapshotFidelityNotSupported, never substituting a
/// weaker snapshot. Rungs are ordered only through `meets_fidelity`; the rank integers are an
/// implementation detail and never persisted.

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// What a snapshot keeps, least first. Each rung keeps everything the one below keeps.
enum class SnapshotFidelity {
  WorkTree,    ///< "work_tree": the files under the sandbox's storage base
  Filesystem,  ///< "filesystem": every file the guest can change, anywhere in its tree
  Memory,      ///< "memory": the filesystem and the running processes with their memory
};

template <>
struct EnumTraits<SnapshotFidelity> {
  static constexpr std::string_view type_name = "SnapshotFidelity";
  static constexpr std::array<std::pair<SnapshotFidelity, std::string_view>, 3> values{{
      {SnapshotFidelity::WorkTree, "work_tree"},
      {SnapshotFidelity::Filesystem, "filesystem"},
      {SnapshotFidelity::Memory, "memory"},
  }};
};

constexpr std::string_view to_string(SnapshotFidelity f) noexcept { return enum_value(f); }

/// Parse one of the three values exactly; anything else throws ValueError naming it.
inline SnapshotFidelity parse_snapshot_fidelity(std::string_view text) { return parse_enum<SnapshotFidelity>(text); }

/// `declared` keeps at least what `asked` needs (SNAP-1).
constexpr bool meets_fidelity(SnapshotFidelity declared, SnapshotFidelity asked) noexcept {
  return static_cast<int>(declared) >= static_cast<int>(asked);
}

/// "work_tree < filesystem < memory" — the ladder least-first, for refusal messages.
std::string snapshot_fidelity_ladder_text();

/// One snapshot a sandbox holds (Sandbox::snapshot). Owned by the sandbox: its disposal,
/// the conversation's purge and reap remove it, and it is gone after `expires_at` (SNAP-6).
struct SnapshotInfo {
  /// Names the snapshot to restore, fork and release; unique within its sandbox.
  std::string id;
  /// What it kept — the backend's declared rung, never more (SNAP-3).
  SnapshotFidelity fidelity = SnapshotFidelity::WorkTree;
  /// Bytes it holds, as counted against the backend's snapshot budget (SNAP-7).
  std::int64_t size_bytes = 0;
  /// When it stops being restorable (its TTL from the moment it was taken).
  std::chrono::system_clock::time_point expires_at{};
};

}  // namespace maf::sandbox
