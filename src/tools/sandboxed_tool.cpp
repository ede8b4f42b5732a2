// sandboxed_tool (docs/tools.md, issue 26 items 2–4): attach checks (C-118) and invoke — the
// schema check, admission, the body, then the call's end in one place (finish_call,
// call_cleanup.cpp): the rung owed, the events, the labels. Admission and the owed cleanup
// are the router's (admit_call / release_call). The session is session.cpp.
#include "tools/call_record.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "maf/sandbox/host.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/sync.hpp"
#include "seam/storage_base.hpp"
#include "support/random_name.hpp"

namespace maf::sandbox {
namespace {

constexpr std::chrono::milliseconds kCancelledCallGrace{2000};

using detail::finish_call;
using detail::judge_read;
using detail::kValidationLabels;
using detail::observe_call;
using detail::random_hex;
using detail::stamp_labels;

/// The text items of a result, for a host that opted into payloads.
std::string result_text(const ToolResult& result) {
  std::string text;
  for (const auto& item : result.content)
    if (const auto* t = std::get_if<TextContent>(&item.value)) text += t->text;
  return text;
}

/// What ended a call, as ToolCallEvent::error_type: empty on success; "refused" for an
/// is_error result after a refused acquire (the C-119 idiom returns the sentence) or a
/// thrown SandboxToolRefused; "tool_error" for the body's own error result.
std::string call_error_type(const ToolResult& result, const std::exception_ptr& raised, bool refused) {
  if (raised) return error_type_name(raised);
  if (!result.is_error) return "";
  return refused ? "refused" : "tool_error";
}


/// ToolErrors::AsResults: an error that answers the model's input is shown to it; anything
/// else is the fixed sentence, its detail logged (the released event already names its class).
ToolResult error_result(const std::string& tool, const std::exception_ptr& raised) {
  try {
    std::rethrow_exception(raised);
  } catch (const TimeoutError& e) {
    return ToolResult::error(std::string("Error: ") + e.what(), kValidationLabels);
  } catch (const ValueError& e) {  // a bad or escaping path, an empty or malformed command
    return ToolResult::error(std::string("Error: ") + e.what(), kValidationLabels);
  } catch (const FileNotFoundError& e) {
    return ToolResult::error(std::string("Error: ") + e.what(), kValidationLabels);
  } catch (const IsADirectoryError& e) {
    return ToolResult::error(std::string("Error: ") + e.what(), kValidationLabels);
  } catch (const NotADirectoryError& e) {
    return ToolResult::error(std::string("Error: ") + e.what(), kValidationLabels);
  } catch (const SandboxOutputError& e) {  // an output missing, over a cap, not a regular file
    return ToolResult::error(std::string("Error: ") + e.what(), kValidationLabels);
  } catch (const std::exception& e) {
    logger()->warn("tool '{}': sandbox unavailable: {}", tool, e.what());
  } catch (...) {
    logger()->warn("tool '{}': sandbox unavailable: a non-standard exception", tool);
  }
  return ToolResult::error(kRefusalSandboxUnavailable);
}

}  // namespace

// --- SandboxedTool ---

const ToolDefinition& SandboxedTool::definition() const { return binding_->definition; }
Cleanup SandboxedTool::cleanup() const { return binding_->rung; }

boost::asio::awaitable<ToolResult> SandboxedTool::invoke(ToolCall call, std::stop_token stop) const {
  // Not a coroutine: the empty handler is made outside any co_await expression (GCC 12).
  return invoke(std::move(call), std::move(stop), OutputHandler{});
}

boost::asio::awaitable<ToolResult> SandboxedTool::invoke(ToolCall call, std::stop_token stop,
                                                         OutputHandler on_output) const {
  const auto& b = *binding_;
  std::optional<std::string> arguments;
  if (b.options.observation.observe_payloads)
    arguments = call.arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // A bad call runs nothing, so it is one released event: an errored execute_tool of its own.
  auto invalid = [&](std::string text, const char* error_type = "invalid_arguments") {
    observe_call(b, ToolCallPhase::Released, call.id, std::nullopt, error_type, {}, arguments);
    return ToolResult::error(std::move(text), kValidationLabels);
  };
  if (call.name != b.definition.name)
    co_return invalid("Error: tool '" + b.definition.name + "' cannot serve a call to '" + call.name + "'");
  if (auto problem = b.schema->problem(call.arguments))
    co_return invalid("Error: invalid arguments for tool '" + b.definition.name + "': " + *problem);
  // PROV-2, PROV-4: the inputs the call names are judged before anything runs.
  Integrity read_floor = Integrity::Trusted;
  if (b.options.provenance.file_inputs) {
    std::vector<std::string> inputs;
    try {
      inputs = b.options.provenance.file_inputs(call.arguments);
    } catch (const std::exception& e) {
      logger()->warn("tool '{}': file_inputs raised: {}", b.definition.name, e.what());
      co_return invalid("Error: tool '" + b.definition.name + "' could not name the inputs of this call",
                        "refused_input");
    }
    for (const auto& path : inputs)
      if (auto refusal = judge_read(b, path, read_floor)) co_return invalid(std::move(*refusal), "refused_input");
  }

  auto record = std::make_shared<detail::ToolCallRecord>();
  record->call_id = call.id;
  record->stop = stop;
  record->on_output = std::move(on_output);
  record->read_floor = read_floor;
  if (b.spec.isolation_scope() == IsolationScope::Call) record->key_call_id = "call-" + random_hex(16);
  SandboxToolSession session(binding_, record);
  // Read once, and only when observed: the key names the holder whose sandbox events belong
  // to this call. A host callback that throws here costs the event its key or parent, never
  // the call (the body meets the same callback itself).
  std::optional<SandboxKey> key;
  std::string traceparent;
  if (b.router->observers()) {
    try {
      if (auto k = session.key()) key = std::move(*k);
      if (b.options.observation.current_traceparent) traceparent = b.options.observation.current_traceparent();
    } catch (...) {
      logger()->warn("tool '{}': a host callback raised while observing the call; its event goes without it",
                     b.definition.name);
    }
  }
  observe_call(b, ToolCallPhase::Admitted, record->call_id, key, {}, std::move(traceparent), arguments);

  ToolResult result;
  std::exception_ptr raised;
  bool cancelled = false;
  bool thrown_refusal = false;
  try {
    result = co_await b.body(session, std::move(call.arguments));
  } catch (const SandboxToolRefused& refusal) {
    thrown_refusal = true;
    std::lock_guard guard(record->mutex);
    // A refused read quotes a store path the model may have chosen: public, not trusted.
    result = ToolResult::error(refusal.what(), record->input_refused ? kValidationLabels : kLibraryAuthoredLabels);
  } catch (const Cancelled&) {
    cancelled = true;
    raised = std::current_exception();
  } catch (...) {
    raised = std::current_exception();
  }
  // A cancelled caller is owed promptness, not nothing: a grace rather than a skip (C-120).
  const auto timeout = cancelled ? std::min(b.options.cleanup.reclaim_timeout, kCancelledCallGrace) : b.options.cleanup.reclaim_timeout;
  co_await finish_call(b, *record, timeout);
  std::optional<std::string> result_payload;
  if (b.options.observation.observe_payloads && !raised) result_payload = result_text(result);
  bool refused = thrown_refusal;
  {
    std::lock_guard guard(record->mutex);
    refused = refused || record->refused;
  }
  observe_call(b, ToolCallPhase::Released, record->call_id, key, call_error_type(result, raised, refused), {},
               std::move(arguments), std::move(result_payload));
  if (raised && (cancelled || b.options.errors == ToolErrors::Propagate)) std::rethrow_exception(raised);
  if (raised) {
    // ToolErrors::AsResults (sandboxed_tool.hpp is the one statement of what propagates).
    result = error_result(b.definition.name, raised);
    thrown_refusal = true;  // a library-made result: its labels are its own
  }
  {
    std::lock_guard guard(record->mutex);
    read_floor = record->read_floor;
  }
  stamp_labels(b, result, read_floor, thrown_refusal);
  co_return result;
}

ToolResult SandboxedTool::invoke_blocking(ToolCall call) const {
  thread_local BlockingRunner runner;
  return runner([&] { return invoke(std::move(call)); });
}

// --- attach (C-118) ---

SandboxedTool sandboxed_tool(ToolBody body, std::shared_ptr<SandboxRouter> router, CallerContext context,
                             std::string agent_id, SandboxSpec spec, std::string name, SandboxedToolOptions options) {
  if (!router || !router->enabled())
    throw NoSandboxBackend("sandboxed_tool '" + name + "': " +
                           (router ? "the router is disabled" : "no router was given") +
                           ", so there is no sandbox to offer the tool over");
  if (name.empty()) throw ValueError("sandboxed_tool: the tool name is empty");
  if (!body) throw ValueError("sandboxed_tool '" + name + "': the body is empty");
  const auto& prov = options.provenance;
  if (prov.standing_guidance && prov.standing_guidance->empty())
    throw ValueError("sandboxed_tool '" + name + "': standing_guidance is empty; leave it unset for a kind without one");
  if (prov.requires_file_integrity && !prov.file_provenance)
    throw ValueError("sandboxed_tool '" + name + "': requires_file_integrity '" +
                     std::string(to_string(*prov.requires_file_integrity)) +
                     "' needs the host's file_provenance record; without it every input is unknown");
  if (options.output_sink && prov.labels)
    throw ValueError("sandboxed_tool '" + name +
                     "': an output sink and explicit labels were both given; the sink decides what lands, so give one");
  const auto& outputs = spec.declared_outputs();
  const bool lands = spec.outputs_named_at_call_time() ||
                     std::any_of(outputs.begin(), outputs.end(),
                                 [](const DeclaredOutput& o) { return o.disposition == OutputDisposition::Land; });
  if (lands && !options.output_sink)
    throw SandboxOutputSinkRequired("sandboxed_tool '" + name + "': workload kind '" + spec.kind() +
                                    "' lands artifacts, so it needs an output sink");
  if ((!outputs.empty() || spec.outputs_named_at_call_time()) &&
      !spec.requires_capabilities().contains(Capability::FilesOut))
    throw ValueError("sandboxed_tool '" + name + "': workload kind '" + spec.kind() +
                     "' declares outputs but does not require files_out");
  if (options.cleanup.reclaim_timeout.count() <= 0)
    throw ValueError("sandboxed_tool '" + name + "': reclaim_timeout must be finite and positive, got " +
                     std::to_string(options.cleanup.reclaim_timeout.count()) + " ms");
  if (options.host_tools) spec = detail::with_host_tools(name, std::move(spec), *options.host_tools);
  router->ensure_can_serve(spec);
  // ACQ-2's rule, before any call: a base the acquire would refuse ("/" among them: a call
  // directory under the root would be reclaimed from it) is refused at attach.
  (void)detail::settle_storage_base("sandboxed_tool '" + name + "'", spec);
  if (options.admission.timeout.count() <= 0)
    throw ValueError("sandboxed_tool '" + name + "': admission timeout must be positive, got " +
                     std::to_string(options.admission.timeout.count()) + " ms");

  // docs/tools.md "The cleanup ladder": IsolationScope::Call always disposes; otherwise the
  // stronger of the host's rung and the kind's floor, and a rung the backend does not declare
  // is refused, never downgraded.
  Cleanup rung = spec.isolation_scope() == IsolationScope::Call
                     ? Cleanup::Dispose
                     : stronger(options.cleanup.rung, options.cleanup.workload_floor);
  if (rung != Cleanup::Dispose) {
    const auto backend = router->select(spec);
    const Capability needed = rung == Cleanup::Reclaim ? Capability::Reclaim : Capability::Snapshot;
    if (!backend->declarations().capabilities.contains(needed))
      throw SandboxCapabilityNotSupported("sandboxed_tool '" + name + "': cleanup '" + std::string(to_string(rung)) +
                                          "' needs backend '" + backend->name() + "' to declare capability '" +
                                          std::string(to_string(needed)) + "', which it does not (workload kind '" +
                                          spec.kind() + "')");
  }
  auto schema = std::make_unique<detail::ArgumentSchema>(options.input_schema, name);
  std::string backend_name;
  if (router->observers()) backend_name = router->select(spec)->name();  // ensure_can_serve passed

  auto binding = std::make_shared<detail::ToolBinding>(detail::ToolBinding{
      ToolDefinition{name, options.description, options.input_schema, options.annotations}, std::move(body),
      std::move(router), std::move(context), std::move(agent_id), std::move(spec), std::move(options), rung,
      std::move(schema), std::move(backend_name)});
  return SandboxedTool(std::move(binding));
}

SandboxedTool sandboxed_tool(ToolBody body, SandboxHost& host, CallerContext context, std::string agent_id,
                             SandboxSpec spec, std::string name, SandboxedToolOptions options) {
  // Not owned: the host outlives its tools, as it outlives its BlockingSandboxes (host.hpp).
  std::shared_ptr<SandboxRouter> router(std::shared_ptr<void>(), &host.router());
  return sandboxed_tool(std::move(body), std::move(router), std::move(context), std::move(agent_id), std::move(spec),
                        std::move(name), std::move(options));
}

CallerContext fixed_conversation(std::string scope, std::string thread_id) {
  CallerContext context;
  context.current_scope = [scope = std::move(scope)] { return scope; };
  context.current_thread_id = [thread = std::move(thread_id)] { return std::optional<std::string>(thread); };
  return context;
}

}  // namespace maf::sandbox
