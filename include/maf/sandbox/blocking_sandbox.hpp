#pragma once
/// @file blocking_sandbox.hpp
/// The five calls, blocking: open a sandbox through the router's policy, write, run, read or
/// collect, and have it disposed when the object goes. Light to include: no Asio here (the
/// awaitable form, SandboxHandle, is in handle.hpp).
///
/// Lifetime: the router the sandbox was opened through (a SandboxHost's, or one of the host's
/// own) must outlive it.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/artifact.hpp"
#include "maf/sandbox/call_defaults.hpp"
#include "maf/sandbox/command.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

/// The blocking form, for hosts without an io_context: each call runs to completion on the
/// calling thread (one private BlockingRunner per handle, so a backend that binds I/O to
/// the executor it first ran on keeps working). The destructor disposes; errors there are
/// logged, never thrown. `close()` disposes now and throws nothing either: it reports.
class BlockingSandbox {
public:
  /// Checks the policy and acquires through `router` (SandboxRouter::acquire). Throws the
  /// typed refusal or the acquire's error. SandboxHost::open is the same over its own router.
  BlockingSandbox(SandboxRouter& router, SandboxKey key, SandboxSpec spec);
  BlockingSandbox(BlockingSandbox&&) noexcept;
  BlockingSandbox& operator=(BlockingSandbox&&) noexcept;
  BlockingSandbox(const BlockingSandbox&) = delete;
  BlockingSandbox& operator=(const BlockingSandbox&) = delete;
  ~BlockingSandbox();

  void write(std::string path, std::string content);
  ExecResult run(Command command, std::chrono::milliseconds timeout = kDefaultExecTimeout);
  std::string read(std::string path, std::int64_t max_bytes = kDefaultReadCapBytes);
  /// The spec's declared outputs, landed under `directory` (a std::filesystem::path converts).
  std::vector<LandedArtifact> collect_into(const std::string& directory);
  /// Disposes now; true when the backend confirmed it (false is logged with the key).
  bool close() noexcept;

  /// The sandbox itself, for what the five calls do not cover (its methods are awaitable:
  /// <maf/sandbox/async.hpp>). Throws ValueError once closed.
  Sandbox& sandbox() const;
  const SandboxSpec& spec() const noexcept;
  const SandboxKey& key() const noexcept;
  bool closed() const noexcept;

private:
  // A plain owning pointer, not std::unique_ptr: <memory> alone would add a fifth to what this
  // light entry costs a consumer to compile (bench/RESULTS.md, "Compile cost").
  struct State;
  State* state_ = nullptr;
  /// The open handle; ValueError once moved from.
  SandboxHandle& open_handle() const;
};

}  // namespace maf::sandbox
