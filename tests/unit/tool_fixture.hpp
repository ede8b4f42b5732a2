#pragma once
// A router over the in-process double, shaped for the tool layer's tests: the double's
// backend declares RECLAIM and SNAPSHOT unless a test says otherwise, and the floor is
// lowered to its rung on purpose.
#include <atomic>
#include <memory>
#include <string>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

namespace maf::sandbox::test {

inline CapabilitySet tool_capabilities() {
  CapabilitySet caps = testing::kInProcessCapabilities;
  caps.insert(Capability::Reclaim);
  caps.insert(Capability::Snapshot);
  return caps;
}

struct ToolFixture {
  std::shared_ptr<testing::InProcessSandbox> sandbox;
  std::shared_ptr<testing::InProcessSandboxBackend> backend;
  std::shared_ptr<SandboxRouter> router;
  CallerContext context;
  BlockingRunner run;

  explicit ToolFixture(CapabilitySet caps = tool_capabilities(), std::shared_ptr<testing::InProcessSandboxBackend> b = {}) {
    sandbox = std::make_shared<testing::InProcessSandbox>(
        testing::InProcessSandboxOptions{.capabilities = caps, .kind = "shell"});
    if (!b) {
      BackendDeclarations d = testing::kFakeBackendDeclarations;
      d.capabilities = caps;
      d.isolation_scopes = {IsolationScope::Conversation, IsolationScope::Call};
      b = std::make_shared<testing::InProcessSandboxBackend>(
          testing::InProcessSandboxBackendOptions{.sandbox = sandbox, .declarations = d});
    }
    backend = b;
    sandbox = backend->sandbox();
    router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{backend},
                                             RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{}));
    context.current_scope = [] { return std::string("tenant"); };
    context.current_thread_id = [] { return std::optional<std::string>("conv-1"); };
  }

  static SandboxSpec spec(IsolationScope scope = IsolationScope::Conversation) {
    return SandboxSpec({.kind = "shell",
                        .requires_capabilities = {Capability::Exec, Capability::FilesIn},
                        .isolation_scope = scope});
  }

  SandboxKey key() const { return SandboxKey{"tenant", "conv-1", "agent-1", ""}; }

  /// The tool's one object; REQUIREs that it attached.
  SandboxedTool attach(ToolBody body, SandboxedToolOptions options = {}, SandboxSpec s = spec()) {
    const SandboxedTool tool = sandboxed_tool(std::move(body), router, context, "agent-1", std::move(s), "shell", std::move(options));
    return tool;
  }

  ToolResult invoke(const SandboxedTool& tool, nlohmann::json args = nlohmann::json::object(), std::string id = "call-1") {
    return run([&] { return tool.invoke(ToolCall{id, "shell", args}); });
  }
};

/// A body that acquires, writes `note.txt` into its call directory, and answers with the path.
inline ToolBody writing_body(std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0)) {
  return [calls](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
    ++*calls;
    auto sandbox = co_await session.acquire();
    if (!sandbox) co_return ToolResult::error(sandbox.refusal());
    const std::string dir = session.guest_call_path();
    co_await (*sandbox)->write_file(dir + "/note.txt", "written by " + session.call_id(), ".");
    co_return ToolResult::text(dir);
  };
}

}  // namespace maf::sandbox::test
