// The five-call layer (handle.hpp): a key, a spec and a sandbox held together, disposed by
// kind when the holder is done. Everything goes through the router; nothing here decides.
#include "maf/sandbox/handle.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>

#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/router.hpp"

namespace maf::sandbox {

struct SandboxHandle::State {
  State(SandboxRouter& r, SandboxKey k, SandboxSpec s, boost::asio::any_io_executor e)
      : router(&r), key(std::move(k)), spec(std::move(s)), executor(std::move(e)) {}
  SandboxRouter* router = nullptr;
  SandboxKey key;
  SandboxSpec spec;
  std::shared_ptr<Sandbox> sandbox;
  boost::asio::any_io_executor executor;
  bool closed = false;
};

SandboxHandle::SandboxHandle(std::unique_ptr<State> state) : state_(std::move(state)) {}
SandboxHandle::SandboxHandle(SandboxHandle&&) noexcept = default;

SandboxHandle& SandboxHandle::operator=(SandboxHandle&& other) noexcept {
  if (this != &other) {
    SandboxHandle dropped(std::move(*this));  // an open handle being replaced is disposed
    state_ = std::move(other.state_);
  }
  return *this;
}

SandboxHandle::~SandboxHandle() {
  if (!state_ || state_->closed) return;
  State& s = *state_;
  s.sandbox.reset();
  logger()->warn("sandbox of kind '{}' for {} was not closed; disposing it in the background "
                 "(co_await close() disposes and reports)",
                 s.spec.kind(), to_string(s.key));
  boost::asio::co_spawn(
      s.executor,
      [router = s.router, key = s.key, kind = s.spec.kind()]() -> boost::asio::awaitable<void> {
        if (!co_await router->dispose_kind(key, kind))
          logger()->warn("background disposal of kind '{}' for {} was not confirmed", kind, to_string(key));
      },
      [](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          logger()->warn("background disposal failed: {}", x.what());
        } catch (...) {
          logger()->warn("background disposal failed");
        }
      });
}

boost::asio::awaitable<SandboxHandle> SandboxHandle::open(SandboxRouter& router, SandboxKey key, SandboxSpec spec) {
  // A refusal comes first and touches nothing (C-65). Past it, an acquire that fails may
  // have left something under this key and kind (a container whose probe then refused), so
  // that is disposed before the error goes up: the caller never holds what it cannot see.
  router.ensure_can_serve(spec);
  // (No co_await inside a braced initializer: GCC 12 miscompiles temporaries there.)
  const boost::asio::any_io_executor executor = co_await boost::asio::this_coro::executor;
  auto state = std::make_unique<State>(router, key, spec, executor);
  std::exception_ptr failure;
  try {
    state->sandbox = co_await router.acquire(key, spec);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    if (!co_await router.dispose_kind(key, spec.kind()))
      logger()->warn("after a failed acquire of kind '{}' for {}, disposal was not confirmed", spec.kind(),
                     to_string(key));
    std::rethrow_exception(failure);
  }
  co_return SandboxHandle(std::move(state));
}

Sandbox& SandboxHandle::sandbox() const {
  if (!state_ || state_->closed || !state_->sandbox) throw ValueError("this sandbox handle is closed");
  return *state_->sandbox;
}

const SandboxSpec& SandboxHandle::spec() const noexcept { return state_->spec; }
const SandboxKey& SandboxHandle::key() const noexcept { return state_->key; }
bool SandboxHandle::closed() const noexcept { return !state_ || state_->closed; }

boost::asio::awaitable<void> SandboxHandle::write(std::string path, std::string content) {
  co_await sandbox().write_file(std::move(path), std::move(content));
}

boost::asio::awaitable<ExecResult> SandboxHandle::run(Command command, std::chrono::milliseconds timeout) {
  co_return co_await sandbox().exec(std::move(command), ".", timeout);
}

boost::asio::awaitable<std::string> SandboxHandle::read(std::string path, std::int64_t max_bytes) {
  co_return co_await sandbox().read_file(std::move(path), ".", max_bytes);
}

boost::asio::awaitable<std::vector<LandedArtifact>> SandboxHandle::collect_into(std::filesystem::path directory) {
  co_return co_await collect_outputs(sandbox(), state_->spec, make_file_system_sink(directory));
}

boost::asio::awaitable<bool> SandboxHandle::close() {
  if (closed()) co_return true;
  State& s = *state_;
  s.closed = true;  // first: a second close, or the destructor, does nothing more
  s.sandbox.reset();
  const bool confirmed = co_await s.router->dispose_kind(s.key, s.spec.kind());
  if (!confirmed) logger()->warn("disposal of kind '{}' for {} was not confirmed", s.spec.kind(), to_string(s.key));
  co_return confirmed;
}

BlockingSandbox::BlockingSandbox(SandboxRouter& router, SandboxKey key, SandboxSpec spec)
    : run_(std::make_unique<BlockingRunner>()),
      handle_(std::make_unique<SandboxHandle>(
          (*run_)([&] { return SandboxHandle::open(router, std::move(key), std::move(spec)); }))) {}

BlockingSandbox::BlockingSandbox(BlockingSandbox&&) noexcept = default;

BlockingSandbox& BlockingSandbox::operator=(BlockingSandbox&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::move(other.handle_);
    run_ = std::move(other.run_);
  }
  return *this;
}

BlockingSandbox::~BlockingSandbox() { close(); }

void BlockingSandbox::write(std::string path, std::string content) {
  (*run_)([&] { return handle_->write(std::move(path), std::move(content)); });
}

ExecResult BlockingSandbox::run(Command command, std::chrono::milliseconds timeout) {
  return (*run_)([&] { return handle_->run(std::move(command), timeout); });
}

std::string BlockingSandbox::read(std::string path, std::int64_t max_bytes) {
  return (*run_)([&] { return handle_->read(std::move(path), max_bytes); });
}

std::vector<LandedArtifact> BlockingSandbox::collect_into(std::filesystem::path directory) {
  return (*run_)([&] { return handle_->collect_into(std::move(directory)); });
}

bool BlockingSandbox::close() noexcept {
  if (!handle_ || handle_->closed()) return true;
  try {
    return (*run_)([&] { return handle_->close(); });
  } catch (const std::exception& e) {
    logger()->warn("closing the sandbox of kind '{}' for {} failed: {}", handle_->spec().kind(),
                   to_string(handle_->key()), e.what());
  } catch (...) {
    logger()->warn("closing a sandbox failed");
  }
  return false;
}

Sandbox& BlockingSandbox::sandbox() const {
  if (!handle_) throw ValueError("this sandbox handle was moved from");
  return handle_->sandbox();
}
const SandboxSpec& BlockingSandbox::spec() const noexcept { return handle_->spec(); }
const SandboxKey& BlockingSandbox::key() const noexcept { return handle_->key(); }
bool BlockingSandbox::closed() const noexcept { return !handle_ || handle_->closed(); }

}  // namespace maf::sandbox
