// The freeze registry and protocol (docker.md §7.2-7.4).
#include "freeze.hpp"

#include <exception>
#include <map>
#include <mutex>

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
}

boost::asio::awaitable<void> run_frozen(DockerTransport& transport, FreezeSlot& slot, const std::string& container,
                                        const std::function<boost::asio::awaitable<void>()>& body) {
  auto hold = co_await slot.mutex.scoped();
  co_await transport.pause(container);  // no unfrozen fallback (§7.3 step 2)
  slot.live_claim = ++g_generation;
  std::exception_ptr failure;
  try {
    co_await body();
  } catch (...) {
    failure = std::current_exception();
  }
  try {
    co_await transport.unpause(container);
  } catch (...) {
    slot.possibly_frozen = true;
    if (!failure) failure = std::current_exception();
  }
  slot.live_claim = 0;
  if (failure) std::rethrow_exception(failure);
}

boost::asio::awaitable<ExecOutcome> exec_respecting_freeze(DockerTransport& transport, FreezeSlot& slot,
                                                           const std::function<ExecCall()>& make_call) {
  for (;;) {
    const std::uint64_t before = slot.live_claim.load();
    ExecOutcome outcome = co_await transport.exec(make_call());
    const std::uint64_t after = slot.live_claim.load();
    if (!outcome.paused_refusal || before == 0 || before != after) co_return outcome;
    // Our own freeze refused it: wait for the thaw, then re-issue.
    co_await slot.mutex.lock();
    slot.mutex.unlock();
  }
}

}  // namespace maf::sandbox::docker::detail
