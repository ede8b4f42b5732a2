// The freeze slots and protocol (D-21, D-22; docs/backends/docker.md "The freeze").
#include "freeze.hpp"

#include <boost/algorithm/string/predicate.hpp>

#include <chrono>
#include <exception>
#include <map>
#include <mutex>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/sleep.hpp"

namespace maf::sandbox::docker::detail {

std::shared_ptr<FreezeSlot> freeze_slot(const std::string& endpoint, const std::string& container) {
  static std::mutex guard;
  static std::map<std::pair<std::string, std::string>, std::shared_ptr<FreezeSlot>> slots;
  std::lock_guard lock(guard);
  auto& slot = slots[{endpoint, container}];
  if (!slot) slot = std::make_shared<FreezeSlot>();
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

boost::asio::awaitable<void> run_frozen(DockerTransport& transport, FreezeSlot& slot, const std::string& container,
                                        const std::function<boost::asio::awaitable<void>()>& body) {
  auto hold = co_await slot.mutex.scoped();
  // No unfrozen fallback ("The freeze").
  const std::int64_t thawed_at = slot.thawed_at.load();
  co_await call_through_lag(transport, container, FlagCall::Pause, thawed_at);
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
    if (!failure) failure = std::current_exception();
  }
  slot.live_claim = 0;
  if (failure) std::rethrow_exception(failure);
}

boost::asio::awaitable<void> retry_past_own_freeze(DockerTransport& transport, FreezeSlot& slot,
                                                   const std::string& container,
                                                   const std::function<boost::asio::awaitable<bool>()>& attempt) {
  for (;;) {
    const std::uint64_t before = slot.live_claim.load();
    const std::int64_t thawed_before = slot.thawed_at.load();
    const bool paused_refusal = co_await attempt();
    const std::uint64_t after = slot.live_claim.load();
    if (paused_refusal && before == 0 && after == 0 && within_lag(thawed_before)) {
      // Refused just after our own thaw: the engine's flag may not have caught up. Our
      // claim covers the refusal only if the flag clears within the window; a pause that
      // stays is someone else's, and its refusal stands after this one attempt (D-22).
      bool cleared = false;
      while (!cleared && within_lag(thawed_before)) {
        auto state = co_await transport.container_state(container);
        cleared = !state || !state->paused;
        if (!cleared) co_await support::sleep_for(kFlagPoll);
      }
      if (cleared) continue;
      co_return;
    }
    if (!paused_refusal || before == 0 || before != after) co_return;
    // Our own freeze refused it: wait for the thaw, then re-issue.
    co_await slot.mutex.lock();
    slot.mutex.unlock();
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
