#pragma once
/// @file enum.hpp
/// Canonical-string enums and a small allocation-free set over them.
///
/// Every vocabulary enum has exactly one lowercase string ("value"); parsing is exact and
/// case-sensitive (docs/policy.md "Core rules (C-n)", Conventions). `EnumSet<E>` is a bit mask
/// so policy checks never allocate, and it prints sorted by value, as every message in the spec
/// wants.

#include <array>
#include <bit>
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {

/// Specialise for each vocabulary enum: `type_name` and `values` (member, canonical string).
template <class E>
struct EnumTraits;

/// The canonical value of a member.
template <class E>
constexpr std::string_view enum_value(E member) noexcept {
  for (const auto& [m, text] : EnumTraits<E>::values)
    if (m == member) return text;
  return "?";
}

/// Parse exactly one canonical value; nullopt for anything else.
template <class E>
constexpr std::optional<E> try_parse_enum(std::string_view text) noexcept {
  for (const auto& [m, value] : EnumTraits<E>::values)
    if (value == text) return m;
  return std::nullopt;
}

/// Parse exactly one canonical value, or throw ValueError naming the value and the type.
template <class E>
E parse_enum(std::string_view text) {
  if (auto m = try_parse_enum<E>(text)) return *m;
  std::string valid;
  for (const auto& [m, value] : EnumTraits<E>::values) {
    if (!valid.empty()) valid += ", ";
    valid += value;
  }
  throw ValueError("'" + std::string(text) + "' is not a valid " +
                   std::string(EnumTraits<E>::type_name) + " (valid: " + valid + ")");
}

namespace detail {
template <class E>
constexpr auto sort_enum_table() noexcept {
  auto table = EnumTraits<E>::values;
  for (std::size_t i = 1; i < table.size(); ++i)
    for (std::size_t j = i; j > 0 && table[j].second < table[j - 1].second; --j) {
      auto tmp = table[j];
      table[j] = table[j - 1];
      table[j - 1] = tmp;
    }
  return table;
}
/// The members of E in canonical-value order, computed at compile time.
template <class E>
inline constexpr auto sorted_enum_table = sort_enum_table<E>();
}  // namespace detail

/// A set of enum members, stored as a bit mask (no allocation). Iteration and printing are in
/// canonical-value order.
template <class E>
class EnumSet {
public:
  static constexpr std::size_t capacity = EnumTraits<E>::values.size();

  constexpr EnumSet() noexcept = default;
  constexpr EnumSet(std::initializer_list<E> members) noexcept {
    for (E m : members) insert(m);
  }

  constexpr void insert(E m) noexcept { bits_ |= bit(m); }
  constexpr void erase(E m) noexcept { bits_ &= ~bit(m); }
  constexpr bool contains(E m) const noexcept { return (bits_ & bit(m)) != 0; }
  constexpr bool empty() const noexcept { return bits_ == 0; }
  constexpr std::size_t size() const noexcept {
    return static_cast<std::size_t>(std::popcount(bits_));
  }
  /// Every member of this set is a member of `other`.
  constexpr bool subset_of(EnumSet other) const noexcept { return (bits_ & ~other.bits_) == 0; }
  constexpr EnumSet intersection(EnumSet other) const noexcept { return from_bits(bits_ & other.bits_); }
  constexpr EnumSet difference(EnumSet other) const noexcept { return from_bits(bits_ & ~other.bits_); }
  constexpr EnumSet united(EnumSet other) const noexcept { return from_bits(bits_ | other.bits_); }
  friend constexpr bool operator==(EnumSet, EnumSet) noexcept = default;

  /// Members sorted by canonical value.
  std::vector<E> sorted() const {
    std::vector<E> out;
    for (const auto& [m, text] : sorted_table())
      if (contains(m)) out.push_back(m);
    return out;
  }

  /// Canonical values sorted and joined with ", "; `if_empty` when there are none.
  std::string to_string(std::string_view if_empty = "") const {
    std::string out;
    for (const auto& [m, text] : sorted_table()) {
      if (!contains(m)) continue;
      if (!out.empty()) out += ", ";
      out += text;
    }
    return out.empty() ? std::string(if_empty) : out;
  }

  /// Parse each value (ValueError on the first unknown one).
  template <class Range>
  static EnumSet parse(const Range& values) {
    EnumSet s;
    for (const auto& v : values) s.insert(parse_enum<E>(std::string_view(v)));
    return s;
  }

  constexpr unsigned long long bits() const noexcept { return bits_; }

private:
  static_assert(EnumTraits<E>::values.size() <= 64);
  static constexpr unsigned long long bit(E m) noexcept {
    return 1ULL << static_cast<unsigned>(m);
  }
  static constexpr EnumSet from_bits(unsigned long long b) noexcept {
    EnumSet s;
    s.bits_ = b;
    return s;
  }
  static constexpr const auto& sorted_table() noexcept { return detail::sorted_enum_table<E>; }
  unsigned long long bits_ = 0;
};

}  // namespace maf::sandbox
