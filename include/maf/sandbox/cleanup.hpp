#pragma once
/// @file cleanup.hpp
/// The cleanup ladder a tool call ends on (docs/tools.md "The cleanup ladder") and what is reported when a rung
/// did not happen. Light: no Asio, no JSON — a host states its cleanup policy with it.
///
/// Weakest first: RECLAIM removes the call's own directory (other files and processes the
/// call left stay), RESET restores the sandbox's acquire-time snapshot, DISPOSE deletes the
/// sandbox. A tool disposes after each call unless the host chooses otherwise
/// (docs/tools.md "The cleanup ladder").

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"
#include "maf/sandbox/key.hpp"

namespace maf::sandbox {

/// The rung run after a call, weakest first. Order matters: `stronger` keeps the higher one.
enum class Cleanup {
  Reclaim,  ///< "reclaim": remove the call's directory; needs the backend's RECLAIM and a host opt-in
  Reset,    ///< "reset": restore the acquire-time snapshot; needs SNAPSHOT
  Dispose,  ///< "dispose": delete the sandbox; the default, and always so for IsolationScope::Call
};

template <>
struct EnumTraits<Cleanup> {
  static constexpr std::string_view type_name = "Cleanup";
  static constexpr std::array<std::pair<Cleanup, std::string_view>, 3> values{{
      {Cleanup::Reclaim, "reclaim"},
      {Cleanup::Reset, "reset"},
      {Cleanup::Dispose, "dispose"},
  }};
};

constexpr std::string_view to_string(Cleanup c) noexcept { return enum_value(c); }
inline Cleanup parse_cleanup(std::string_view text) { return parse_enum<Cleanup>(text); }

/// The stronger of two rungs (an owed record keeps it: docs/tools.md "Call admission").
constexpr Cleanup stronger(Cleanup a, Cleanup b) noexcept {
  return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

/// What a failed cleanup does to its key (docs/tools.md "Unclean keys"). Refuse: the key is marked unclean and the
/// router refuses it until a disposal lands. Keep: the host's explicit choice to accept
/// reuse of a sandbox whose cleanup failed (the failure is still logged and reported).
enum class FailedReclaimPolicy { Refuse, Keep };

/// A tool call's own guest path that may still be in a sandbox, and why (C-120). What
/// `on_reclaim_failure` receives. A data-retention failure: a later call in that sandbox
/// could read what is left.
struct ReclaimFailure {
  std::string tool;    ///< the tool's name, as the model sees it
  SandboxKey key;      ///< the sandbox it is in (always one the call acquired)
  std::string path;    ///< the absolute guest path still there, with everything under it
  std::string reason;  ///< why the removal did not happen, in the library's words
  friend bool operator==(const ReclaimFailure&, const ReclaimFailure&) = default;
};

}  // namespace maf::sandbox
