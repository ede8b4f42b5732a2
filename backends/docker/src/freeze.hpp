#pragma once
// The freeze (D-21, D-22; docs/backends/docker.md "The freeze"): `docker pause` around every tar-plane operation, so a guest
// cannot swap a checked directory for a symlink between the check and the `docker cp`.
//
// One process-wide table of freeze slots, shared by every backend instance, keyed by (resolved endpoint,
// container name): two backends on one endpoint share claims, different endpoints never
// block each other. One container is never paused twice at once — a second pause would fail
// and the first unpause would lift the other call's freeze.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <atomic>
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
};

/// The slot for (endpoint, container), created on first use and kept for the process.
std::shared_ptr<FreezeSlot> freeze_slot(const std::string& endpoint, const std::string& container);

/// Pause, run `body`, unpause (also when `body` throws), all under the slot's mutex.
boost::asio::awaitable<void> run_frozen(DockerTransport& transport, FreezeSlot& slot, const std::string& container,
                                        const std::function<boost::asio::awaitable<void>()>& body);

/// The re-issue rule below for any kind of attempt: `attempt` makes one and answers whether
/// the engine refused it as paused; it is made again only when this process's own freeze
/// covered the refusal (D-22), and this returns once an attempt stands.
boost::asio::awaitable<void> retry_past_own_freeze(DockerTransport& transport, FreezeSlot& slot,
                                                   const std::string& container,
                                                   const std::function<boost::asio::awaitable<bool>()>& attempt);

/// Run a guest command, re-issuing a paused refusal only when this process's own freeze
/// covered the whole attempt (D-22); otherwise the refusal is returned unchanged.
/// `make_call` is asked again for each attempt so the remaining deadline is recomputed.
boost::asio::awaitable<ExecOutcome> exec_respecting_freeze(DockerTransport& transport, FreezeSlot& slot,
                                                           const std::function<ExecCall()>& make_call);

}  // namespace maf::sandbox::docker::detail
