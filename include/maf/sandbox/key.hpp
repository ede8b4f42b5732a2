#pragma once
/// @file key.hpp
/// SandboxKey (C-14, C-15): who a sandbox belongs to.
///
/// Every field comes from the host's request context, never from model input (C-14). A
/// sandbox's full identity is (key, spec.kind) (C-15); a backend folds *every* field,
/// `call_id` included, into whatever names the sandbox.

#include <cstddef>
#include <string>
#include <utility>

namespace maf::sandbox {

/// Not an aggregate, on purpose (AGENT-1, docs/tools.md "GCC 12 and temporaries"): GCC 12
/// destroys a braced *aggregate* temporary of a co_await expression twice, so the constructor
/// is what makes `co_await router.acquire(SandboxKey{"s", "t", "a"}, spec)` safe. Positional,
/// in field order: scope, thread, agent, call.
struct SandboxKey {
  SandboxKey() = default;
  SandboxKey(std::string scope_of, std::string thread_of, std::string agent_of = {}, std::string call_of = {})
      : scope(std::move(scope_of)),
        thread_id(std::move(thread_of)),
        agent_id(std::move(agent_of)),
        call_id(std::move(call_of)) {}

  std::string scope{};      ///< host user / tenant scope
  std::string thread_id{};  ///< conversation id
  std::string agent_id{};   ///< one agent; two agents in a conversation never share a filesystem
  std::string call_id{};    ///< empty for conversation scope; names the tool call for CALL scope

  friend bool operator==(const SandboxKey&, const SandboxKey&) = default;
};

/// Hash over every field (C-14).
struct SandboxKeyHash {
  std::size_t operator()(const SandboxKey& key) const noexcept;
};

/// "scope/thread/agent[/call]" for logs and messages.
std::string to_string(const SandboxKey& key);

}  // namespace maf::sandbox

template <>
struct std::hash<maf::sandbox::SandboxKey> : maf::sandbox::SandboxKeyHash {};
