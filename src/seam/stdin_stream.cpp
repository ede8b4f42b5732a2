// A streamed stdin over a close-on-exec pipe (docs/exec-input.md STDIN-6…STDIN-10).
#include "maf/sandbox/stdin_stream.hpp"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>

#include "maf/sandbox/exec_input.hpp"
#include "support/posix_io.hpp"

namespace maf::sandbox {

namespace asio = boost::asio;

std::shared_ptr<StdinStream> StdinStream::create(std::uint64_t max_total_bytes) {
  if (max_total_bytes == 0) throw ValueError("StdinStream max_total_bytes must be positive, got 0");
  return std::shared_ptr<StdinStream>(new StdinStream(max_total_bytes));
}

StdinStream::StdinStream(std::uint64_t max_total_bytes) : max_total_bytes_(max_total_bytes) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw OSError(std::string("StdinStream: no pipe could be made: ") + std::strerror(errno));
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  // The writer waits through the executor, never in write(2).
  support::detail::set_nonblocking(write_fd_);
}

StdinStream::~StdinStream() {
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

int StdinStream::take_read_end() {
  std::lock_guard lock(mutex_);
  if (taken_ || read_fd_ < 0)
    throw ValueError("this StdinStream already served a program; make a new one for each exec_stream");
  taken_ = true;
  return std::exchange(read_fd_, -1);
}

void StdinStream::close() noexcept {
  std::lock_guard lock(mutex_);
  if (write_fd_ >= 0) ::close(std::exchange(write_fd_, -1));
}

void StdinStream::abort() noexcept {
  abort_.request_stop();
  close();
}

void StdinStream::finish() noexcept {
  std::lock_guard lock(mutex_);
  taken_ = true;
  if (read_fd_ >= 0) ::close(std::exchange(read_fd_, -1));
}

asio::awaitable<void> StdinStream::write(std::string bytes) {
  if (bytes.size() > kMaxExecStdinBytes)
    throw SandboxTransferCapExceeded("a StdinStream write of " + std::to_string(bytes.size()) +
                                     " bytes is past the cap of one write, " + std::to_string(kMaxExecStdinBytes) +
                                     " bytes (STDIN-7); nothing was written");
  if (written_.load() + bytes.size() > max_total_bytes_)
    throw SandboxTransferCapExceeded("a StdinStream write of " + std::to_string(bytes.size()) + " bytes after " +
                                     std::to_string(written_.load()) + " would pass the stream's max_total_bytes=" +
                                     std::to_string(max_total_bytes_) + " (STDIN-7); nothing was written");
  int fd = -1;
  {
    // A copy of the descriptor for this write, so a concurrent close() cannot hand its number
    // to another open file under us; the end of file then follows this write.
    std::lock_guard lock(mutex_);
    if (write_fd_ >= 0) fd = ::fcntl(write_fd_, F_DUPFD_CLOEXEC, 3);
  }
  if (fd < 0) throw SandboxStdinClosed("the StdinStream was closed; nothing more can be written (STDIN-8)");
  const auto executor = co_await asio::this_coro::executor;  // apart: GCC 12 and co_await in arguments
  asio::posix::stream_descriptor pipe(executor, fd);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = support::detail::write_without_sigpipe(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      written_ += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      co_await pipe.async_wait(asio::posix::stream_descriptor::wait_write, asio::use_awaitable);
      continue;
    }
    throw SandboxStdinClosed("the program's stdin is gone (it closed it or ended) after " + std::to_string(done) +
                             " of " + std::to_string(bytes.size()) + " bytes of this write (STDIN-8)");
  }
}

}  // namespace maf::sandbox
