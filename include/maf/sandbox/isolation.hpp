#pragma once
/// @file isolation.hpp
/// The isolation ladder (C-1…C-4) and the isolation scope (C-13).
///
/// Rungs are ordered only through `meets_floor` / `stricter` (C-3); the rank integers are an
/// implementation detail and are never persisted. The legacy string "process" never parses
/// (C-2): it meant "no boundary" before 0.14, and reading it as either rung would silently
/// change a host's posture.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// How strong a boundary a backend draws, weakest first.
enum class Isolation {
  None,               ///< "none": no boundary; runs with host authority (tests, fakes)
  Runtime,            ///< "runtime": software boundary inside the host process
  OsProcess,          ///< "os_process": separate process, shared kernel and filesystem
  Container,          ///< "container": namespaces + cgroups
  HardenedContainer,  ///< "hardened_container": userspace-kernel syscall interception
  MicroVm,            ///< "microvm": hypervisor boundary; the default floor
  Vm,                 ///< "vm": dedicated full VM
};

template <>
struct EnumTraits<Isolation> {
  static constexpr std::string_view type_name = "Isolation";
  static constexpr std::array<std::pair<Isolation, std::string_view>, 7> values{{
      {Isolation::None, "none"},
      {Isolation::Runtime, "runtime"},
      {Isolation::OsProcess, "os_process"},
      {Isolation::Container, "container"},
      {Isolation::HardenedContainer, "hardened_container"},
      {Isolation::MicroVm, "microvm"},
      {Isolation::Vm, "vm"},
  }};
};

/// The default host floor (C-60).
inline constexpr Isolation kDefaultMinIsolation = Isolation::MicroVm;

constexpr std::string_view to_string(Isolation rung) noexcept { return enum_value(rung); }

/// Parse one of the seven values exactly; anything else (including "process") throws
/// ValueError saying the value is not a valid Isolation (C-1, C-2).
inline Isolation parse_isolation(std::string_view text) { return parse_enum<Isolation>(text); }

/// `declared` is at least as strong as `floor` (C-3).
constexpr bool meets_floor(Isolation declared, Isolation floor) noexcept {
  return static_cast<int>(declared) >= static_cast<int>(floor);
}

/// The stricter of two rungs (C-4).
constexpr Isolation stricter(Isolation a, Isolation b) noexcept { return meets_floor(a, b) ? a : b; }

/// The stricter of a floor and an optional opinion; absent means "no opinion" (C-4, C-66).
constexpr Isolation stricter(Isolation floor, std::optional<Isolation> opinion) noexcept {
  return opinion ? stricter(floor, *opinion) : floor;
}

/// "none < runtime < os_process < ..." — the ladder weakest-first, for refusal messages.
std::string isolation_ladder_text();

/// How much of a conversation one sandbox serves (C-13): one per (key, kind) across calls,
/// or one per tool call.
enum class IsolationScope { Conversation, Call };

template <>
struct EnumTraits<IsolationScope> {
  static constexpr std::string_view type_name = "IsolationScope";
  static constexpr std::array<std::pair<IsolationScope, std::string_view>, 2> values{{
      {IsolationScope::Conversation, "conversation"},
      {IsolationScope::Call, "call"},
  }};
};

constexpr std::string_view to_string(IsolationScope s) noexcept { return enum_value(s); }
inline IsolationScope parse_isolation_scope(std::string_view text) {
  return parse_enum<IsolationScope>(text);
}
/// The stricter scope: CALL is stricter than CONVERSATION (C-13).
constexpr IsolationScope stricter(IsolationScope a, IsolationScope b) noexcept {
  return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

using IsolationScopeSet = EnumSet<IsolationScope>;

}  // namespace maf::sandbox
