#pragma once
/// @file artifact.hpp
/// One collected output on its way to the host, and what a sink made of it (C-29, C-30).
/// Apart from sink.hpp so the light entry (<maf/sandbox.hpp>) can name them.

#include <optional>
#include <string>

namespace maf::sandbox {

/// One collected output on its way to the host (C-29).
struct Artifact {
  std::string name;     ///< the delivered name (validated, normalised per the sink)
  std::string content;  ///< opaque bytes
  std::string kind;     ///< the spec's workload kind
  std::optional<std::string> media_type{};  ///< as declared, never sniffed
};

/// What a sink made of an artifact (C-30). `handle` is the host's private reference and the
/// library never renders it.
struct LandedArtifact {
  std::string name;
  std::string display;  ///< the one line a model may see
  std::optional<std::string> handle{};
};

}  // namespace maf::sandbox
