#pragma once
/// @file content_labels.hpp
/// Information-flow labels (docs/host-tools.md, "Labels"): what a piece of content may do in
/// the conversation. Content items carry them (tool.hpp); host-tool declarations name the
/// integrity of what a function brings in (host_tools.hpp). Apart from tool.hpp so the spec,
/// which carries the host-tool aggregate, stays free of JSON.

#include <array>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// Whether content may steer the model (trusted) or must be treated as data (untrusted).
enum class Integrity { Trusted, Untrusted };
/// Whether content may leave the conversation (public) or not (private).
enum class Confidentiality { Public, Private };

template <>
struct EnumTraits<Integrity> {
  static constexpr std::string_view type_name = "Integrity";
  static constexpr std::array<std::pair<Integrity, std::string_view>, 2> values{{
      {Integrity::Trusted, "trusted"},
      {Integrity::Untrusted, "untrusted"},
  }};
};
template <>
struct EnumTraits<Confidentiality> {
  static constexpr std::string_view type_name = "Confidentiality";
  static constexpr std::array<std::pair<Confidentiality, std::string_view>, 2> values{{
      {Confidentiality::Public, "public"},
      {Confidentiality::Private, "private"},
  }};
};
constexpr std::string_view to_string(Integrity i) noexcept { return enum_value(i); }
constexpr std::string_view to_string(Confidentiality c) noexcept { return enum_value(c); }

/// The information-flow labels of one content item. Defaults are the guest-output claim.
struct ContentLabels {
  Integrity integrity = Integrity::Untrusted;
  Confidentiality confidentiality = Confidentiality::Private;
  friend bool operator==(const ContentLabels&, const ContentLabels&) = default;
};

/// What the library itself authors (refusal sentences, fixed guidance): trusted and public.
inline constexpr ContentLabels kLibraryAuthoredLabels{Integrity::Trusted, Confidentiality::Public};

}  // namespace maf::sandbox
