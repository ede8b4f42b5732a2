#pragma once
// The admission state machine of docs/tools.md "Call admission", without I/O: SandboxRouter runs the owed
// cleanup it hands back (src/policy/router.cpp). One std::mutex guards every gate; a waiter parks on
// a timer of its own executor, and every touch of that timer happens under the mutex (the
// hand-over may run on another thread between the queueing and the wait — the AsyncMutex
// pattern of support/async_mutex.hpp, with a deadline).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "maf/sandbox/call_admission.hpp"

namespace maf::sandbox::detail {

enum class GateState { Serving, Draining, Cleaning };
const char* to_string(GateState state) noexcept;

struct AdmissionWaiter {
  AdmissionWaiter(const boost::asio::any_io_executor& executor, std::chrono::steady_clock::time_point deadline,
                  bool exclusive_call)
      : timer(executor, deadline), exclusive(exclusive_call) {}
  boost::asio::steady_timer timer;  // guarded by CallAdmission::mutex_, like the flag
  bool exclusive;
  bool admitted = false;
};

/// One (key, kind). Owed records by (backend, instance_id), the stronger rung kept.
struct AdmissionGate {
  SandboxKey key;
  std::string kind;
  GateState state = GateState::Serving;
  int active = 0;
  bool exclusive_active = false;
  std::deque<std::shared_ptr<AdmissionWaiter>> waiters;
  std::map<std::pair<std::string, std::string>, OwedCleanup> owed;
};

/// What a release hands its caller: the records to run now (the gate is CLEANING until
/// finish_cleaning), or none.
struct ReleaseOutcome {
  std::shared_ptr<AdmissionGate> gate;
  std::vector<OwedCleanup> to_run;
};

class CallAdmission : public std::enable_shared_from_this<CallAdmission> {
public:
  /// `on_wait` runs (outside the lock, on the caller's thread) when the call has to wait.
  boost::asio::awaitable<CallTicket> admit(SandboxKey key, std::string kind, AdmitOptions options,
                                           std::function<void()> on_wait = {});
  /// Consumes the ticket; `owed` holds RESET/DISPOSE records only.
  ReleaseOutcome release(CallTicket& ticket, std::vector<OwedCleanup> owed);
  /// The last call out ran the records: serve again and admit the waiters.
  void finish_cleaning(const std::shared_ptr<AdmissionGate>& gate);
  /// A ticket destroyed unreleased: release it; cleanup it would have had to run marks the
  /// key unclean instead (no I/O from a destructor).
  void release_abandoned(CallTicket& ticket) noexcept;

  void mark_unclean(UncleanTarget target);
  /// A disposal landed for (key, kind, instance): its targets are clean again. Absent kind or
  /// instance = every kind / instance of the key.
  void clear_unclean(const SandboxKey& key, const std::optional<std::string>& kind,
                     const std::optional<std::string>& instance_id);
  void clear_unclean_scope(const std::string& scope, const std::string& thread_id);
  std::vector<UncleanTarget> unclean() const;
  /// SandboxKeyUnclean naming key and the first target, or nothing.
  void refuse_if_unclean(const SandboxKey& key) const;

private:
  struct GateId {
    SandboxKey key;
    std::string kind;
    friend bool operator==(const GateId&, const GateId&) = default;
  };
  struct GateIdHash {
    std::size_t operator()(const GateId& id) const noexcept;
  };

  std::shared_ptr<AdmissionGate> gate_locked(const SandboxKey& key, const std::string& kind);
  static bool fits(const AdmissionGate& gate, bool exclusive) noexcept;
  static void enter_locked(AdmissionGate& gate, bool exclusive) noexcept;
  /// Admit waiters from the front while they fit (FIFO: an exclusive waiter at the front
  /// holds back the ordinary ones behind it, so it is not starved).
  static void admit_waiters_locked(AdmissionGate& gate);
  void forget_if_idle_locked(const std::shared_ptr<AdmissionGate>& gate);
  ReleaseOutcome release_locked(CallTicket& ticket, std::vector<OwedCleanup> owed);
  void mark_unclean_locked(UncleanTarget target);

  mutable std::mutex mutex_;
  std::unordered_map<GateId, std::shared_ptr<AdmissionGate>, GateIdHash> gates_;
  std::vector<UncleanTarget> unclean_;
};

}  // namespace maf::sandbox::detail
