// SandboxedToolOptions::host_tools (docs/host-tools.md "From a tool"): the registry attached
// once — its sealed aggregate put into the tool's spec at attach — and SandboxToolSession::exec,
// which runs each program of a call with a HostToolRun of that call.
#include "tools/call_record.hpp"

#include "maf/sandbox/host_tools.hpp"
#include "maf/sandbox/host_tools_over_exec.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "spec/command_check.hpp"

namespace maf::sandbox {

namespace detail {

SandboxSpec with_host_tools(const std::string& tool, SandboxSpec spec, HostToolRegistry& registry) {
  const HostToolAggregate aggregate = registry.aggregate();  // seals it: what is checked is what runs (HT-R5)
  if (spec.host_tools()) {
    if (*spec.host_tools() != aggregate)
      throw ValueError("sandboxed_tool '" + tool + "': the spec of workload kind '" + spec.kind() +
                       "' carries a host-tool aggregate that is not host_tools' own; leave the spec's unset and the "
                       "tool puts the registry's there");
    return spec;
  }
  SandboxSpec::Fields fields = spec.fields();
  fields.host_tools = aggregate;
  // The exec transport's needs (host_tools_over_exec.hpp).
  for (Capability c : {Capability::Exec, Capability::FilesIn, Capability::FilesOut, Capability::HostTools})
    fields.requires_capabilities.insert(c);
  return SandboxSpec(std::move(fields));
}

}  // namespace detail

boost::asio::awaitable<ExecResult> SandboxToolSession::exec(Sandbox& sandbox, Command command,
                                                            std::string working_directory,
                                                            std::chrono::milliseconds timeout) const {
  const auto& b = detail::binding_of(binding_);
  detail::refuse_malformed_command("tool '" + b.definition.name + "'", command);
  if (!b.options.host_tools)
    co_return co_await detail::exec_in_call(call_.get(), sandbox, std::move(command), std::move(working_directory),
                                            timeout);
  EventContext context;
  if (auto key = this->key()) context.key = std::move(*key);
  context.call_id = call_ ? call_->call_id : std::string{};
  context.backend = sandbox.backend_name();
  context.kind = sandbox.kind();
  HostToolRun run(*b.options.host_tools, false, std::move(context));
  // Named, not braced inside the co_await (GCC 12, docs/tools.md "GCC 12 and temporaries").
  const HostToolProgram program{
      .command = std::move(command), .working_directory = std::move(working_directory), .deadline = timeout};
  HostToolProgramResult ran = co_await run_with_host_tools(sandbox, run, program);
  ExecResult result;
  result.stdout_bytes = std::move(ran.output);
  result.exit_code = ran.exit_code;
  co_return result;
}

}  // namespace maf::sandbox
