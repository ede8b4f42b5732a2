#pragma once
// The tools `maf-sandbox mcp` serves (docs/mcp.md): the library's standard tools
// (<maf/sandbox/standard_tools.hpp>) — run_command, write_file, read_file, collect_outputs
// (when the spec declares outputs) and run_code (when the backend declares RUN_CODE). Every file path is relative to the sandbox's
// work directory and confined to it by the Sandbox NVI, so a file written by one call is there
// for the next when the cleanup rung keeps the sandbox (reclaim, reset's snapshot aside).

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "maf/sandbox/cleanup.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {
class OutputSink;
class SandboxRouter;
}  // namespace maf::sandbox

namespace maf::sandbox::mcp {

struct ToolsetOptions {
  std::string scope{};   ///< the conversation's scope (the key's first field)
  std::string thread{};  ///< the conversation: one MCP session
  std::string agent = "mcp";
  Cleanup cleanup = Cleanup::Dispose;
  std::shared_ptr<OutputSink> sink{};  ///< --out; required when the spec lands artifacts (C-118)
  bool run_code = false;             ///< the backend declares RUN_CODE
};

/// Attaches the tools (C-118 runs here: a spec the router refuses throws its typed refusal).
std::vector<SandboxedTool> make_toolset(std::shared_ptr<SandboxRouter> router, const SandboxSpec& spec,
                                        const ToolsetOptions& options);

/// What tools/list answers: each tool's MCP definition with an optional `sandbox` argument
/// (a handle), then open_sandbox (its `spec` one of `specs`' kinds) and close_sandbox.
nlohmann::json tool_list_json(const std::vector<SandboxedTool>& tools, const std::vector<SandboxSpec>& specs);

}  // namespace maf::sandbox::mcp
