#pragma once
/// @file support/async_mutex.hpp
/// A FIFO mutex a coroutine can `co_await`, for backends built on Boost.Asio 1.74 (which
/// ships none): the per-(key, kind) get-or-create lock every backend needs (C-52), and
/// serialisation such as the Docker backend's freeze windows.
///
/// Why a timer per waiter: a waiter parks on a `steady_timer` of its own executor;
/// `unlock()` hands ownership directly to the first waiter (the mutex never looks free in
/// between, so arrival order is kept) and cancels that wait, whose completion Asio posts to
/// the waiter's executor — the next owner never resumes inside the unlocking coroutine.
///
/// Why abandonment is handled: a waiting coroutine can be destroyed without resuming (its
/// io_context stopped, its frame torn down). Its parked state notices that on destruction —
/// still queued: it leaves the queue; already handed the lock: it passes the lock on — so an
/// abandoned waiter never wedges the key for everybody else.
///
/// Thread safety: lock/unlock may be called from any thread; the internal state is guarded
/// by a std::mutex. Each waiter resumes on its own executor.
///
/// This header pulls in Boost.Asio: include it from backend sources, not from widely
/// included headers.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>

namespace maf::sandbox::support {

class AsyncMutex {
public:
  /// Owns the mutex until destroyed or `release()`d; move-only. Safe to hold across
  /// `co_await`, and released when the holding coroutine is destroyed.
  class Lock {
  public:
    Lock() = default;
    explicit Lock(AsyncMutex& mutex) noexcept : mutex_(&mutex) {}
    Lock(Lock&& other) noexcept : mutex_(std::exchange(other.mutex_, nullptr)) {}
    Lock& operator=(Lock&& other) noexcept {
      if (this != &other) {
        release();
        mutex_ = std::exchange(other.mutex_, nullptr);
      }
      return *this;
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    ~Lock() { release(); }

    void release() noexcept {
      if (mutex_ != nullptr) std::exchange(mutex_, nullptr)->unlock();
    }
    bool owns_lock() const noexcept { return mutex_ != nullptr; }

  private:
    AsyncMutex* mutex_ = nullptr;
  };

  AsyncMutex() = default;
  AsyncMutex(const AsyncMutex&) = delete;
  AsyncMutex& operator=(const AsyncMutex&) = delete;

  /// Waits for ownership (FIFO); pair with `unlock()`, or prefer `scoped()`.
  boost::asio::awaitable<void> lock() {
    auto executor = co_await boost::asio::this_coro::executor;
    auto waiter = std::make_shared<Waiter>(executor);
    {
      std::lock_guard guard(state_);
      if (!locked_) {
        locked_ = true;
        co_return;
      }
      queue_.push_back(waiter);
    }
    Parked parked{*this, waiter};
    boost::system::error_code ignored;  // the hand-over cancels the wait
    auto token = boost::asio::redirect_error(boost::asio::use_awaitable, ignored);
    // Every touch of the timer happens under state_: on a multi-threaded executor the
    // hand-over may run on another thread between the push above and this wait. (A named
    // initiation, not a temporary inside the co_await: GCC 12 miscompiles the latter.)
    auto park = [this, waiter](auto handler) {
      std::lock_guard guard(state_);
      if (waiter->handed_over) {
        auto target = waiter->timer.get_executor();
        boost::asio::post(target, [h = std::move(handler)]() mutable { h(boost::system::error_code{}); });
      } else {
        waiter->timer.async_wait(std::move(handler));
      }
    };
    co_await boost::asio::async_initiate<decltype(token), void(boost::system::error_code)>(park, token);
    parked.owned = true;  // from here the caller owns the mutex
  }

  /// `lock()` returning a guard that unlocks on scope exit.
  boost::asio::awaitable<Lock> scoped() {
    co_await lock();
    co_return Lock(*this);
  }

  /// Hands ownership to the first live waiter, or frees the mutex when none waits. The
  /// waiter resumes through its own executor (a cancelled wait completes by a post there).
  void unlock() {
    std::lock_guard guard(state_);
    if (queue_.empty()) {
      locked_ = false;
      return;
    }
    auto next = std::move(queue_.front());
    queue_.pop_front();
    next->handed_over = true;
    next->timer.cancel();
  }

  /// True while owned (including the moment between a hand-over and the waiter resuming).
  bool locked() const {
    std::lock_guard guard(state_);
    return locked_;
  }

private:
  struct Waiter {
    explicit Waiter(const boost::asio::any_io_executor& executor)
        : timer(executor, boost::asio::steady_timer::time_point::max()) {}
    boost::asio::steady_timer timer;  // guarded by AsyncMutex::state_, like the flag
    bool handed_over = false;
  };

  /// Lives in the waiting coroutine's frame: its destructor runs whether the wait resumed
  /// or the frame was destroyed while parked.
  struct Parked {
    AsyncMutex& mutex;
    std::shared_ptr<Waiter> waiter;
    bool owned = false;
    ~Parked() {
      if (owned) return;
      bool pass_on = false;
      {
        std::lock_guard guard(mutex.state_);
        if (waiter->handed_over) {
          pass_on = true;
        } else {
          auto& q = mutex.queue_;
          q.erase(std::remove(q.begin(), q.end(), waiter), q.end());
        }
      }
      if (pass_on) mutex.unlock();
    }
  };

  mutable std::mutex state_;
  bool locked_ = false;
  std::deque<std::shared_ptr<Waiter>> queue_;
};

}  // namespace maf::sandbox::support
