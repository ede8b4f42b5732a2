#pragma once
// `maf-sandbox.key.v1` (D-8): the proxy's lossless attribution label, and
// reading it back when the proxy's egress decisions are published at teardown (D-27).
//
// Value: base64url *with padding* of the array [scope, thread_id, agent_id, call_id]
// serialised byte-for-byte as Python's default `json.dumps` does (", " separators, ASCII
// only: `\uXXXX` in lowercase hex with surrogate pairs above the BMP, the short escapes
// \" \\ \n \r \t \b \f, and \u00XX for the other controls and DEL), so labels written here
// and by the Python package decode alike. Over 4096 encoded bytes (inclusive limit), the
// label is written empty and a warning is logged.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "maf/sandbox/key.hpp"

namespace maf::sandbox::docker::detail {

inline constexpr std::string_view kLabelKeyV1 = "maf-sandbox.key.v1";
/// The attribution label budget (D-8, "Fixed constants"), in encoded bytes (inclusive).
inline constexpr std::size_t kKeyV1Limit = 4096;

/// Python's `json.dumps(list_of_str)` with default arguments. Throws ValueError naming the
/// position of ill-formed UTF-8 (a Python str cannot hold it).
std::string python_json_dumps(const std::vector<std::string>& strings);

/// RFC 4648 section 5 base64url with `=` padding (Python's urlsafe_b64encode), over OpenSSL.
std::string base64url_encode(std::string_view bytes);
/// The inverse, strict: the length a multiple of 4, the url-safe alphabet only, padding only
/// at the end, no stray bits (canonical). nullopt otherwise.
std::optional<std::string> base64url_decode(std::string_view text);

/// The label value for `key`: the encoding above, or "" (with a warning) when it exceeds
/// kKeyV1Limit or a field is not well-formed UTF-8.
std::string encode_key_v1(const SandboxKey& key);

/// The key a proxy's labels attribute its decisions to, or nullopt ("no attribution").
/// With a non-empty key.v1 label: it must be valid base64url of a JSON array of exactly 4
/// strings whose `label_value`s equal the proxy's scope, thread and agent labels, with the
/// call label absent for an empty call_id and equal otherwise; a refused label is never
/// replaced by `caller`. With no key.v1 label, or an empty one: `caller` stands in only
/// when every selector label (call included) matches it.
std::optional<SandboxKey> attributed_key(const std::map<std::string, std::string>& labels,
                                         const std::optional<SandboxKey>& caller = std::nullopt);

}  // namespace maf::sandbox::docker::detail
