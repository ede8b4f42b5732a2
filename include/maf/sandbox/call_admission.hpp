#pragma once
/// @file call_admission.hpp
/// Call admission per (key, kind) (docs/tools.md "Call admission"): the vocabulary of SandboxRouter's
/// `admit_call` / `release_call`, which `SandboxedTool` uses and a host that admits directly
/// uses the same way.
///
/// A (key, kind) is SERVING (calls enter; ordinary calls overlap), DRAINING (a rung above
/// RECLAIM is owed: running calls finish, new ones wait) or CLEANING (the last call out runs
/// the owed records; the state changes before its first await, so no newcomer slips in).
/// Exclusive calls run one at a time, their cleanup included. RECLAIM runs at once, inside the
/// releasing call's admission. Owed records are keyed by (backend, instance_id) and keep the
/// stronger rung; a disposal is narrowed to the kind and the instance (C-72).
///
/// A failed cleanup marks the key unclean (FailedReclaimPolicy::Refuse): the router refuses
/// to acquire it, with SandboxKeyUnclean naming the key and target, until a disposal of that
/// target lands; `dispose_unclean` retries the recorded targets (docs/tools.md).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/cleanup.hpp"
#include "maf/sandbox/key.hpp"

namespace maf::sandbox {

namespace detail {
class CallAdmission;
struct AdmissionGate;
}  // namespace detail

/// How one call asks to be admitted.
struct AdmitOptions {
  /// One call at a time for this (key, kind), cleanup included (a kind that asks).
  bool exclusive = false;
  /// A waiter not admitted within this gets TimeoutError naming key, kind and the state.
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
  /// For observation only, never part of the key: the tool call this admission serves. When
  /// `call_id` is set and the call has to wait, the router reports a ToolCallEvent `queued`
  /// naming both (docs/observability.md).
  std::string tool{};
  std::string call_id{};
};

/// Proof of admission; move-only. Give it back with `SandboxRouter::release_call`. One
/// destroyed unreleased (a host's bug, or a frame torn down) releases itself without
/// cleanup I/O: any cleanup it would have had to run marks the key unclean instead, so the
/// gate never wedges and nothing is silently reused.
class CallTicket {
public:
  CallTicket() = default;
  CallTicket(CallTicket&& other) noexcept;
  CallTicket& operator=(CallTicket&& other) noexcept;
  CallTicket(const CallTicket&) = delete;
  CallTicket& operator=(const CallTicket&) = delete;
  ~CallTicket();

  bool valid() const noexcept { return gate_ != nullptr; }
  const SandboxKey& key() const noexcept { return key_; }
  const std::string& kind() const noexcept { return kind_; }
  bool exclusive() const noexcept { return exclusive_; }

private:
  friend class detail::CallAdmission;
  CallTicket(std::shared_ptr<detail::CallAdmission> admission, std::shared_ptr<detail::AdmissionGate> gate,
             SandboxKey key, std::string kind, bool exclusive);
  std::shared_ptr<detail::CallAdmission> admission_;
  std::shared_ptr<detail::AdmissionGate> gate_;
  SandboxKey key_;
  std::string kind_;
  bool exclusive_ = false;
};

/// One rung a call owes one sandbox. RECLAIM needs `directory` (absolute) and runs at once;
/// RESET and DISPOSE are owed to the (key, kind) and run when its last call is out.
struct OwedCleanup {
  Cleanup rung = Cleanup::Dispose;
  std::shared_ptr<Sandbox> sandbox;
  std::string directory{};
  FailedReclaimPolicy on_failure = FailedReclaimPolicy::Refuse;
};

/// A rung that did not happen, as `release_call` reports it.
struct CleanupFailure {
  SandboxKey key;
  std::string kind;
  std::string backend;
  std::string instance_id;
  Cleanup rung = Cleanup::Dispose;
  std::string reason;
};

/// A target whose cleanup failed: its key is refused until a disposal of it lands.
struct UncleanTarget {
  SandboxKey key;
  std::string backend;
  std::string kind;
  std::string instance_id;
  std::string reason;
  friend bool operator==(const UncleanTarget&, const UncleanTarget&) = default;
};

}  // namespace maf::sandbox
