#include "tools.hpp"

#include "maf/sandbox/standard_tools.hpp"

namespace maf::sandbox::mcp {

std::vector<SandboxedTool> make_toolset(std::shared_ptr<SandboxRouter> router, const SandboxSpec& spec,
                                        const ToolsetOptions& options) {
  // The library's standard tools (standard_tools.hpp), as the server has always served them:
  // run_command, write_file, read_file, collect_outputs and run_code — list_files is not part
  // of its advertised surface (docs/mcp.md).
  return standard_tools(std::move(router), fixed_conversation(options.scope, options.thread), spec,
                        {.agent = options.agent,
                         .cleanup = options.cleanup,
                         .output_sink = options.sink,
                         .list_files = false,
                         .run_code = options.run_code});
}

nlohmann::json tool_list_json(const std::vector<SandboxedTool>& tools, const std::vector<SandboxSpec>& specs) {
  static const nlohmann::json handle_property{
      {"type", "string"},
      {"description",
       "A sandbox handle open_sandbox returned: run in that sandbox, which keeps its files and processes "
       "between calls. Without it, the call gets a fresh sandbox (2026-07-28 clients) or the session's "
       "(2025 clients)."}};
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : tools) {
    nlohmann::json j = to_mcp_json(t.definition());
    j["inputSchema"]["properties"]["sandbox"] = handle_property;
    list.push_back(std::move(j));
  }
  nlohmann::json kinds = nlohmann::json::array();
  for (const auto& s : specs) kinds.push_back(s.kind());
  list.push_back(
      {{"name", "open_sandbox"},
       {"description",
        "Open a sandbox that lasts across calls and return its handle (pass it as `sandbox` to run_command, "
        "write_file, read_file, collect_outputs, run_code). It is closed after an idle timeout, by close_sandbox, "
        "or when the server exits. `spec` picks one of the server's configured workloads (default: the first)."},
       {"inputSchema",
        {{"type", "object"},
         {"properties", {{"spec", {{"type", "string"}, {"enum", kinds}, {"description", "a configured spec's kind"}}}}},
         {"additionalProperties", false}}},
       {"annotations", {{"readOnlyHint", false}, {"destructiveHint", false}, {"idempotentHint", false}, {"openWorldHint", false}}}});
  list.push_back(
      {{"name", "close_sandbox"},
       {"description", "Close a sandbox open_sandbox opened: its files and processes are disposed."},
       {"inputSchema",
        {{"type", "object"},
         {"properties", {{"sandbox", {{"type", "string"}, {"description", "the handle open_sandbox returned"}}}}},
         {"required", {"sandbox"}},
         {"additionalProperties", false}}},
       {"annotations", {{"readOnlyHint", false}, {"destructiveHint", true}, {"idempotentHint", true}, {"openWorldHint", false}}}});
  return list;
}

}  // namespace maf::sandbox::mcp
