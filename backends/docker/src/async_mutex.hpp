#pragma once
// A FIFO mutex a coroutine can await (Boost 1.74 ships none). Used for the per-identity
// acquire lock (docker.md §5), the binding lock (§3.1) and the freeze registry (§7.2).
//
// A waiter parks on its own steady_timer; unlock hands ownership to the first waiter and
// wakes it by expiring that timer through the waiter's executor, so the wake-up never runs
// inside the unlocking coroutine. Assumption: the awaiting coroutine runs on a
// single-threaded io_context or a strand (the usual shape for one sandbox's operations).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <deque>
#include <memory>
#include <mutex>

namespace maf::sandbox::docker::detail {

class AsyncMutex {
public:
  boost::asio::awaitable<void> lock() {
    auto executor = co_await boost::asio::this_coro::executor;
    std::shared_ptr<boost::asio::steady_timer> timer;
    {
      std::lock_guard guard(m_);
      if (!locked_) {
        locked_ = true;
        co_return;
      }
      timer = std::make_shared<boost::asio::steady_timer>(executor, boost::asio::steady_timer::time_point::max());
      waiters_.push_back(timer);
    }
    boost::system::error_code ignored;
    // Completes when unlock() expires the timer: ownership was handed over, locked_ stays true.
    co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
  }

  void unlock() {
    std::shared_ptr<boost::asio::steady_timer> next;
    {
      std::lock_guard guard(m_);
      if (waiters_.empty()) {
        locked_ = false;
        return;
      }
      next = std::move(waiters_.front());
      waiters_.pop_front();
    }
    boost::asio::post(next->get_executor(),
                      [next] { next->expires_at(boost::asio::steady_timer::time_point::min()); });
  }

  bool locked() const {
    std::lock_guard guard(m_);
    return locked_;
  }

private:
  mutable std::mutex m_;
  bool locked_ = false;
  std::deque<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

/// Unlocks on scope exit, exceptions and coroutine destruction included.
class AsyncLockGuard {
public:
  explicit AsyncLockGuard(AsyncMutex& m) : m_(&m) {}
  AsyncLockGuard(const AsyncLockGuard&) = delete;
  AsyncLockGuard& operator=(const AsyncLockGuard&) = delete;
  ~AsyncLockGuard() {
    if (m_) m_->unlock();
  }

private:
  AsyncMutex* m_;
};

}  // namespace maf::sandbox::docker::detail
