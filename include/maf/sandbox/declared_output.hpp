#pragma once
/// @file declared_output.hpp
/// A file a workload promises to leave behind (C-83, C-85).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// LAND: delivered to the host's sink. CONSUME: counted against the caps but read by the
/// workload kind itself, never delivered.
enum class OutputDisposition { Land, Consume };

template <>
struct EnumTraits<OutputDisposition> {
  static constexpr std::string_view type_name = "OutputDisposition";
  static constexpr std::array<std::pair<OutputDisposition, std::string_view>, 2> values{{
      {OutputDisposition::Land, "land"},
      {OutputDisposition::Consume, "consume"},
  }};
};

constexpr std::string_view to_string(OutputDisposition d) noexcept { return enum_value(d); }

struct DeclaredOutput {
  std::string path{};  ///< literal (no glob), POSIX, relative to the working directory
  OutputDisposition disposition = OutputDisposition::Land;
  std::optional<std::string> media_type{};  ///< declared by the kind, never sniffed
  bool required = true;                   ///< false: absence is a normal outcome
  std::optional<std::string> name{};        ///< spelling it lands under; absent = path

  friend bool operator==(const DeclaredOutput&, const DeclaredOutput&) = default;
};

}  // namespace maf::sandbox
