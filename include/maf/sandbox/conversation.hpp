#pragma once
/// @file conversation.hpp
/// Conversation: the blocking way from a SandboxHost to a model's tool calls (docs/tools.md
/// opens with it). One conversation's standard tools (standard_tools.hpp: run_command,
/// write_file, read_file, list_files, …) over one (scope, thread) of the host; `call` answers
/// a model's call with a result, never an exception for what the model got wrong; the
/// destructor disposes the conversation's sandboxes — the blocking twin of
/// SandboxRouter::with_scope. Light: no Asio and no JSON library (a host that wants
/// coroutines uses standard_tools.hpp over the same host). The text-only members —
/// definitions_json, reply, TextHostTool — need nothing else; definitions(), call() and a
/// HostToolRegistry speak the library's JSON types: include <maf/sandbox/tool.hpp> (and
/// <maf/sandbox/host_tools.hpp>) for them (issue 52: one TU of the agent loop ≤ 90k lines).
///
/// @code
///   SandboxHost host("process", RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}));
///   Conversation chat(host, {.scope = "my-app", .thread = "conversation-1"});
///   for (const std::string& d : chat.definitions_json()) std::cout << d << "\n";
///   ToolReply r = chat.reply(R"({"id":"1","name":"run_command","arguments":{"command":"ls"}})");
/// @endcode
///
/// Calls are made from one thread at a time (the thread that made the conversation, or any
/// one thread after it): a backend may bind I/O to the executor of first use.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/fwd.hpp"
#include "maf/sandbox/between_calls.hpp"
#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/host.hpp"
#include "maf/sandbox/spec.hpp"

namespace maf::sandbox {

/// A function the guest's programs may call back into the host (`maf-host-tool NAME JSON`),
/// over JSON text, so the host's program needs no JSON library: `function` gets the arguments
/// (a JSON object) as text and returns the JSON text the guest receives. What it throws, or
/// text that is not JSON, is a refusal the guest sees as a fixed sentence, the detail in the
/// host's log (docs/host-tools.md). Undeclared (HT-R1): the registry's default options.
struct TextHostTool {
  std::string name{};  ///< letters, digits, '_', '.', '-'
  std::string description{};
  std::function<std::string(const std::string& arguments_json)> function{};
};

/// One call's answer as the model reads it (Conversation::reply).
struct ToolReply {
  bool is_error = false;  ///< what the model got wrong, or "sandbox unavailable"
  std::string text{};     ///< the result's text content, joined (ToolResult::joined_text)
};

/// The shape of a definition as text: an OpenAI `tools[]` entry or an MCP `tools/list` entry.
enum class ToolFormat { OpenAI, Mcp };

/// One conversation of a host. Every field has a default a first program can keep.
struct ConversationOptions {
  /// The key's scope: the host's user or tenant.
  std::string scope = "default";
  /// The conversation's id: the sandboxes of one thread are the conversation's.
  std::string thread = "conversation";
  /// The key's agent id.
  std::string agent = "agent";
  /// What survives a call (between_calls.hpp): by default the sandbox, for the whole
  /// conversation — files written outside a call's own directory are there for the next call.
  BetweenCalls between_calls = BetweenCalls::KeepSandbox;
  /// Host tools the guest's programs may call through run_command (`maf-host-tool NAME JSON`);
  /// the caller's registry, sealed here, outliving the conversation. Null: none.
  HostToolRegistry* host_tools = nullptr;
  /// The workload; absent: standard_tools_spec() (kind "agent": exec, files in, out and list).
  std::optional<SandboxSpec> spec{};
  /// Host functions over JSON text, in a registry the conversation owns — the JSON-free
  /// alternative to `host_tools` (both given: ValueError).
  std::vector<TextHostTool> host_functions{};
};

class Conversation {
public:
  /// Attaches the standard tools (C-118): throws the typed refusal of a spec the host's router
  /// refuses, SandboxCapabilityNotSupported for a `between_calls` the backend cannot keep
  /// (KeepSandbox needs RECLAIM, RestoreSnapshot SNAPSHOT — FreshSandbox needs nothing).
  explicit Conversation(SandboxHost& host, ConversationOptions options = {});
  Conversation(Conversation&&) noexcept;
  Conversation& operator=(Conversation&&) = delete;
  Conversation(const Conversation&) = delete;
  Conversation& operator=(const Conversation&) = delete;
  /// close(), unless it ran; a failure is logged, never thrown.
  ~Conversation();

  /// What to hand the model: one definition per tool (to_openai_json / to_mcp_json).
  const std::vector<ToolDefinition>& definitions() const;
  /// The same definitions as JSON text, one entry each in `format`.
  std::vector<std::string> definitions_json(ToolFormat format = ToolFormat::OpenAI) const;
  /// Answers one call. What the model got wrong — an unknown tool, arguments failing the
  /// schema, a missing file, a path outside the work directory, a non-zero exit, a timeout,
  /// an empty command — is an is_error result it can read; an infrastructure failure is the
  /// fixed "sandbox unavailable" sentence (the detail in the log). Throws only RuntimeError
  /// after close().
  ToolResult call(const ToolCall& call);
  /// The same for one OpenAI-style call as JSON text (parse_tool_call); text that is not a call
  /// is an is_error result naming what is wrong.
  ToolResult call(std::string_view call_json);
  /// call(call_json), answered as text: what the model reads and whether it is an error.
  ToolReply reply(std::string_view call_json);

  /// Adds a tool of the host's own (sandboxed_tool.hpp) to what definitions() lists and call()
  /// answers. To share the conversation's sandbox, make it over the same host with
  /// fixed_conversation(scope, thread), the same agent and the conversation's spec (a sandbox
  /// is per key and workload kind). ValueError naming it when the name is taken.
  void add(const SandboxedTool& tool);

  /// Disposes the conversation's sandboxes now (SandboxHost::dispose_scope) and ends it: later
  /// calls throw RuntimeError. A second close() returns an empty purge.
  ScopePurge close();

private:
  struct Impl;
  Impl* impl_ = nullptr;  // owning
};

}  // namespace maf::sandbox
