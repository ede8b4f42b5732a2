#pragma once
/// @file caller_context.hpp
/// CallerContext (C-16, C-17): how the library asks the host "who is calling?".
///
/// Each member is a callable invoked at call time, never a captured value (C-16), so a
/// context built once serves every request. An absent thread id means "no bound
/// conversation" and refuses the call (C-17).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/key.hpp"

namespace maf::sandbox {

struct CallerContext {
  std::function<std::string()> current_scope;
  std::function<std::optional<std::string>()> current_thread_id;
  /// Lists a host store; a failure propagates (never turned into an empty listing).
  std::function<boost::asio::awaitable<std::vector<std::string>>(std::string store)> list_files;
};

/// The key for the current call: reads scope and thread now; throws ValueError when no
/// conversation is bound (C-17) — no placeholder key is ever synthesised.
SandboxKey key_for_call(const CallerContext& context, std::string agent_id, std::string call_id = {});

}  // namespace maf::sandbox
