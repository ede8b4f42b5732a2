#pragma once
/// @file entry.hpp
/// What a guest path is (EntryKind; SandboxEntry, C-28).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// `Symlink` covers Windows junctions and reparse points; `Other` is a FIFO, socket, device
/// or an unrecognisable link.
enum class EntryKind { File, Directory, Symlink, Other };

template <>
struct EnumTraits<EntryKind> {
  static constexpr std::string_view type_name = "EntryKind";
  static constexpr std::array<std::pair<EntryKind, std::string_view>, 4> values{{
      {EntryKind::File, "file"},
      {EntryKind::Directory, "directory"},
      {EntryKind::Symlink, "symlink"},
      {EntryKind::Other, "other"},
  }};
};

constexpr std::string_view to_string(EntryKind k) noexcept { return enum_value(k); }

/// One guest entry, described without following it (C-28).
struct SandboxEntry {
  /// Relative to the call's working directory; "" for the directory itself.
  std::string path;
  EntryKind kind = EntryKind::Other;
  /// Absent = unknown, which fails closed: nothing of unknown size is read or counted as 0.
  /// Always absent for a link.
  std::optional<std::int64_t> size_bytes;

  friend bool operator==(const SandboxEntry&, const SandboxEntry&) = default;
};

}  // namespace maf::sandbox
