#pragma once
// What the process and Docker otel tests share: the tool they call for real, and the checks
// on a decoded span tree — one call's children, each in the call's trace, parented under it
// and ending inside it.
#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "otel/otlp_receiver.hpp"

namespace maf::sandbox::test {

/// `{"text": string}`, required.
inline nlohmann::json text_schema() {
  return {{"type", "object"},
          {"properties", {{"text", {{"type", "string"}}}}},
          {"required", nlohmann::json::array({"text"})}};
}

/// Writes the argument into the sandbox, copies it there with exec, reads the copy back: an
/// acquire, a transfer each way and an exec. A refused acquire throws SandboxToolRefused.
inline ToolBody copy_text_body() {
  return [](SandboxToolSession session, nlohmann::json args) -> boost::asio::awaitable<ToolResult> {
    auto acquired = co_await session.acquire();
    std::shared_ptr<Sandbox> sandbox = acquired.value();
    co_await sandbox->write_file("in.txt", args["text"].get<std::string>());
    const ExecResult r = co_await sandbox->exec(Command("cat in.txt > out.txt"));
    if (r.exit_code != 0) co_return ToolResult::error("cat failed");
    co_return ToolResult::text(co_await sandbox->read_file("out.txt"));
  };
}

inline const nlohmann::json* find_span(const std::vector<nlohmann::json>& spans, const std::string& name) {
  for (const auto& s : spans)
    if (s["name"] == name) return &s;
  return nullptr;
}

inline std::uint64_t span_time(const nlohmann::json& span, const char* field) {
  return std::stoull(span[field].get<std::string>());
}

/// Every name in `children` is a span of `call`'s trace, parented under it, attributed to
/// `backend`, its end no earlier than its start and inside the call's window.
inline void check_children(const std::vector<nlohmann::json>& spans, const nlohmann::json& call,
                           const std::string& backend, std::initializer_list<const char*> children) {
  for (const char* child : children) {
    INFO(child);
    const auto* s = find_span(spans, child);
    REQUIRE(s);
    CHECK((*s)["traceId"] == call["traceId"]);
    CHECK((*s)["parentSpanId"] == call["spanId"]);
    CHECK(string_attribute(*s, "maf_sandbox.backend") == backend);
    CHECK(span_time(*s, "endTimeUnixNano") >= span_time(*s, "startTimeUnixNano"));
    CHECK(span_time(*s, "endTimeUnixNano") <= span_time(call, "endTimeUnixNano"));
    CHECK(span_time(*s, "endTimeUnixNano") >= span_time(call, "startTimeUnixNano"));
  }
}

}  // namespace maf::sandbox::test
