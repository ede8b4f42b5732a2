#pragma once
// Events -> OTLP spans (docs/observability.md "The span tree"). Confined to the exporter's
// thread: it keeps the tool calls in flight, so a child finds its execute_tool parent.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "maf/sandbox/otel.hpp"

namespace maf::sandbox::otel::detail {

class SpanBuilder {
public:
  SpanBuilder(std::optional<TraceParent> parent, bool export_payloads);

  /// Adds the spans `event` completes (none for a queued or admitted tool call) to `out`.
  void add(const SandboxEvent& event, std::vector<nlohmann::json>& out);
  /// The `resourceSpans` document of one POST.
  static nlohmann::json document(const std::string& service_name, std::vector<nlohmann::json> spans);
  /// Tool calls opened and not yet released.
  std::size_t calls_in_flight() const noexcept { return calls_.size(); }

  /// At most this many tool calls in flight; past it the oldest is forgotten (its children
  /// then go to the session's parent), so a tool layer that never releases cannot grow us.
  static constexpr std::size_t kMaxCallsInFlight = 4096;

private:
  struct Call {
    std::array<std::uint8_t, 16> trace_id{};
    std::array<std::uint8_t, 8> span_id{};
    std::optional<std::array<std::uint8_t, 8>> parent_span_id;
    std::chrono::system_clock::time_point start;
    SandboxKey key;
    std::uint64_t order = 0;
  };
  struct Parent {
    std::array<std::uint8_t, 16> trace_id{};
    std::optional<std::array<std::uint8_t, 8>> span_id;
  };

  Parent parent_for(const EventContext& context) const;
  std::array<std::uint8_t, 8> new_span_id();
  void open(const ToolCallEvent& event);
  void release(const ToolCallEvent& event, std::vector<nlohmann::json>& out);

  std::mt19937_64 random_;
  Parent session_;
  bool export_payloads_;
  std::map<std::string, Call> calls_;  ///< by tool call id
  /// Under CALL scope a sandbox's events carry the key's call_id, a host-made name, not the
  /// model's id: that name -> the tool call id, from the call's admitted event.
  std::map<std::string, std::string> by_key_call_;
  void forget(std::map<std::string, Call>::iterator call);
  std::uint64_t next_order_ = 0;
};

}  // namespace maf::sandbox::otel::detail
