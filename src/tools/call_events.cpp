// The tool layer's events (docs/observability.md "Where the tool layer emits"): admitted when
// a call's body starts, released after its cleanup — so the cleanup's events fall inside the
// call's span — and the admission's queued event through AdmitOptions.
#include "tools/call_record.hpp"

namespace maf::sandbox::detail {

void observe_call(const detail::ToolBinding& b, ToolCallPhase phase, const std::string& call_id,
                  const std::optional<SandboxKey>& key, std::string error_type, std::string traceparent, std::optional<std::string> arguments,
                  std::optional<std::string> result) noexcept {
  const auto& observers = b.router->observers();
  if (!observers) return;
  try {
    ToolCallEvent event;
    if (key) event.context.key = *key;
    event.context.call_id = call_id;
    event.context.backend = b.backend;
    event.context.kind = b.spec.kind();
    event.phase = phase;
    event.tool = b.definition.name;
    event.error_type = std::move(error_type);
    event.traceparent = std::move(traceparent);
    event.arguments = std::move(arguments);
    event.result = std::move(result);
    emit(observers.get(), std::move(event));
  } catch (...) {
    // Only building the event can throw (allocation); observation never changes the result.
  }
}

}  // namespace maf::sandbox::detail
