// The forwarding wrapper of plugin_backend.hpp.
#include "plugins/plugin_backend.hpp"

#include <dlfcn.h>

namespace maf::sandbox::detail {

LoadedLibrary::~LoadedLibrary() {
  if (handle_) dlclose(handle_);
}

namespace {

/// Member order matters: `inner_` is destroyed before `library_`, so the plugin's
/// destructors run while its code is still mapped.
class PluginBackend final : public SandboxBackend {
public:
  PluginBackend(std::shared_ptr<SandboxBackend> inner, std::shared_ptr<LoadedLibrary> library)
      : library_(std::move(library)), inner_(std::move(inner)) {}

  std::string name() const override { return inner_->name(); }
  std::string isolation() const override { return inner_->isolation(); }
  const BackendDeclarations& declarations() const override { return inner_->declarations(); }

protected:
  // ACQ-5: the plugin's own acquire runs the checks, the lock and the walk; this only forwards.
  bool forwards_acquire() const noexcept override { return true; }
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec, AcquirePlan) override {
    std::shared_ptr<Sandbox> sandbox = co_await inner_->acquire(std::move(key), std::move(spec));
    co_return holding_library(std::move(sandbox));
  }
  // SNAP-8 forwards as ACQ-5 does: the plugin's own fork runs the checks, the lock and the walk.
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_fork(std::shared_ptr<Sandbox> source, std::string snapshot_id,
                                                           SandboxKey key, SandboxSpec spec, AcquirePlan) override {
    auto forked = inner_->fork(std::move(source), std::move(snapshot_id), std::move(key), std::move(spec));
    std::shared_ptr<Sandbox> sandbox = co_await std::move(forked);
    co_return holding_library(std::move(sandbox));
  }

private:
  /// The aliasing constructor: callers see the plugin's Sandbox, but own a pair. Members
  /// are destroyed last-first, so the sandbox (second) goes before the library (first).
  std::shared_ptr<Sandbox> holding_library(std::shared_ptr<Sandbox> sandbox) const {
    if (!sandbox) return sandbox;
    auto owner = std::make_shared<std::pair<std::shared_ptr<LoadedLibrary>, std::shared_ptr<Sandbox>>>(
        library_, std::move(sandbox));
    return std::shared_ptr<Sandbox>(owner, owner->second.get());
  }

public:
  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(
      SandboxKey key, std::optional<std::string> kind, std::optional<std::string> instance_id) override {
    co_return co_await inner_->dispose(std::move(key), std::move(kind), std::move(instance_id));
  }

  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) override {
    co_return co_await inner_->dispose_scope(std::move(scope), std::move(thread_id));
  }

  bool supports_reap() const noexcept override { return inner_->supports_reap(); }
  bool supports_reap_expired() const noexcept override { return inner_->supports_reap_expired(); }
  boost::asio::awaitable<ScopePurge> reap_expired(std::optional<std::string> scope) override {
    co_return co_await inner_->reap_expired(std::move(scope));
  }
  std::vector<std::pair<std::string, std::string>> facts() const override { return inner_->facts(); }
  void attach_observers(const std::shared_ptr<const ObserverSet>& observers) override {
    inner_->attach_observers(observers);
  }
  void attach_credential_source(CredentialSource source) override { inner_->attach_credential_source(std::move(source)); }

  boost::asio::awaitable<ScopePurge> reap(std::chrono::seconds older_than,
                                          std::optional<std::string> scope) override {
    co_return co_await inner_->reap(older_than, std::move(scope));
  }

private:
  std::shared_ptr<LoadedLibrary> library_;
  std::shared_ptr<SandboxBackend> inner_;
};

}  // namespace

std::shared_ptr<SandboxBackend> wrap_plugin_backend(std::shared_ptr<SandboxBackend> inner,
                                                    std::shared_ptr<LoadedLibrary> library) {
  return std::make_shared<PluginBackend>(std::move(inner), std::move(library));
}

}  // namespace maf::sandbox::detail
