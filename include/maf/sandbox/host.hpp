#pragma once
/// @file host.hpp
/// SandboxHost: the one object a first program needs — a backend loaded by name from the
/// installed plugins, the router that holds the host's policy over it, and blocking
/// sandboxes opened through that policy. Light to include (no Asio): a host that wants the
/// coroutine API reaches the same router through router() and <maf/sandbox/async.hpp>.
///
/// @code
///   maf::sandbox::SandboxHost host("process", RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}));
///   auto sandbox = host.open({"my-app", "conversation-1", "agent", ""}, spec);
///   auto result = sandbox.run({"echo", "hello"});
/// @endcode
///
/// It adds no policy of its own: everything goes through SandboxRouter. Lifetime: the host
/// must outlive every BlockingSandbox it opened.

#include <string>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/blocking_sandbox.hpp"
#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/router_options.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

class SandboxHost {
public:
  /// Creates `backend` through PluginRegistry::global() with `config_json` — the text of a
  /// JSON object, the backend's configuration (its page in docs/backends/ lists the keys) —
  /// and builds the router over it. Throws what those throw: NoSandboxBackend naming the
  /// backends there are, a PluginLoadError, ValueError for text that is not a JSON object
  /// or for a configuration the backend refuses, SandboxBackendNotPermitted for a backend
  /// below the floor of `options`.
  explicit SandboxHost(const std::string& backend, RouterOptions options = {},
                       const std::string& config_json = "{}");
  SandboxHost(SandboxHost&&) noexcept;
  SandboxHost& operator=(SandboxHost&&) noexcept;
  SandboxHost(const SandboxHost&) = delete;
  SandboxHost& operator=(const SandboxHost&) = delete;
  ~SandboxHost();

  /// Checks the policy and acquires (BlockingSandbox over router()).
  BlockingSandbox open(SandboxKey key, SandboxSpec spec);
  /// The router's checks alone (C-65): throws the typed refusal, acquires nothing.
  void ensure_can_serve(const SandboxSpec& spec) const;
  /// Disposes every sandbox of one conversation, found from the provider (C-57), blocking.
  ScopePurge dispose_scope(const std::string& scope, const std::string& thread_id);
  /// The router, for the coroutine API (<maf/sandbox/async.hpp>).
  SandboxRouter& router() noexcept;

private:
  struct Impl;
  Impl* impl_ = nullptr;  // owning; not std::unique_ptr, to keep <memory> out of the light entry
};

}  // namespace maf::sandbox
