#pragma once
/// @file os_family.hpp
/// The guest's OS shape (check #5 of docs/policy.md; C-19): path grammar and argv quoting only —
/// never a claim about what is installed.

#include <array>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

enum class OsFamily { Posix, Windows };

template <>
struct EnumTraits<OsFamily> {
  static constexpr std::string_view type_name = "OsFamily";
  static constexpr std::array<std::pair<OsFamily, std::string_view>, 2> values{{
      {OsFamily::Posix, "posix"},
      {OsFamily::Windows, "windows"},
  }};
};

constexpr std::string_view to_string(OsFamily f) noexcept { return enum_value(f); }
inline OsFamily parse_os_family(std::string_view text) { return parse_enum<OsFamily>(text); }

/// Silence (the empty set) is "no answer": it refuses only a spec that asks (C-65 #5).
using OsFamilySet = EnumSet<OsFamily>;

}  // namespace maf::sandbox
