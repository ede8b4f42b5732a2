#include "transports.hpp"

namespace maf::sandbox::mcp {

std::shared_ptr<ServerContext> make_server_context(const ServeOptions& options, boost::asio::any_io_executor executor) {
  auto context = std::make_shared<ServerContext>();
  context->info = options.info;
  context->legacy_cleanup = options.toolset.cleanup;
  context->legacy_tools = make_toolset(options.router, options.spec, options.toolset);
  ToolsetOptions stateless = options.toolset;
  stateless.agent = "mcp-stateless";
  stateless.cleanup = Cleanup::Dispose;  // 2026-07-28 has no session: a call without a handle keeps nothing
  context->stateless_tools = make_toolset(options.router, options.spec, stateless);
  std::vector<SandboxSpec> specs{options.spec};
  specs.insert(specs.end(), options.more_specs.begin(), options.more_specs.end());
  context->tool_list = tool_list_json(context->legacy_tools, specs);
  context->handles = std::make_shared<SandboxHandles>(executor, options.router, std::move(specs),
                                                      options.toolset, options.handles);
  context->handles->start_reaper();
  context->tasks = std::make_shared<TaskTable>(executor, TaskLimits{},
                                               [](const ToolResult& r) { return to_call_tool_result(r); });
  return context;
}

}  // namespace maf::sandbox::mcp
