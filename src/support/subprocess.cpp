// The child-process runner. One `Run` object owns a child from spawn to reap; every
// asynchronous operation holds a shared_ptr to it, so it dies (killing and reaping what is
// left) exactly when nothing can touch it any more — including io_context destruction.

#include "maf/sandbox/support/subprocess.hpp"

#include "maf/sandbox/support/capture_buffer.hpp"
#include "support/posix_io.hpp"
#include "support/pre_exec_spawn.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

extern char** environ;

namespace maf::sandbox::support {
namespace {

using detail::build_environment;
using detail::describe;
using detail::make_pipe;
using detail::PipeEnds;
using detail::pointers;
using detail::set_nonblocking;
using detail::spawn_with_pre_exec;
using detail::UniqueFd;
using detail::write_without_sigpipe;

namespace asio = boost::asio;
using Strand = asio::strand<asio::any_io_executor>;

/// The handler a coroutine is suspended on, type-erased so `Run` need not be a template.
struct Completion {
  virtual ~Completion() = default;
  virtual void post(std::exception_ptr error, SubprocessResult result) = 0;
};

template <class Handler>
struct CompletionFor final : Completion {
  explicit CompletionFor(Handler h) : handler(std::move(h)) {}
  void post(std::exception_ptr error, SubprocessResult result) override {
    auto executor = asio::get_associated_executor(handler);
    asio::post(executor, [h = std::move(handler), error, r = std::move(result)]() mutable { h(error, std::move(r)); });
  }
  Handler handler;
};

/// One output stream being drained.
struct Capture {
  explicit Capture(const Strand& strand) : pipe(strand) {}
  asio::posix::stream_descriptor pipe;
  std::array<char, 64 * 1024> buffer{};
  CaptureBuffer bytes;
  std::size_t total = 0;
  std::size_t cap = 0;
  bool done = false;
  bool overflowed = false;
};

class Run : public std::enable_shared_from_this<Run> {
public:
  Run(const asio::any_io_executor& executor, SubprocessOptions options)
      : options_(std::move(options)),
        strand_(asio::make_strand(executor)),
        out_(strand_),
        err_(strand_),
        in_(strand_),
        exit_watch_(strand_),
        deadline_(strand_),
        grace_(strand_),
        idle_(strand_) {
    out_.cap = options_.max_stdout;
    err_.cap = options_.max_stderr;
  }

  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  ~Run() {
    // Reached without a reap only when the io_context dropped us mid-run: the child must
    // not outlive the call, so kill it and wait (SIGKILL cannot be ignored).
    if (pid_ > 0 && !reaped_) {
      signal_child(SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }

  void spawn() {
    UniqueFd given_stdin(std::exchange(options_.stdin_fd, -1));
    const bool feeds_stdin = given_stdin.get() < 0 && (options_.stdin_bytes.has_value() ||
                                                       static_cast<bool>(options_.stdin_source) || options_.keep_stdin_open);
    PipeEnds in_pipe;
    if (feeds_stdin) in_pipe = make_pipe(options_.argv);
    PipeEnds out_pipe = make_pipe(options_.argv);
    PipeEnds err_pipe = make_pipe(options_.argv);

    if (!options_.join_cgroup_procs.empty()) {
      // Cgroups are joined between fork and exec, which posix_spawn has no step for.
      pid_ = spawn_with_pre_exec({.argv = options_.argv,
                                  .environment = build_environment(options_.env_mode, options_.env),
                                  .stdin_fd = feeds_stdin ? in_pipe.read.get() : given_stdin.get(),
                                  .stdout_fd = out_pipe.write.get(),
                                  .stderr_fd = err_pipe.write.get(),
                                  .cwd = options_.cwd,
                                  .keep_fds = options_.keep_fds,
                                  .join_cgroup_procs = options_.join_cgroup_procs});
    } else {
      pid_ = spawn_posix(feeds_stdin, in_pipe, given_stdin, out_pipe, err_pipe);
    }
    watch(feeds_stdin, in_pipe, out_pipe, err_pipe);
  }

  pid_t spawn_posix(bool feeds_stdin, const PipeEnds& in_pipe, const UniqueFd& given_stdin, const PipeEnds& out_pipe,
                    const PipeEnds& err_pipe) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (feeds_stdin) posix_spawn_file_actions_adddup2(&actions, in_pipe.read.get(), STDIN_FILENO);
    else if (given_stdin.get() >= 0) posix_spawn_file_actions_adddup2(&actions, given_stdin.get(), STDIN_FILENO);
    else posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe.write.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe.write.get(), STDERR_FILENO);
    if (!options_.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options_.cwd.c_str());
    // dup2 onto itself clears FD_CLOEXEC in the child only (POSIX 2024, glibc >= 2.29).
    for (const int fd : options_.keep_fds) posix_spawn_file_actions_adddup2(&actions, fd, fd);

    // The child starts with default dispositions and an empty mask whatever the host did
    // (an ignored SIGPIPE or a blocked SIGTERM would otherwise survive exec), in its own
    // process group so a stop reaches its descendants.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &all);
    posix_spawnattr_setpgroup(&attributes, 0);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

    std::vector<std::string> argv_storage = options_.argv;
    std::vector<std::string> env_storage = build_environment(options_.env_mode, options_.env);
    auto argv = pointers(argv_storage);
    auto envp = pointers(env_storage);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
      std::string message = "subprocess " + describe(options_.argv) + " could not be started: " + std::strerror(rc);
      if (!options_.cwd.empty()) message += " (cwd '" + options_.cwd + "')";
      throw SubprocessSpawnError(message, rc);
    }
    return pid;
  }

  void watch(bool feeds_stdin, PipeEnds& in_pipe, PipeEnds& out_pipe, PipeEnds& err_pipe) {
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    if (pidfd < 0) {
      const int e = errno;
      // Without a pidfd we cannot wait without stealing SIGCHLD; do not leave it running.
      signal_child(SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
      throw SubprocessSpawnError("subprocess " + describe(options_.argv) + ": pidfd_open failed (Linux >= 5.3 needed): " +
                                     std::strerror(e),
                                 e);
    }
    exit_watch_.assign(pidfd);
    set_nonblocking(out_pipe.read.get());
    set_nonblocking(err_pipe.read.get());
    out_.pipe.assign(out_pipe.read.release());
    err_.pipe.assign(err_pipe.read.release());
    if (feeds_stdin) {
      set_nonblocking(in_pipe.write.get());
      in_.assign(in_pipe.write.release());
    }
    // The child ends close here (UniqueFd), so EOF arrives when the child's copies close.
  }

  void start(std::unique_ptr<Completion> completion, std::chrono::steady_clock::time_point started) {
    completion_ = std::move(completion);
    auto self = shared_from_this();
    asio::post(strand_, [self, started] { self->begin(started); });
  }

private:
  void begin(std::chrono::steady_clock::time_point started) {
    auto self = shared_from_this();
    exit_watch_.async_wait(asio::posix::stream_descriptor::wait_read,
                           [self](const boost::system::error_code& ec) { self->on_exit_ready(ec); });
    read(out_);
    read(err_);
    if (in_.is_open()) {
      if (options_.stdin_bytes) stdin_chunk_ = std::move(*options_.stdin_bytes);
      else next_stdin_chunk();
      write_stdin();
    }
    if (options_.timeout) {
      deadline_.expires_at(started + *options_.timeout);
      deadline_.async_wait([self](const boost::system::error_code& ec) {
        if (!ec) self->on_deadline();
      });
    }
    if (options_.idle_timeout) {
      last_output_ = std::chrono::steady_clock::now();
      arm_idle();
    }
    if (options_.stop.stop_possible()) {
      std::weak_ptr<Run> weak = self;
      Strand strand = strand_;
      stop_callback_.emplace(options_.stop, [weak, strand] {
        asio::post(strand, [weak] {
          if (auto run = weak.lock()) run->on_stop();
        });
      });
    }
  }

  // ---- output ------------------------------------------------------------------------

  void read(Capture& c) {
    if (c.done) return;
    auto self = shared_from_this();
    c.pipe.async_read_some(asio::buffer(c.buffer), [self, &c](const boost::system::error_code& ec, std::size_t n) {
      if (n > 0 && !self->accept(c, c.buffer.data(), n)) return;
      if (ec) {
        self->close(c);
        self->maybe_finish();
        return;
      }
      self->read(c);
    });
  }

  /// Take `n` freshly read bytes into `c` under its cap. Returns false when the stream is
  /// finished with (cap passed, sink satisfied or failed); the child is then being killed.
  bool accept(Capture& c, const char* data, std::size_t n) {
    if (c.done) return false;
    last_output_ = std::chrono::steady_clock::now();
    const std::size_t room = c.cap - c.total;
    const std::size_t take = std::min(n, room);
    const ChunkSink& sink = &c == &out_ ? options_.on_stdout : options_.on_stderr;
    if (take > 0) {
      if (sink) {
        bool more = false;
        try {
          more = sink(std::string_view(data, take));
        } catch (...) {
          if (!failure_) failure_ = std::current_exception();
        }
        c.total += take;
        if (!more) {
          if (!failure_) stopped_early_ = true;
          return stop_stream(c);
        }
      } else {
        try {
          c.bytes.append(data, take);
        } catch (...) {
          if (!failure_) failure_ = std::current_exception();
          return stop_stream(c);
        }
        c.total += take;
      }
    }
    if (n > room) {
      c.overflowed = true;
      return stop_stream(c);
    }
    return true;
  }

  bool stop_stream(Capture& c) {
    close(c);
    signal_child(SIGKILL);
    maybe_finish();
    return false;
  }

  void close(Capture& c) {
    c.done = true;
    boost::system::error_code ignored;
    c.pipe.close(ignored);
  }

  /// Give up on both outputs without waiting for EOF, which a descendant that escaped the
  /// process group could withhold forever.
  void close_outputs() {
    close(out_);
    close(err_);
  }

  // ---- input -------------------------------------------------------------------------

  void next_stdin_chunk() {
    stdin_chunk_.clear();
    stdin_pos_ = 0;
    if (!options_.stdin_source) return;
    try {
      stdin_chunk_ = options_.stdin_source();
    } catch (...) {
      if (!failure_) failure_ = std::current_exception();
      signal_child(SIGKILL);
      stdin_chunk_.clear();
    }
  }

  void write_stdin() {
    while (in_.is_open()) {
      if (stdin_pos_ == stdin_chunk_.size()) {
        if (stdin_chunk_.empty() || !options_.stdin_source || failure_) break;
        next_stdin_chunk();
        continue;
      }
      const ssize_t n = write_without_sigpipe(in_.native_handle(), stdin_chunk_.data() + stdin_pos_,
                                              stdin_chunk_.size() - stdin_pos_);
      if (n > 0) {
        stdin_pos_ += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        auto self = shared_from_this();
        in_.async_wait(asio::posix::stream_descriptor::wait_write, [self](const boost::system::error_code& ec) {
          if (!ec) self->write_stdin();
        });
        return;
      }
      break;  // EPIPE: the child closed its stdin, which is its business, not an error.
    }
    if (options_.keep_stdin_open && in_.is_open() && !failure_ && stdin_pos_ == stdin_chunk_.size()) return;
    boost::system::error_code ignored;
    in_.close(ignored);
  }

  // ---- lifecycle ---------------------------------------------------------------------

  void signal_child(int signo) {
    // The group only while the leader is unreaped: a zombie leader keeps the pgid reserved.
    if (pid_ <= 0 || reaped_) return;
    ::kill(-pid_, signo);
    ::kill(pid_, signo);  // in case the leader left its group
  }

  bool stopping() const {
    return timed_out_ || cancelled_ || failure_ || stopped_early_ || idle_expired_ || out_.overflowed || err_.overflowed;
  }

  /// One timer for the silence bound, re-armed from the last read rather than per chunk.
  void arm_idle() {
    idle_.expires_at(last_output_ + *options_.idle_timeout);
    auto self = shared_from_this();
    idle_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->on_idle();
    });
  }

  void on_idle() {
    if (finished_) return;
    if (std::chrono::steady_clock::now() < last_output_ + *options_.idle_timeout) {
      arm_idle();  // output arrived since the timer was set
      return;
    }
    idle_expired_ = true;
    if (reaped_) {  // only a descendant still holds a pipe open, and it is silent
      close_outputs();
      maybe_finish();
      return;
    }
    signal_child(SIGKILL);
  }

  void on_exit_ready(const boost::system::error_code& ec) {
    if (ec) return;  // operation_aborted: we are being torn down
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pid_, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {  // readable but not yet waitable: look again
      auto self = shared_from_this();
      exit_watch_.async_wait(asio::posix::stream_descriptor::wait_read,
                             [self](const boost::system::error_code& e) { self->on_exit_ready(e); });
      return;
    }
    reaped_ = true;
    if (r == pid_) {
      if (WIFEXITED(status)) {
        exit_code_ = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        signal_ = WTERMSIG(status);
        exit_code_ = -*signal_;
      }
    }
    boost::system::error_code ignored;
    exit_watch_.close(ignored);
    grace_.cancel();
    in_.close(ignored);
    if (stopping() && !(out_.done && err_.done)) {
      // The group is dead, so EOF normally follows at once; the grace only bounds an
      // escaped descendant. Bytes already in the pipes are still read meanwhile.
      grace_.expires_after(options_.kill_grace);
      auto self = shared_from_this();
      grace_.async_wait([self](const boost::system::error_code& e) {
        if (e) return;
        self->close_outputs();
        self->maybe_finish();
      });
    }
    maybe_finish();
  }

  void on_deadline() {
    if (finished_) return;
    timed_out_ = true;
    if (reaped_) {  // only a descendant still holds a pipe open
      close_outputs();
      maybe_finish();
      return;
    }
    signal_child(SIGTERM);
    grace_.expires_after(options_.kill_grace);
    auto self = shared_from_this();
    grace_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->signal_child(SIGKILL);
    });
  }

  void on_stop() {
    if (finished_) return;
    cancelled_ = true;
    if (reaped_) {
      close_outputs();
      maybe_finish();
      return;
    }
    signal_child(SIGKILL);
  }

  void maybe_finish() {
    if (finished_ || !reaped_ || !out_.done || !err_.done) return;
    finished_ = true;
    deadline_.cancel();
    grace_.cancel();
    idle_.cancel();
    stop_callback_.reset();

    SubprocessResult result;
    try {
      result.stdout_bytes = out_.bytes.take();
      result.stderr_bytes = err_.bytes.take();
    } catch (...) {
      if (!failure_) failure_ = std::current_exception();
    }
    result.stdout_total = out_.total;
    result.stderr_total = err_.total;
    result.idle_expired = idle_expired_;
    result.exit_code = exit_code_;
    result.signal = signal_;
    result.stdout_overflowed = out_.overflowed;
    result.stderr_overflowed = err_.overflowed;
    result.stopped_early = stopped_early_;

    std::exception_ptr error;
    if (failure_) {
      error = failure_;
    } else if (cancelled_) {
      error = std::make_exception_ptr(Cancelled());
    } else if (timed_out_) {
      error = std::make_exception_ptr(SubprocessTimeout(
          "subprocess " + describe(options_.argv) + " exceeded its " + std::to_string(options_.timeout->count()) +
              " ms deadline; stopped with SIGTERM, SIGKILL after " + std::to_string(options_.kill_grace.count()) +
              " ms grace",
          result));
    }
    auto completion = std::move(completion_);
    completion->post(error, std::move(result));
  }

  SubprocessOptions options_;
  Strand strand_;
  Capture out_, err_;
  asio::posix::stream_descriptor in_;
  asio::posix::stream_descriptor exit_watch_;  // the pidfd
  asio::steady_timer deadline_, grace_, idle_;
  std::chrono::steady_clock::time_point last_output_{};
  std::optional<std::stop_callback<std::function<void()>>> stop_callback_;
  std::unique_ptr<Completion> completion_;

  std::string stdin_chunk_;
  std::size_t stdin_pos_ = 0;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = 0;
  std::optional<int> signal_;
  bool timed_out_ = false, cancelled_ = false, stopped_early_ = false, idle_expired_ = false, finished_ = false;
  std::exception_ptr failure_;
};

}  // namespace

boost::asio::awaitable<SubprocessResult> run_subprocess(SubprocessOptions options) {
  const auto started = std::chrono::steady_clock::now();
  // An argv refused below still closes the given stdin (it is owned from the call on).
  UniqueFd refused_stdin(options.argv.empty() || options.argv.front().empty() ? options.stdin_fd : -1);
  if (options.argv.empty() || options.argv.front().empty())
    throw ValueError("run_subprocess: argv must name a program (argv is empty)");
  for (const int fd : options.keep_fds)
    if (fd <= 2) throw ValueError("run_subprocess: keep_fds entry " + std::to_string(fd) + " is not above 2");
  auto executor = co_await asio::this_coro::executor;
  auto run = std::make_shared<Run>(executor, std::move(options));
  run->spawn();
  // The frame must not keep `run` alive while suspended: Run owns the completion, which owns
  // this frame, so a strong reference here would be a cycle that io_context destruction
  // could never break (the child would outlive it). The reference moves into the
  // initiation and from there into the operations. The initiation is a named local, not a
  // temporary inside the co_await expression, because GCC 12 mishandles the latter.
  auto initiate = [run = std::move(run), started](auto handler) mutable {
    auto owner = std::move(run);
    owner->start(std::make_unique<CompletionFor<decltype(handler)>>(std::move(handler)), started);
  };
  SubprocessResult result =
      co_await asio::async_initiate<decltype(asio::use_awaitable), void(std::exception_ptr, SubprocessResult)>(
          std::move(initiate), asio::use_awaitable);
  co_return result;
}

}  // namespace maf::sandbox::support
