#pragma once
// A minimal backend for router tests: declarations and isolation are set by the test;
// acquire/dispose record what they were asked. (The full in-process double lives in
// maf/sandbox/testing/in_process.hpp.)
#include <atomic>
#include <mutex>
#include <vector>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/testing/in_process.hpp"

namespace maf::sandbox::test {

class PolicyFakeBackend : public SandboxBackend {
public:
  PolicyFakeBackend(std::string name, std::string isolation, BackendDeclarations declarations = {})
      : name_(std::move(name)), isolation_(std::move(isolation)), declarations_(std::move(declarations)) {}

  std::string name() const override { return name_; }
  std::string isolation() const override { return isolation_; }
  const BackendDeclarations& declarations() const override { return declarations_; }

  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec,
                                                              AcquirePlan plan) override {
    {
      std::lock_guard lock(mutex);
      acquired.push_back({key, spec.kind()});
    }
    testing::InProcessSandboxOptions options;
    options.backend_name = name_;
    options.kind = spec.kind();
    options.storage_base = plan.storage_base;
    options.capabilities = declarations_.capabilities;
    co_return std::make_shared<testing::InProcessSandbox>(std::move(options));
  }
  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey key, std::optional<std::string> kind,
                                                                 std::optional<std::string>) override {
    {
      std::lock_guard lock(mutex);
      disposed.push_back({key, kind.value_or("*")});
    }
    if (throw_on_dispose) throw RuntimeError("dispose exploded");
    co_return dispose_failure;
  }
  boost::asio::awaitable<ScopePurge> dispose_scope(std::string scope, std::string thread_id) override {
    {
      std::lock_guard lock(mutex);
      purged.push_back({scope, thread_id});
    }
    if (throw_on_purge) throw RuntimeError("purge exploded");
    co_return purge;
  }

  std::mutex mutex;
  std::vector<std::pair<SandboxKey, std::string>> acquired;
  std::vector<std::pair<SandboxKey, std::string>> disposed;
  std::vector<std::pair<std::string, std::string>> purged;
  std::optional<DisposalFailure> dispose_failure;
  ScopePurge purge{1, std::nullopt};
  bool throw_on_dispose = false;
  bool throw_on_purge = false;

private:
  std::string name_;
  std::string isolation_;
  BackendDeclarations declarations_;
};

/// Declarations serving closed egress, every file capability, posix guests, both scopes.
inline BackendDeclarations generous_declarations() {
  BackendDeclarations d;
  d.capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::FilesList,
                    Capability::FilesDelete};
  d.egress_modes = {Egress::Closed};
  d.os_families = {OsFamily::Posix};
  d.isolation_scopes = {IsolationScope::Conversation, IsolationScope::Call};
  return d;
}

}  // namespace maf::sandbox::test
