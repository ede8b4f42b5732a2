#pragma once
/// @file otel.hpp
/// OpenTelemetry export of sandbox events: an observer that turns them into spans and sends
/// them as OTLP/HTTP JSON (docs/observability.md). Library `maf::sandbox-otel`, apart from
/// the core, so a host that does not export links no HTTP client.
///
/// Never blocking a call: on_event copies the event into a slot of a bounded buffer and
/// returns; a thread of the exporter's own swaps the buffer out, builds the spans and posts
/// them in batches. A full buffer
/// drops the event and counts it; a post that fails (unreachable, slow, refused) loses its
/// spans and counts them. Spans follow the GenAI semantic conventions for tool execution:
/// `execute_tool {tool}` (INTERNAL) per tool call, with children for acquire, exec,
/// transfers, cleanup and the proxy's decisions. Tool-call arguments and results are
/// exported only with `export_payloads`.
///
/// Light: the standard library and observer.hpp only (no curl, no JSON).

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "maf/sandbox/observer.hpp"

namespace maf::sandbox::otel {

/// A W3C Trace Context parent (`traceparent`).
struct TraceParent {
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> span_id{};
  std::uint8_t flags = 0;

  friend bool operator==(const TraceParent&, const TraceParent&) = default;
};

/// Parses a `traceparent` value per W3C Trace Context level 1: `VV-<32 hex>-<16 hex>-<2 hex>`,
/// lowercase hex, version not `ff`, neither id all zeros; version 00 is exactly 55 bytes, a
/// later version may carry more after a `-`. ValueError naming the value and the broken rule.
TraceParent parse_traceparent(std::string_view value);
/// The value back: `00-<trace>-<span>-<flags>`.
std::string to_string(const TraceParent& parent);

/// Parses `OTEL_EXPORTER_OTLP_HEADERS`: comma-separated `key=value` pairs, blanks around each
/// trimmed, values percent-decoded. An empty list item is skipped; an item without `=`, with
/// an empty key, a key that is not an HTTP token, a bad `%` escape or a decoded CR/LF/NUL is a
/// ValueError naming the item.
std::vector<std::pair<std::string, std::string>> parse_otlp_headers(std::string_view value);

struct OtlpOptions {
  /// The full traces URL, e.g. `http://collector:4318/v1/traces`.
  std::string endpoint;
  std::vector<std::pair<std::string, std::string>> headers{};
  std::string service_name = "maf-sandbox";
  /// The host's parent for spans that belong to no tool call with a traceparent of its own.
  std::optional<TraceParent> parent{};
  /// Events waiting for the exporter's thread; past it new events are dropped (counted).
  std::size_t max_queue = 2048;
  /// Spans per POST.
  std::size_t max_batch = 512;
  /// How long the thread waits for a batch to fill before posting what it has.
  std::chrono::milliseconds flush_interval = std::chrono::milliseconds(1000);
  /// Bound of one POST (connect included).
  std::chrono::milliseconds timeout = std::chrono::milliseconds(5000);
  /// Export tool-call arguments and results (`gen_ai.tool.call.arguments` / `.result`).
  bool export_payloads = false;

  /// From the standard variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or
  /// `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`), `OTEL_EXPORTER_OTLP_HEADERS`,
  /// `OTEL_SERVICE_NAME`, and `TRACEPARENT` as the parent. Absent when neither endpoint
  /// variable is set. A protocol variable other than `http/json`, a malformed header list or
  /// traceparent is a ValueError naming the variable.
  static std::optional<OtlpOptions> from_environment();
};

/// Counters, monotonic over the exporter's life.
struct OtlpStats {
  std::uint64_t events_accepted = 0;
  std::uint64_t events_dropped = 0;  ///< the queue was full
  std::uint64_t spans_exported = 0;  ///< the endpoint answered 2xx
  std::uint64_t spans_lost = 0;      ///< their POST failed
  std::uint64_t posts_failed = 0;
};

class OtlpExporter final : public SandboxObserver {
public:
  /// Starts the exporter's thread. ValueError for an empty endpoint or a zero queue/batch.
  explicit OtlpExporter(OtlpOptions options);
  /// Posts what is queued (each POST bounded by `timeout`), then stops the thread.
  ~OtlpExporter() override;
  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  /// Copies the event into a slot (reusing the slot's buffers), or drops it when max_queue
  /// slots are full. Never blocks on the network.
  void on_event(const SandboxEvent& event) override;
  /// Waits until every event accepted so far has been posted (or lost), at most `timeout`;
  /// true when it got there.
  bool flush(std::chrono::milliseconds timeout);
  OtlpStats stats() const;
  const OtlpOptions& options() const noexcept;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// An exporter configured from the environment, or null when no endpoint variable is set.
std::shared_ptr<OtlpExporter> exporter_from_environment();

}  // namespace maf::sandbox::otel
