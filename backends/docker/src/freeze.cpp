// The freeze slots and protocol (D-21, D-22; docs/backends/docker.md "The freeze").
#include "freeze.hpp"

#include <boost/algorithm/string/predicate.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <chrono>
#include <exception>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "host_lock.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/sleep.hpp"

namespace maf::sandbox::docker::detail {

std::shared_ptr<FreezeSlot> freeze_slot(const std::string& endpoint, const std::string& container) {
  static std::mutex guard;
  static std::map<std::pair<std::string, std::string>, std::shared_ptr<FreezeSlot>> slots;
  std::lock_guard lock(guard);
  auto& slot = slots[{endpoint, container}];
  if (!slot) {
    slot = std::make_shared<FreezeSlot>();
    slot->host_lock_name = "freeze\n" + endpoint + "\n" + container;
  }
  return slot;
}

namespace {
std::atomic<std::uint64_t> g_generation{0};

// The engine answers pause and unpause once containerd has frozen or thawed the container,
// but flips its own "paused" flag only when containerd's event arrives (moby daemon/
// monitor.go; 20.10 under load: a pause right after our unpause refused "already paused").
// So, within kFlagLag of this process's own pause or unpause, a refusal that only that lag
// explains is asked again every kFlagPoll: a pause refused "already paused" just after our
// unpause, and an unpause refused "is not paused" just after our pause; an exec refused as
// paused just after our unpause is re-issued once the flag clears (exec_respecting_freeze).
// Outside the window, or when the pause stays, a refusal stands (a foreign pause).
constexpr std::chrono::seconds kFlagLag{2};
constexpr std::chrono::milliseconds kFlagPoll{20};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool within_lag(std::int64_t since_ns) {
  return since_ns != 0 && now_ns() - since_ns < std::chrono::duration_cast<std::chrono::nanoseconds>(kFlagLag).count();
}

enum class FlagCall { Pause, Unpause };

// Pause or unpause, asked again while the engine's flag lags `since_ns` (our own last
// change of it) and the refusal says exactly that.
boost::asio::awaitable<void> call_through_lag(DockerTransport& transport, std::string container, FlagCall which,
                                              std::int64_t since_ns) {
  const char* lag_text = which == FlagCall::Pause ? "already paused" : "is not paused";
  for (;;) {
    bool lagging = false;
    try {
      if (which == FlagCall::Pause) co_await transport.pause(container);
      else co_await transport.unpause(container);
      co_return;
    } catch (const OSError& e) {
      if (!boost::algorithm::icontains(std::string_view(e.what()), lag_text) || !within_lag(since_ns)) throw;
      lagging = true;
    }
    if (lagging) co_await support::sleep_for(kFlagPoll);
  }
}

}  // namespace

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kThawPoll{20};
// How long an exec's start keeps freezes off (a start takes ~0.1 s; under load, more).
constexpr std::chrono::seconds kExecStartWindow{5};

std::string seconds_of(std::chrono::milliseconds d) { return std::to_string(d.count() / 1000.0).substr(0, 5) + " s"; }

/// The host lock of `slot` (none for a slot without a name), waited for until `deadline`.
boost::asio::awaitable<std::optional<HostLock>> take_host_lock(const FreezeSlot& slot, const std::string& container,
                                                              Clock::time_point deadline) {
  if (slot.host_lock_name.empty()) co_return std::nullopt;
  co_return co_await wait_for_host_lock(slot.host_lock_name, deadline, "the freeze of container " + container);
}

boost::asio::awaitable<void> recover(DockerTransport& transport, const std::string& container, const std::string& why) {
  logger()->warn("backend 'docker': lifting the freeze of container {}: {}", container, why);
  try {
    co_await transport.unpause(container);
  } catch (const OSError& e) {
    // Someone lifted it between our read and our unpause: what we wanted.
    if (!boost::algorithm::icontains(std::string_view(e.what()), "is not paused"))
      throw OSError("backend 'docker': container " + container + " was left paused (" + why +
                    ") and could not be recovered; refusing to hand it out: " + e.what());
  }
}

/// Holding the host lock (or none), with the container paused by someone else: returns once
/// that freeze is gone — lifted by its holder, or recovered here when its holder on this host
/// died or it stood past `foreign_wait` (then no process on this host holds it: we hold the lock).
boost::asio::awaitable<void> outwait_foreign_freeze(DockerTransport& transport, const FreezeSlot& slot,
                                                    const std::string& container, const std::optional<HostLock>& lock) {
  if (lock && lock->previous_holder_died()) {
    auto state = co_await transport.container_state(container);
    if (state && state->paused)
      co_await recover(transport, container, "the process on this host that froze it died holding the freeze (" +
                                                 lock->path() + ")");
    co_return;
  }
  const auto since = Clock::now();
  for (;;) {
    auto state = co_await transport.container_state(container);
    if (!state || !state->paused) co_return;
    if (Clock::now() - since >= slot.foreign_wait) {
      co_await recover(transport, container,
                       "it stood paused for more than " + seconds_of(slot.foreign_wait) +
                           " with no holder on this host (a holder elsewhere that died, or an operator's pause)");
      co_return;
    }
    co_await support::sleep_for(kThawPoll);
  }
}

/// A shared host lock held for an exec's start: let go when the exec ends (the guard's
/// end) or when kExecStartWindow has passed, whichever comes first.
class ExecStartGuard {
public:
  ExecStartGuard(HostLock lock, boost::asio::any_io_executor executor)
      : state_(std::make_shared<State>(std::move(lock), executor)) {
    state_->timer.expires_after(kExecStartWindow);
    state_->timer.async_wait([state = state_](const boost::system::error_code&) { state->release(); });
  }
  ExecStartGuard(const ExecStartGuard&) = delete;
  ExecStartGuard& operator=(const ExecStartGuard&) = delete;
  ~ExecStartGuard() {
    state_->release();
    state_->timer.cancel();
  }

private:
  struct State {
    State(HostLock l, boost::asio::any_io_executor executor) : lock(std::move(l)), timer(executor) {}
    void release() {
      std::lock_guard g(m);
      lock.reset();
    }
    std::mutex m;
    std::optional<HostLock> lock;
    boost::asio::steady_timer timer;
  };
  std::shared_ptr<State> state_;
};

}  // namespace

boost::asio::awaitable<void> run_frozen(DockerTransport& transport, FreezeSlot& slot, const std::string& container,
                                        const std::function<boost::asio::awaitable<void>()>& body) {
  auto hold = co_await slot.mutex.scoped();
  if (!slot.held_pause_id.empty()) {
    // Sandbox::pause froze this container: the body runs inside that freeze. A container
    // recreated since under the name is not the one paused.
    auto state = co_await transport.container_state(container);
    if (state && state->id == slot.held_pause_id && state->paused) {
      co_await body();
      co_return;
    }
    slot.held_pause_id.clear();
    slot.pause_held = false;
  }
  // A turn is waited for at most twice the bound: the host's other processes, then a holder elsewhere.
  const auto deadline = Clock::now() + 2 * slot.foreign_wait;
  auto lock = co_await take_host_lock(slot, container, deadline);
  // No unfrozen fallback ("The freeze").
  for (;;) {
    bool held_elsewhere = false;
    try {
      co_await call_through_lag(transport, container, FlagCall::Pause, slot.thawed_at.load());
    } catch (const OSError& e) {
      // "already paused" past our own flag's lag: another process holds the freeze (issue 54).
      if (!boost::algorithm::icontains(std::string_view(e.what()), "already paused") || Clock::now() >= deadline)
        throw;
      held_elsewhere = true;
    }
    if (!held_elsewhere) break;
    co_await outwait_foreign_freeze(transport, slot, container, lock);
  }
  const std::int64_t paused_at = now_ns();
  slot.live_claim = ++g_generation;
  std::exception_ptr failure;
  try {
    co_await body();
  } catch (...) {
    failure = std::current_exception();
  }
  try {
    co_await call_through_lag(transport, container, FlagCall::Unpause, paused_at);
    slot.thawed_at = now_ns();
  } catch (...) {
    slot.possibly_frozen = true;
    // The file keeps naming us: another process on this host reads our freeze as a dead
    // holder's and lifts it at once, as this process's next acquire does.
    if (lock) lock->release_keeping_record();
    if (!failure) failure = std::current_exception();
  }
  slot.live_claim = 0;
  if (failure) std::rethrow_exception(failure);
}

boost::asio::awaitable<void> hold_pause(DockerTransport& transport, FreezeSlot& slot, const std::string& container,
                                        const std::string& container_id) {
  auto hold = co_await slot.mutex.scoped();
  if (slot.held_pause_id == container_id) co_return;
  auto lock = co_await take_host_lock(slot, container, Clock::now() + 2 * slot.foreign_wait);
  co_await call_through_lag(transport, container, FlagCall::Pause, slot.thawed_at.load());
  slot.held_pause_id = container_id;
  slot.pause_held = true;
}

boost::asio::awaitable<void> release_pause(DockerTransport& transport, FreezeSlot& slot, const std::string& container) {
  auto hold = co_await slot.mutex.scoped();
  if (slot.held_pause_id.empty()) co_return;
  try {
    co_await transport.unpause(container);
  } catch (const OSError& e) {
    const std::string_view text(e.what());
    if (!boost::algorithm::icontains(text, "is not paused") && !boost::algorithm::icontains(text, "no such container"))
      throw;
  }
  slot.thawed_at = now_ns();
  slot.held_pause_id.clear();
  slot.pause_held = false;
}

boost::asio::awaitable<void> await_unfrozen(DockerTransport& transport, FreezeSlot& slot, const std::string& container) {
  // Under the slot's mutex no live claim of this process exists (D-11), and under the host
  // lock none of this host's processes holds a freeze: what is paused now is a dead holder's,
  // or a holder's elsewhere.
  auto hold = co_await slot.mutex.scoped();
  if (!slot.held_pause_id.empty()) {
    // The paused flag may lag the pause: the ID alone says it is the container held.
    auto state = co_await transport.container_state(container);
    if (state && state->id == slot.held_pause_id)
      throw SandboxPaused("backend 'docker': container " + container +
                          " is paused by a sandbox of this process (Sandbox::pause); resume it before acquiring it "
                          "again");
    slot.held_pause_id.clear();
    slot.pause_held = false;
  }
  auto lock = co_await take_host_lock(slot, container, Clock::now() + slot.foreign_wait);
  auto state = co_await transport.container_state(container);
  if (state && state->paused) {
    if (slot.possibly_frozen)
      co_await recover(transport, container, "an unpause of this process failed");
    else
      co_await outwait_foreign_freeze(transport, slot, container, lock);
  }
  slot.possibly_frozen = false;
}

boost::asio::awaitable<void> retry_past_own_freeze(DockerTransport& transport, FreezeSlot& slot,
                                                   const std::string& container,
                                                   const std::function<boost::asio::awaitable<bool>()>& attempt) {
  const auto deadline = Clock::now() + slot.foreign_wait;
  for (;;) {
    const std::uint64_t before = slot.live_claim.load();
    // Issue 54: an exec that starts while the container is being paused can wedge the engine
    // (measured on 20.10: the runtime's shim stops answering, and the exec and the unpause both
    // hang until their timeouts). So an exec's start holds the host lock shared — freezes on
    // this host take it exclusively — for the start window, or until it ends if sooner.
    std::optional<ExecStartGuard> guard;
    if (!slot.host_lock_name.empty())
      guard.emplace(co_await wait_for_host_lock(slot.host_lock_name, deadline, "the freeze of container " + container,
                                                /*shared=*/true),
                    co_await boost::asio::this_coro::executor);
    const bool paused_refusal = co_await attempt();
    guard.reset();
    const std::uint64_t after = slot.live_claim.load();
    if (!paused_refusal) co_return;
    if (before != 0 && before == after) {
      // Our own freeze refused it: wait for the thaw, then re-issue (D-22).
      co_await slot.mutex.lock();
      slot.mutex.unlock();
      continue;
    }
    // Not our own freeze: the engine's flag lagging our own thaw, or a freeze held by another
    // process (issue 54). The refused command never started; it is re-issued once the pause
    // is gone, and a pause that stays past the bound has its refusal returned (D-22).
    bool cleared = false;
    while (!cleared && Clock::now() < deadline) {
      auto state = co_await transport.container_state(container);
      cleared = !state || !state->paused;
      if (!cleared) co_await support::sleep_for(kFlagPoll);
    }
    if (!cleared) co_return;
  }
}

boost::asio::awaitable<ExecOutcome> exec_respecting_freeze(DockerTransport& transport, FreezeSlot& slot,
                                                           const std::function<ExecCall()>& make_call) {
  const std::string container = make_call().container;
  ExecOutcome outcome;
  // The deadline is recomputed for each attempt (make_call).
  const std::function<boost::asio::awaitable<bool>()> attempt = [&]() -> boost::asio::awaitable<bool> {
    ExecCall call = make_call();
    outcome = co_await transport.exec(std::move(call));
    co_return outcome.paused_refusal;
  };
  co_await retry_past_own_freeze(transport, slot, container, attempt);
  co_return outcome;
}

}  // namespace maf::sandbox::docker::detail
