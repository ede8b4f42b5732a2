#pragma once
// The freeze (D-21, D-22; docs/backends/docker.md "The freeze"): `docker pause` around every tar-plane operation, so a guest
// cannot swap a checked directory for a symlink between the check and the `docker cp`.
//
// One process-wide table of freeze slots, shared by every backend instance, keyed by (resolved endpoint,
// container name): two backends on one endpoint share claims, different endpoints never
// block each other. One container is never paused twice at once — a second pause would fail
// and the first unpause would lift the other call's freeze.
//
// Across processes (issue 54, docs/backends/docker.md "Replicas on one conversation"): the
// engine's pause is itself the lock — "already paused" means someone holds the freeze — and
// on one host a flock'd file per slot (host_lock.hpp) orders the processes and tells a dead
// holder from a live one. A freeze held elsewhere is waited for, bounded (`foreign_wait`);
// one whose holder on this host died is lifted at once, one standing longer than the bound
// with no holder on this host is taken as abandoned and lifted.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "maf/sandbox/support/async_mutex.hpp"
#include "maf/sandbox/docker/transport.hpp"

namespace maf::sandbox::docker::detail {

struct FreezeSlot {
  support::AsyncMutex mutex;
  /// Nonzero while a freeze taken by this process is live: the claim's generation.
  std::atomic<std::uint64_t> live_claim{0};
  /// An unpause failed; the next acquire must thaw before reuse ("The freeze").
  std::atomic<bool> possibly_frozen{false};
  /// When this process's last unpause of the container answered (steady clock, ns; 0 =
  /// never): the engine's paused flag may lag it (see freeze.cpp).
  std::atomic<std::int64_t> thawed_at{0};
  /// The host lock's name (endpoint and container); empty: no host lock (a test's slot).
  std::string host_lock_name{};
  /// How long a freeze held elsewhere is waited for: a pause standing this long with no
  /// holder on this host is recovered, and no call waits longer than this for its turn.
  std::chrono::milliseconds foreign_wait{std::chrono::seconds(120)};
  /// Issue 49: the container ID a Sandbox of this process paused (Sandbox::pause) and has not
  /// resumed; empty: none. Tar-plane calls on that very container run inside that freeze and
  /// an acquire of it refuses. Read and written under `mutex` only; a container recreated
  /// under the name (another ID) clears it.
  std::string held_pause_id{};
  /// `held_pause_id` is set: read by acquire without the mutex, so a pause whose engine flag
  /// still lags (freeze.cpp) sends the acquire to await_unfrozen all the same.
  std::atomic<bool> pause_held{false};
};

/// The slot for (endpoint, container), created on first use and kept for the process.
std::shared_ptr<FreezeSlot> freeze_slot(const std::string& endpoint, const std::string& container);

/// Pause, run `body`, unpause (also when `body` throws), all under the slot's mutex and the
/// host lock. A pause held by another process is waited for (see above), never an error
/// while it is lifted within the bound.
boost::asio::awaitable<void> run_frozen(DockerTransport& transport, FreezeSlot& slot, const std::string& container,
                                        const std::function<boost::asio::awaitable<void>()>& body);

/// At acquire (D-11): returns once the container is not frozen — a freeze of a live holder
/// waited out, one of a dead holder (this process's failed unpause, a process on this host
/// that died holding it, or one standing past `foreign_wait`) lifted. Throws OSError when a
/// recovery fails or the wait outlasts its bound.
boost::asio::awaitable<void> await_unfrozen(DockerTransport& transport, FreezeSlot& slot, const std::string& container);

/// The re-issue rule below for any kind of attempt: `attempt` makes one and answers whether
/// the engine refused it as paused; it is made again after this process's own freeze ends
/// (D-22), or once a freeze held elsewhere is lifted within `foreign_wait` (issue 54: the
/// refused command never started, so it runs once); a pause that stays past the bound has
/// its refusal returned. This returns once an attempt stands.
boost::asio::awaitable<void> retry_past_own_freeze(DockerTransport& transport, FreezeSlot& slot,
                                                   const std::string& container,
                                                   const std::function<boost::asio::awaitable<bool>()>& attempt);

/// Sandbox::pause (issue 49): take the freeze as run_frozen does — the slot's turn, the host
/// lock, `docker pause` — and keep the container frozen past this call (`held_pause_id`).
boost::asio::awaitable<void> hold_pause(DockerTransport& transport, FreezeSlot& slot, const std::string& container,
                                        const std::string& container_id);
/// Sandbox::resume: lift what hold_pause froze. A container no longer paused (an operator's
/// unpause, or one removed) is not an error: what resume wants is already so.
boost::asio::awaitable<void> release_pause(DockerTransport& transport, FreezeSlot& slot, const std::string& container);
/// Run a guest command under retry_past_own_freeze's rule.
/// `make_call` is asked again for each attempt so the remaining deadline is recomputed.
boost::asio::awaitable<ExecOutcome> exec_respecting_freeze(DockerTransport& transport, FreezeSlot& slot,
                                                           const std::function<ExecCall()>& make_call);

}  // namespace maf::sandbox::docker::detail
