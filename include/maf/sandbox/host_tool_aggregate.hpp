#pragma once
/// @file host_tool_aggregate.hpp
/// What a sealed HostToolRegistry means for the spec of the tool whose guest code calls it
/// (docs/host-tools.md, HT-R5). `SandboxSpec::Fields::host_tools` carries one: the spec then
/// requires HOST_TOOLS, and `SandboxSpec::identities()` is its `identities`, which the
/// router's `denied_identities` checks (C-65 #2). Plain data, so the spec stays light.

#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/content_labels.hpp"

namespace maf::sandbox {

struct HostToolAggregate {
  /// Every registered name, sorted: the whole surface the guest can reach.
  std::vector<std::string> names{};
  /// The weakest integrity over the tools that bring something in (an undeclared tool
  /// counts as untrusted); absent when no tool is a source.
  std::optional<Integrity> result_integrity{};
  /// Every declared sink, verbatim, sorted and unique: host vocabulary, never ranked here.
  std::vector<std::string> outbound_caps{};
  /// Whose authority the tools exercise (an undeclared tool counts as APP).
  IdentitySet identities{};
  /// A USER tool is present: the enclosing tool call must be approved.
  bool requires_approval = false;
  /// The registry serves tools nobody declared (require_declared was off).
  bool has_undeclared = false;

  friend bool operator==(const HostToolAggregate&, const HostToolAggregate&) = default;
};

}  // namespace maf::sandbox
