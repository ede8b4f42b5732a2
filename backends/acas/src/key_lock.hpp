#pragma once
// Serialises get-or-create per identity: one coroutine at a time per key, in arrival
// order. Waiters park on a timer of their own executor and are released by expiring it, so
// a release never resumes the next owner inside the releasing coroutine.

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

namespace maf::sandbox::acas::detail {

class KeyLock {
public:
  class Held {
  public:
    explicit Held(std::shared_ptr<KeyLock> lock) : lock_(std::move(lock)) {}
    Held(Held&& other) noexcept : lock_(std::move(other.lock_)) {}
    Held(const Held&) = delete;
    ~Held() {
      if (lock_) lock_->release();
    }

  private:
    std::shared_ptr<KeyLock> lock_;
  };

  static boost::asio::awaitable<Held> take(std::shared_ptr<KeyLock> lock) {
    auto executor = co_await boost::asio::this_coro::executor;
    std::shared_ptr<boost::asio::steady_timer> turn;
    {
      std::lock_guard guard(lock->m_);
      if (!lock->owned_) {
        lock->owned_ = true;
        co_return Held(lock);
      }
      turn = std::make_shared<boost::asio::steady_timer>(executor, boost::asio::steady_timer::time_point::max());
      lock->queue_.push_back(turn);
    }
    boost::system::error_code ignored;
    co_await turn->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
    co_return Held(lock);
  }

  bool busy() const {
    std::lock_guard guard(m_);
    return owned_;
  }

private:
  void release() {
    std::shared_ptr<boost::asio::steady_timer> next;
    {
      std::lock_guard guard(m_);
      if (queue_.empty()) {
        owned_ = false;
        return;
      }
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    boost::asio::post(next->get_executor(), [next] { next->cancel(); });
  }

  mutable std::mutex m_;
  bool owned_ = false;
  std::deque<std::shared_ptr<boost::asio::steady_timer>> queue_;
};

}  // namespace maf::sandbox::acas::detail
