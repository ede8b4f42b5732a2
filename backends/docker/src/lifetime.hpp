#pragma once
// A workload's lifetime as the engine records it (LIM-7, D-28): its Created, in RFC 3339,
// and the ttl label put on at creation. Read by an acquire (past_ttl) and by reap.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace maf::sandbox::docker::detail {

/// RFC 3339 with its timezone honoured; fractional seconds accepted and truncated.
std::optional<std::int64_t> parse_rfc3339(const std::string& text);
std::int64_t now_unix();
/// The `maf-sandbox.ttl_seconds` label's whole seconds; absent (or not a positive number: a
/// label nobody here wrote) when the workload was created without a lifetime bound.
std::optional<std::int64_t> ttl_label(const std::map<std::string, std::string>& labels);

}  // namespace maf::sandbox::docker::detail
