#include "maf/sandbox/sync.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

namespace maf::sandbox {

struct BlockingRunner::Impl {
  boost::asio::io_context io;
};

BlockingRunner::BlockingRunner() : impl_(std::make_unique<Impl>()) {}
BlockingRunner::~BlockingRunner() = default;

void BlockingRunner::run_void(std::function<boost::asio::awaitable<void>()> body) {
  std::exception_ptr error;
  bool finished = false;
  boost::asio::co_spawn(impl_->io, std::move(body), [&](std::exception_ptr e) {
    error = e;
    finished = true;
  });
  impl_->io.restart();
  while (!finished && impl_->io.run_one() > 0) {
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace maf::sandbox
