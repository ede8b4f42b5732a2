#pragma once
// Reading the tar stream `docker cp C:path -` answers (D-17…D-19): the first entry's
// header for a stat, the header and a bounded body for a read. Stateless helpers over
// support::TarReader, so the retry policy (512-byte prefix first, 64 KiB on need) lives in
// one place.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/support/tar.hpp"

namespace maf::sandbox::docker::detail {

/// The first tar prefix tried, and the one a retry uses ("Fixed constants": extended metadata
/// is bounded by a 64 KiB prefix and 32 extended headers).
inline constexpr std::size_t kFirstPrefix = 512;
inline constexpr std::size_t kRetryPrefix = 64 * 1024;
/// Both, in order. A named array: GCC 12 miscompiles a braced list iterated across a
/// co_await inside a coroutine.
inline constexpr std::array<std::size_t, 2> kPrefixes{kFirstPrefix, kRetryPrefix};

/// What a prefix of the stream told.
struct FirstEntry {
  bool need_more = false;  ///< the prefix was cut before the entry (or its body) completed
  support::TarEntry entry;
  std::string body;  ///< only when `want_body`
  /// Where the entry's body starts in the stream (after its header and any extended
  /// headers); meaningful once `entry` is known.
  std::size_t body_offset = 0;
};

/// Parse the first entry of `bytes`; `cut` says the stream was longer than `bytes`. With
/// `want_body`, the entry's body is collected too. Throws OSError naming `path` for a
/// stream that ends without a header or mid-body, and for refused extended metadata.
FirstEntry parse_first_entry(const std::string& bytes, bool cut, bool want_body, const std::string& path);

/// The body of `head` — the first entry of `stream`, a regular file, as parse_first_entry
/// found it — taken out of `stream` in place: the stream's own buffer becomes the body, so
/// reading a file holds one copy of it rather than the stream and a second copy (a 32 MiB
/// read peaked at just over 2x the payload). nullopt when `cut` and the stream ends before
/// the body does; OSError naming `path` when an uncut stream ends early.
std::optional<std::string> take_file_body(std::string&& stream, const FirstEntry& head, bool cut,
                                          const std::string& path);

/// Every directory on an absolute, normalised guest path, outermost first, "/" excluded:
/// "/a/b/c" -> {"/a", "/a/b", "/a/b/c"}.
std::vector<std::string> cumulative_components(const std::string& absolute_path);

}  // namespace maf::sandbox::docker::detail
