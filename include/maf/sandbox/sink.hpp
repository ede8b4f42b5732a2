#pragma once
/// @file sink.hpp
/// Where landed outputs go (C-31, C-94).
///
/// A sink refuses by throwing, never by a return value (C-31). It carries no
/// confidentiality cap: caps are applied before delivery, by collect_outputs.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <array>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "maf/sandbox/artifact.hpp"
#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// How a sink wants names spelled: NFC-normalised (the default) or exactly as declared.
enum class NameNormalization { Nfc, None };

template <>
struct EnumTraits<NameNormalization> {
  static constexpr std::string_view type_name = "NameNormalization";
  static constexpr std::array<std::pair<NameNormalization, std::string_view>, 2> values{{
      {NameNormalization::Nfc, "nfc"},
      {NameNormalization::None, "none"},
  }};
};

class OutputSink {
public:
  virtual ~OutputSink() = default;
  /// Deliver one artifact or throw (C-31).
  virtual boost::asio::awaitable<LandedArtifact> deliver(Artifact artifact) = 0;
  virtual NameNormalization normalization() const noexcept { return NameNormalization::Nfc; }
};

/// Renders the display line; default "<name> (<N> bytes)".
using DisplayFormatter = std::function<std::string(const Artifact&, const std::filesystem::path& destination)>;

/// C-94: lands artifacts as files under `root` (resolved once, now). Each delivery resolves
/// root/name following links; a destination outside the root throws
/// SandboxLandingNotConfined naming only the artifact; parents are created; files replaced.
/// A check, not a guarantee: resolve and write are two steps.
std::shared_ptr<OutputSink> make_file_system_sink(const std::filesystem::path& root,
                                                  DisplayFormatter display = {});

}  // namespace maf::sandbox
