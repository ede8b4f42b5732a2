// The five-call layer (handle.hpp): a key, a spec and a sandbox held together, disposed by
// kind when the holder is done. Everything goes through the router; nothing here decides.
#include "maf/sandbox/handle.hpp"

#include <optional>
#include <utility>

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

/// What a BlockingSandbox owns: its runner and, once open, its handle. The runner is declared
/// first so it is destroyed after the handle it drives.
struct BlockingSandbox::State {
  BlockingRunner run;
  std::optional<SandboxHandle> handle;
};

BlockingSandbox::BlockingSandbox(SandboxRouter& router, SandboxKey key, SandboxSpec spec) : state_(new State) {
  try {
    state_->handle.emplace(state_->run([&] { return SandboxHandle::open(router, std::move(key), std::move(spec)); }));
  } catch (...) {
    delete state_;
    throw;
  }
}

BlockingSandbox::BlockingSandbox(BlockingSandbox&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}

BlockingSandbox& BlockingSandbox::operator=(BlockingSandbox&& other) noexcept {
  if (this != &other) {
    close();
    delete state_;
    state_ = std::exchange(other.state_, nullptr);
  }
  return *this;
}

BlockingSandbox::~BlockingSandbox() {
  close();
  delete state_;
}

SandboxHandle& BlockingSandbox::open_handle() const {
  if (!state_ || !state_->handle) throw ValueError("this sandbox handle was moved from");
  return *state_->handle;
}

void BlockingSandbox::write(std::string path, std::string content) {
  SandboxHandle& handle = open_handle();
  state_->run([&] { return handle.write(std::move(path), std::move(content)); });
}

ExecResult BlockingSandbox::run(Command command, std::chrono::milliseconds timeout) {
  SandboxHandle& handle = open_handle();
  return state_->run([&] { return handle.run(std::move(command), timeout); });
}

std::string BlockingSandbox::read(std::string path, std::int64_t max_bytes) {
  SandboxHandle& handle = open_handle();
  return state_->run([&] { return handle.read(std::move(path), max_bytes); });
}

std::vector<LandedArtifact> BlockingSandbox::collect_into(const std::string& directory) {
  SandboxHandle& handle = open_handle();
  return state_->run([&] { return handle.collect_into(directory); });
}

bool BlockingSandbox::close() noexcept {
  if (closed()) return true;
  SandboxHandle& handle = *state_->handle;
  try {
    return state_->run([&] { return handle.close(); });
  } catch (const std::exception& e) {
    logger()->warn("closing the sandbox of kind '{}' for {} failed: {}", handle.spec().kind(),
                   to_string(handle.key()), e.what());
  } catch (...) {
    logger()->warn("closing a sandbox failed");
  }
  return false;
}

Sandbox& BlockingSandbox::sandbox() const { return open_handle().sandbox(); }
const SandboxSpec& BlockingSandbox::spec() const noexcept { return state_->handle->spec(); }
const SandboxKey& BlockingSandbox::key() const noexcept { return state_->handle->key(); }
bool BlockingSandbox::closed() const noexcept { return !state_ || !state_->handle || state_->handle->closed(); }

}  // namespace maf::sandbox
