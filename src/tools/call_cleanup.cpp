// The cleanup rung after each tool call (docs/tools.md, C-120, BG-10): the call's background
// programs stopped first under RECLAIM, then every admitted key released with the rung it
// owes, and a failure reported to the host's callback, bounded.
#include "tools/call_record.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"

namespace maf::sandbox::detail {
namespace {

/// Runs the host's callback bounded by `timeout` (C-120: separately from the removal). A late
/// callback keeps running detached; its failure is logged, never raised into the call.
boost::asio::awaitable<void> report_bounded(const std::function<boost::asio::awaitable<void>(ReclaimFailure)>& callback,
                                            ReclaimFailure failure, std::chrono::milliseconds timeout) {
  auto executor = co_await boost::asio::this_coro::executor;
  struct State {
    boost::asio::steady_timer timer;
    bool done = false;
  };
  auto state = std::make_shared<State>(State{boost::asio::steady_timer(executor, timeout)});
  const std::string tool = failure.tool;
  boost::asio::co_spawn(
      executor, [callback, failure = std::move(failure)]() -> boost::asio::awaitable<void> { co_await callback(failure); },
      [state, tool](std::exception_ptr e) {
        state->done = true;
        if (e) {
          try {
            std::rethrow_exception(e);
          } catch (const std::exception& ex) {
            logger()->warn("tool '{}': on_reclaim_failure raised: {}", tool, ex.what());
          }
        }
        state->timer.cancel();
      });
  boost::system::error_code ec;
  co_await state->timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  if (!state->done) logger()->warn("tool '{}': on_reclaim_failure did not finish within {} ms", tool, timeout.count());
}

/// Stop and forget each of `background`; the sandboxes where one of them did not stop.
boost::asio::awaitable<std::vector<const Sandbox*>> stop_background(const detail::ToolBinding& b,
                                                                   const std::vector<BackgroundProcess>& background,
                                                                   std::chrono::milliseconds timeout) {
  std::vector<const Sandbox*> unstopped;
  for (const auto& process : background) {
    std::optional<std::string> problem;
    try {
      const auto status = co_await process.stop(timeout);
      if (status.running) problem = "it still runs after SIGKILL to its group";
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (!problem) {
      try {
        // Named first: GCC 12 miscompiles a braced temporary inside a co_await's arguments.
        std::vector<std::string> argv{"rm", "-rf", "--", process.directory()};
        auto removing = process.sandbox().exec(Command(std::move(argv)), ".", timeout);
        co_await std::move(removing);
      } catch (const std::exception& e) {
        logger()->warn("tool '{}': background process '{}' stopped, but its state was not removed: {}",
                       b.definition.name, process.id(), e.what());
      }
      continue;
    }
    logger()->warn("tool '{}': background process '{}' of the call was not stopped ({}); the rung becomes DISPOSE",
                   b.definition.name, process.id(), *problem);
    unstopped.push_back(&process.sandbox());
  }
  co_return unstopped;
}

}  // namespace

boost::asio::awaitable<void> finish_call(const detail::ToolBinding& b, detail::ToolCallRecord& call,
                                         std::chrono::milliseconds timeout) {
  std::vector<detail::AdmittedKey> admitted;
  std::optional<std::string> name;
  std::vector<BackgroundProcess> background;
  std::vector<const Sandbox*> unstoppable;
  {
    std::lock_guard guard(call.mutex);
    call.closed = true;  // from here guest_call_path() raises and acquire() records nothing
    admitted = std::move(call.admitted);
    name = call.name;
    background = std::move(call.background);
    unstoppable = std::move(call.unstoppable);
  }
  // BG-10: RECLAIM leaves the sandbox's other processes alone, so it stops the call's own
  // background processes first; RESET and DISPOSE end every process of the sandbox anyway.
  std::vector<const Sandbox*> unstopped;
  if (b.rung == Cleanup::Reclaim) unstopped = co_await stop_background(b, background, timeout);
  // AGENT-7: a program of a stopped call that nothing could stop is ended by DISPOSE.
  unstopped.insert(unstopped.end(), unstoppable.begin(), unstoppable.end());
  for (auto& entry : admitted) {
    std::vector<OwedCleanup> owed;
    std::string path;
    if (entry.sandbox) {
      // The backend's declaration decided the rung at attach; an instance whose reset is
      // refused anyway (NotImplementedError) is escalated to a disposal by release_call.
      // A background process RECLAIM could not stop escalates it to DISPOSE, which ends it.
      const bool escalate = std::find(unstopped.begin(), unstopped.end(), entry.sandbox.get()) != unstopped.end();
      const Cleanup rung = escalate ? Cleanup::Dispose : b.rung;
      if (name) path = join_guest_path(entry.sandbox->storage_base(), *name);
      // RECLAIM with no name allocated: nothing was named, so nothing is there to remove.
      if (rung != Cleanup::Reclaim || name)
        owed.push_back({rung, entry.sandbox, path, b.options.cleanup.failed_reclaim});
    }
    const auto failures = co_await b.router->release_call(std::move(entry.ticket), std::move(owed), timeout);
    for (const auto& failure : failures) {
      logger()->warn("tool '{}': {} of {} ({} '{}') did not happen: {}", b.definition.name, to_string(failure.rung),
                     to_string(failure.key), failure.backend, failure.instance_id, failure.reason);
      // C-120: reported only when a name was allocated (else the call wrote nothing).
      if (!name || !b.options.cleanup.on_reclaim_failure) continue;
      // Named first: GCC 12 miscompiles a braced temporary inside a co_await's arguments.
      ReclaimFailure report{b.definition.name, entry.key, path, failure.reason};
      co_await report_bounded(b.options.cleanup.on_reclaim_failure, std::move(report), timeout);
    }
  }
}

}  // namespace maf::sandbox::detail
