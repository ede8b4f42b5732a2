#pragma once
/// @file sync.hpp
/// A blocking facade for hosts without an io_context.
///
/// `BlockingRunner` owns one io_context and runs each awaitable to completion on the calling
/// thread. Keep one runner per thread for the lifetime of the sandboxes it acquired: a
/// backend may bind I/O objects to the executor an operation first ran on.
///
/// @code
///   maf::sandbox::BlockingRunner run;
///   auto sb = run([&] { return router.acquire(key, spec); });
///   auto r = run(sb->exec({"echo", "hi"}));  // or run([&] { return sb->exec(...); })
/// @endcode

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <type_traits>

namespace maf::sandbox {

class BlockingRunner {
public:
  BlockingRunner();
  ~BlockingRunner();
  BlockingRunner(const BlockingRunner&) = delete;
  BlockingRunner& operator=(const BlockingRunner&) = delete;

  /// Run `make()` (returning an awaitable) to completion; return its value or rethrow.
  template <class Make>
    requires std::is_invocable_v<Make&>
  auto operator()(Make&& make) {
    using Awaitable = std::invoke_result_t<Make&>;
    using T = typename Awaitable::value_type;
    if constexpr (std::is_void_v<T>) {
      run_void([&]() -> boost::asio::awaitable<void> { co_await make(); });
    } else {
      std::optional<T> out;
      run_void([&]() -> boost::asio::awaitable<void> { out.emplace(co_await make()); });
      return std::move(*out);
    }
  }

  /// Run an awaitable itself to completion: `run(sb->exec("true"))`. Asio's awaitables start
  /// only when awaited, so one made outside the runner runs here, on the runner's io_context.
  template <class T>
  T operator()(boost::asio::awaitable<T> awaitable) {
    auto held = std::make_shared<boost::asio::awaitable<T>>(std::move(awaitable));
    return (*this)([held]() -> boost::asio::awaitable<T> { co_return co_await std::move(*held); });
  }

  /// Run a void-returning coroutine factory to completion, rethrowing its exception.
  void run_void(std::function<boost::asio::awaitable<void>()> body);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace maf::sandbox
