// support/async_mutex.hpp: ownership, FIFO hand-over, mutual exclusion across threads (also
// run under TSan, label `tsan`), and waiters abandoned while parked (C-52's per-identity lock
// must never wedge a key).
#include <catch2/catch.hpp>

#include <utility>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <memory>
#include <vector>

#include "maf/sandbox/support/async_mutex.hpp"

namespace asio = boost::asio;
using maf::sandbox::support::AsyncMutex;

namespace {

asio::awaitable<void> yield_once() {
  auto executor = co_await asio::this_coro::executor;
  co_await asio::post(executor, asio::use_awaitable);
}

/// Parks one waiter on `ctx` and runs `ctx` until it is parked; `acquired` flips if it ever
/// gets the mutex.
void park_waiter(asio::io_context& ctx, AsyncMutex& mutex, bool& acquired) {
  asio::co_spawn(
      ctx,
      [&mutex, &acquired]() -> asio::awaitable<void> {
        co_await mutex.lock();
        acquired = true;
        mutex.unlock();
      },
      asio::detached);
  ctx.poll();
  ctx.restart();
}

}  // namespace

TEST_CASE("C-52 support: an uncontended lock is taken at once and the guard releases it") {
  asio::io_context ctx;
  AsyncMutex mutex;
  bool checked = false;
  asio::co_spawn(
      ctx,
      [&]() -> asio::awaitable<void> {
        {
          auto held = co_await mutex.scoped();
          CHECK(held.owns_lock());
          CHECK(mutex.locked());
        }
        CHECK_FALSE(mutex.locked());
        co_await mutex.lock();
        CHECK(mutex.locked());
        mutex.unlock();
        checked = true;
      },
      asio::detached);
  ctx.run();
  CHECK(checked);
  CHECK_FALSE(mutex.locked());
}

TEST_CASE("C-52 support: waiters are served in arrival order, each after the previous released") {
  asio::io_context ctx;
  AsyncMutex mutex;
  std::vector<int> order;
  int inside = 0;
  for (int id = 0; id < 6; ++id) {
    asio::co_spawn(
        ctx,
        [&, id]() -> asio::awaitable<void> {
          auto held = co_await mutex.scoped();
          CHECK(++inside == 1);
          order.push_back(id);
          co_await yield_once();  // let every later coroutine arrive and park
          co_await yield_once();
          --inside;
        },
        asio::detached);
  }
  ctx.run();
  CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5});
  CHECK_FALSE(mutex.locked());
}

TEST_CASE("C-52 support: mutual exclusion holds across threads of a pool") {
  asio::thread_pool pool(4);
  AsyncMutex mutex;
  long unguarded_counter = 0;  // only ever touched under the mutex: TSan checks the edges
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  constexpr int kCoroutines = 64;
  constexpr int kRounds = 20;
  std::atomic<int> finished{0};
  for (int c = 0; c < kCoroutines; ++c) {
    asio::co_spawn(
        pool,
        [&]() -> asio::awaitable<void> {
          for (int r = 0; r < kRounds; ++r) {
            auto held = co_await mutex.scoped();
            if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
            ++unguarded_counter;
            co_await yield_once();
            inside.fetch_sub(1);
          }
          finished.fetch_add(1);
        },
        asio::detached);
  }
  pool.join();
  CHECK(finished.load() == kCoroutines);
  CHECK(overlaps.load() == 0);
  CHECK(unguarded_counter == long{kCoroutines} * kRounds);
  CHECK_FALSE(mutex.locked());
}

TEST_CASE("C-52 support: a waiter destroyed while queued leaves the queue") {
  AsyncMutex mutex;
  asio::io_context holder;
  asio::co_spawn(holder, mutex.lock(), asio::detached);
  holder.run();
  REQUIRE(mutex.locked());

  bool abandoned_acquired = false;
  {
    auto doomed = std::make_unique<asio::io_context>();
    park_waiter(*doomed, mutex, abandoned_acquired);
    REQUIRE_FALSE(abandoned_acquired);
  }  // the parked coroutine's frame is destroyed with its io_context

  mutex.unlock();
  CHECK_FALSE(mutex.locked());  // nobody was left to hand over to
  CHECK_FALSE(abandoned_acquired);
}

TEST_CASE("C-52 support: a waiter destroyed after the hand-over passes the lock on") {
  AsyncMutex mutex;
  asio::io_context holder;
  asio::co_spawn(holder, mutex.lock(), asio::detached);
  holder.run();
  REQUIRE(mutex.locked());

  bool first_acquired = false;
  bool second_acquired = false;
  asio::io_context survivor;
  {
    auto doomed = std::make_unique<asio::io_context>();
    park_waiter(*doomed, mutex, first_acquired);
    park_waiter(survivor, mutex, second_acquired);
    mutex.unlock();  // hands over to the doomed waiter: the wake-up is posted, never run
    CHECK(mutex.locked());
  }
  CHECK_FALSE(first_acquired);
  survivor.run();
  CHECK(second_acquired);
  CHECK_FALSE(mutex.locked());
}
