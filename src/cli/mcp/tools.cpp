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

}  // namespace maf::sandbox::mcp
