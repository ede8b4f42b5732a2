#pragma once
/// @file between_calls.hpp
/// What a conversation's sandbox keeps between its tool calls — the cleanup rung
/// (cleanup.hpp) named for what survives rather than for what is removed (docs/tools.md
/// "What survives a call"). Light: no Asio, no JSON.
///
/// | Choice            | Rung    | Files outside the call directory | Processes | The call directory |
/// |-------------------|---------|----------------------------------|-----------|--------------------|
/// | `KeepSandbox`     | Reclaim | kept                             | kept      | removed            |
/// | `RestoreSnapshot` | Reset   | back to the acquire-time state   | ended     | removed            |
/// | `FreshSandbox`    | Dispose | gone (a new sandbox next call)   | ended     | removed            |
///
/// To keep files across a conversation's calls, choose `KeepSandbox` and write outside
/// `SandboxToolSession::guest_call_path()` (the standard tools write relative to the work
/// directory, so they do).

#include "maf/sandbox/cleanup.hpp"

namespace maf::sandbox {

enum class BetweenCalls {
  /// The sandbox stays for the conversation: only each call's own directory is removed
  /// (Cleanup::Reclaim; the backend declares RECLAIM).
  KeepSandbox,
  /// Each call starts from the sandbox as it was acquired (Cleanup::Reset; SNAPSHOT).
  RestoreSnapshot,
  /// Each call gets a new sandbox (Cleanup::Dispose; every backend).
  FreshSandbox,
};

/// The cleanup rung of a choice.
constexpr Cleanup rung_for(BetweenCalls choice) noexcept {
  switch (choice) {
    case BetweenCalls::KeepSandbox: return Cleanup::Reclaim;
    case BetweenCalls::RestoreSnapshot: return Cleanup::Reset;
    case BetweenCalls::FreshSandbox: break;
  }
  return Cleanup::Dispose;
}

}  // namespace maf::sandbox
