// Conversation (conversation.hpp): the standard tools of one (scope, thread) of a SandboxHost,
// answered blocking, and the conversation's disposal when it ends.
#include "maf/sandbox/conversation.hpp"

#include <spdlog/spdlog.h>

#include <memory>
#include <utility>

#include "maf/sandbox/host_tools.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/standard_tools.hpp"
#include "maf/sandbox/tool.hpp"

namespace maf::sandbox {

namespace {
/// A registry of the conversation's own for its TextHostTools: JSON text in and out.
std::shared_ptr<HostToolRegistry> text_registry(std::vector<TextHostTool> functions) {
  auto registry = std::make_shared<HostToolRegistry>();
  for (TextHostTool& f : functions) {
    if (!f.function) throw ValueError("ConversationOptions::host_functions: '" + f.name + "' has no function");
    HostTool tool{.name = std::move(f.name), .description = std::move(f.description)};
    tool.function = [fn = std::move(f.function)](const nlohmann::json& arguments, const HostToolCallContext&) {
      return nlohmann::json::parse(fn(arguments.dump()));  // not JSON: a refusal, like a throw
    };
    registry->add(std::move(tool));
  }
  return registry;
}
}  // namespace

struct Conversation::Impl {
  SandboxHost* host;
  std::string scope;
  std::string thread;
  std::vector<SandboxedTool> tools;
  std::vector<ToolDefinition> definitions;
  bool closed = false;
};

Conversation::Conversation(SandboxHost& host, ConversationOptions options) {
  SandboxSpec spec = options.spec ? std::move(*options.spec) : standard_tools_spec();
  StandardToolsOptions tools{.agent = options.agent, .cleanup = rung_for(options.between_calls)};
  // The caller's registry, not owned: it outlives the conversation (conversation.hpp).
  if (options.host_tools && !options.host_functions.empty())
    throw ValueError("ConversationOptions: give host_tools or host_functions, not both");
  if (options.host_tools) tools.host_tools = std::shared_ptr<HostToolRegistry>(std::shared_ptr<void>(), options.host_tools);
  if (!options.host_functions.empty()) tools.host_tools = text_registry(std::move(options.host_functions));
  auto attached = standard_tools(host, fixed_conversation(options.scope, options.thread), spec, std::move(tools));
  auto impl = std::make_unique<Impl>(Impl{&host, std::move(options.scope), std::move(options.thread), std::move(attached), {}});
  for (const auto& t : impl->tools) impl->definitions.push_back(t.definition());
  impl_ = impl.release();
}

Conversation::Conversation(Conversation&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}

Conversation::~Conversation() {
  if (!impl_) return;
  if (!impl_->closed) {
    try {
      const ScopePurge purge = close();
      if (purge.undisposed)
        logger()->warn("conversation '{}/{}': not every sandbox was disposed: {}", impl_->scope, impl_->thread,
                       purge.undisposed->detail);
    } catch (const std::exception& e) {
      logger()->warn("conversation '{}/{}': disposal failed: {}", impl_->scope, impl_->thread, e.what());
    } catch (...) {
      logger()->warn("conversation '{}/{}': disposal failed", impl_->scope, impl_->thread);
    }
  }
  delete impl_;
}

const std::vector<ToolDefinition>& Conversation::definitions() const { return impl_->definitions; }

std::vector<std::string> Conversation::definitions_json(ToolFormat format) const {
  std::vector<std::string> out;
  for (const auto& d : impl_->definitions)
    out.push_back((format == ToolFormat::Mcp ? to_mcp_json(d) : to_openai_json(d)).dump());
  return out;
}

ToolReply Conversation::reply(std::string_view call_json) {
  const ToolResult result = call(call_json);
  return ToolReply{result.is_error, result.joined_text()};
}

ToolResult Conversation::call(const ToolCall& call) {
  if (!impl_ || impl_->closed)
    throw RuntimeError("Conversation::call('" + call.name + "'): the conversation was closed; its sandboxes are gone");
  for (const auto& t : impl_->tools)
    if (t.definition().name == call.name) return t.invoke_blocking(call);
  std::string names;
  for (const auto& d : impl_->definitions) names += (names.empty() ? "" : ", ") + d.name;
  return ToolResult::error("Error: there is no tool '" + call.name + "'; the tools are: " + names,
                           ContentLabels{Integrity::Untrusted, Confidentiality::Public});
}

ToolResult Conversation::call(std::string_view call_json) {
  ToolCall parsed;
  try {
    parsed = parse_tool_call(call_json);
  } catch (const ValueError& e) {
    return ToolResult::error(std::string("Error: ") + e.what(), ContentLabels{Integrity::Untrusted, Confidentiality::Public});
  }
  return call(parsed);
}

void Conversation::add(const SandboxedTool& tool) {
  const std::string& name = tool.definition().name;
  for (const auto& d : impl_->definitions)
    if (d.name == name) throw ValueError("Conversation::add: a tool named '" + name + "' is already in the conversation");
  impl_->tools.push_back(tool);
  impl_->definitions.push_back(tool.definition());
}

ScopePurge Conversation::close() {
  if (!impl_ || impl_->closed) return {};
  impl_->closed = true;
  return impl_->host->dispose_scope(impl_->scope, impl_->thread);
}

}  // namespace maf::sandbox
