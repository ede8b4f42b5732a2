#pragma once
/// @file standard_tools.hpp
/// The ready-made tools (docs/tools.md "The standard tools"): `run_command`, `write_file`,
/// `read_file`, `list_files`, `collect_outputs` (when the spec declares outputs) and `run_code`
/// (where the backend declares RUN_CODE), each a sandboxed_tool with its schema and MCP
/// annotations — the same tools `maf-sandbox mcp` serves. Every path is relative to the
/// sandbox's work directory and confined to it by the Sandbox NVI, so with
/// `BetweenCalls::KeepSandbox` a file one call writes is there for the next.
///
/// @code
///   auto tools = standard_tools(host, fixed_conversation("my-app", "c-1"), standard_tools_spec(),
///                               {.cleanup = rung_for(BetweenCalls::KeepSandbox)});
///   for (const auto& t : tools) std::cout << to_openai_json(t.definition()) << "\n";
/// @endcode
///
/// The blocking way in, with the conversation's disposal, is conversation.hpp.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/sandboxed_tool.hpp"

namespace maf::sandbox {

/// What every tool of the standard set shares. Every field has the safe default.
struct StandardToolsOptions {
  /// The key's agent id.
  std::string agent = "agent";
  /// The rung after each call; `rung_for(BetweenCalls::KeepSandbox)` keeps the conversation's
  /// files (between_calls.hpp).
  Cleanup cleanup = Cleanup::Dispose;
  /// Where collect_outputs lands what the spec declares (C-118: required when it lands any).
  std::shared_ptr<OutputSink> output_sink{};
  /// Host tools run_command's programs may call (`maf-host-tool NAME JSON` on PATH).
  std::shared_ptr<HostToolRegistry> host_tools{};
  /// Offer list_files (where the backend declares FILES_LIST).
  bool list_files = true;
  /// Offer run_code; absent: where the backend declares RUN_CODE.
  std::optional<bool> run_code{};
  /// What a body's exception becomes (sandboxed_tool.hpp).
  ToolErrors errors = ToolErrors::AsResults;
};

/// The standard tools over `router` for `spec` (C-118 runs for each: a spec the router
/// refuses throws its typed refusal; a null or disabled router is NoSandboxBackend).
std::vector<SandboxedTool> standard_tools(std::shared_ptr<SandboxRouter> router, CallerContext context,
                                          const SandboxSpec& spec, StandardToolsOptions options = {});
/// The same over a SandboxHost's router; the host outlives the tools.
std::vector<SandboxedTool> standard_tools(SandboxHost& host, CallerContext context, const SandboxSpec& spec,
                                          StandardToolsOptions options = {});

/// A spec the standard tools serve: workload kind `kind`, requiring EXEC, FILES_IN, FILES_OUT
/// and FILES_LIST.
SandboxSpec standard_tools_spec(std::string kind = "agent");

}  // namespace maf::sandbox
