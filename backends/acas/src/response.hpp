#pragma once
// Readers of the service's answers (R-n, T-n). Pure functions over bytes: no Asio, no
// curl, so the fuzz preset (backends OFF) compiles this file straight into
// fuzz/fuzz_acas_response.cpp. Every malformed input becomes AcasResponseInvalid (or its
// AcasEntryPayloadIncomplete subtype), never a crash, a nlohmann exception or a guess.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "maf/sandbox/entry.hpp"

namespace maf::sandbox::acas::detail {

/// The fields of a sandbox document the backend reads.
struct SandboxDocument {
  std::string id;
  std::string state;           ///< "" when absent
  std::string stopped_reason;  ///< stateDetails.stoppedReason, "" when absent
  std::map<std::string, std::string> labels;
};

/// One page of a list route: a bare array, or `{value: [...], nextLink}`.
struct ListPage {
  std::vector<nlohmann::json> items;
  std::string next_link;  ///< "" on the last page
};

/// executeShellCommand's answer after A-22's validation.
struct ExecAnswer {
  int exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
};

/// A file-plane entry classified.
struct EntryPayload {
  std::string path;  ///< as the service echoed it ("" if absent)
  EntryKind kind = EntryKind::Other;
  std::optional<std::int64_t> size_bytes;
};

/// The manifest line of the exec capture protocol (A-24 step 2).
struct CaptureManifest {
  int exit_code = 0;
  std::int64_t stdout_size = 0;
  std::int64_t stderr_size = 0;
};

/// Parses a JSON body; AcasResponseInvalid naming `what` on failure.
nlohmann::json parse_json(std::string_view body, std::string_view what);

SandboxDocument parse_sandbox_document(const nlohmann::json& doc);
SandboxDocument parse_sandbox_document(std::string_view body);
/// `null`, `{}` and `{"value": null}` are failed listings, not empty ones.
ListPage parse_list_page(std::string_view body, std::string_view what);
/// `exitCode` an integer (not bool, not float), `stdout`/`stderr` strings when present.
/// Absent fields default to 0 / "" as the Python backend does (kept
/// deliberately; the capture protocol's manifest check catches a silently-empty answer).
ExecAnswer parse_exec_answer(std::string_view body);
/// isDir and isSymlink must be JSON booleans, else AcasEntryPayloadIncomplete.
EntryPayload parse_entry(const nlohmann::json& entry);
EntryPayload parse_entry(std::string_view body);
/// `entries` must be a list of entry objects with a `path`.
std::vector<EntryPayload> parse_dir_listing(std::string_view body);
/// The names (prebuilt, R-35) or `id`+`image.base` pairs (imported, R-37) in a list item;
/// items without them are skipped (a catalogue entry we cannot name cannot be matched).
std::optional<std::string> public_image_name(const nlohmann::json& item);
std::optional<std::pair<std::string, std::string>> imported_image(const nlohmann::json& item);
/// ProblemDetails / ARM envelope / raw text, shortened for a message (T-1). Never throws.
std::string problem_summary(std::string_view body);
/// T-4: `x-ms-retry-after-ms` first, then `Retry-After` delta-seconds; an HTTP-date or
/// garbage is read as absent. Capped at `cap`.
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view retry_after, std::string_view retry_after_ms,
                                                           std::chrono::milliseconds cap);
/// A token command's stdout: JSON with accessToken/access_token (az CLI, through token_command) and an
/// optional expires_on (unix seconds), or the whole trimmed text as the token.
/// Also reads Entra's `expires_in` (seconds from now; the service principal).
struct TokenAnswer {
  std::string token;
  std::optional<std::int64_t> expires_on;
  std::optional<std::int64_t> expires_in;
};
TokenAnswer parse_token_output(std::string_view text);
/// A-24 step 2. `limit` is the per-stream byte limit.
CaptureManifest parse_capture_manifest(std::string_view stdout_bytes, std::string_view token, std::int64_t limit);
/// R-52 as the service does it: each maximal *run* of invalid bytes becomes one U+FFFD.
std::string decode_utf8_collapsing(std::string_view bytes);
/// Standard base64 decoding (A-24 step 3); AcasResponseInvalid on anything else.
std::string base64_decode(std::string_view text);
std::string base64_encode(std::string_view bytes);

}  // namespace maf::sandbox::acas::detail
