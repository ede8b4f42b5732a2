#pragma once
// The guest-side shell the backend sends over executeShellCommand: the exact-bytes capture
// protocol, the acquire-time probes and write_file's chunked staging
// . Pure string builders, so the exact text is reviewable in one place.

#include <cstdint>
#include <string>
#include <string_view>

namespace maf::sandbox::acas::detail {

/// 48 KiB of raw bytes per guest command.
inline constexpr std::int64_t kChunkBytes = 49152;

/// `maf-exec-<32 hex>`, `.maf-<32 hex>.part` names.
std::string random_hex32();

/// Step 1: run `shell_line` with its streams on FIFOs, keep at most `limit + 1` bytes of
/// each, print `"<token> <rc> <outsize> <errsize>\n"`.
std::string capture_launch_script(std::string_view token, std::string_view shell_line, std::int64_t limit);
/// Step 3: chunk `index` of stream `stream` ('o' or 'e'), framed by token lines.
std::string capture_chunk_script(std::string_view token, char stream, std::int64_t index);
/// Step 4.
std::string capture_cleanup_script(std::string_view token);

/// A-31 commands. `target` and `staged` are absolute guest paths.
std::string write_begin_script(std::string_view parent, std::string_view target, std::string_view staged);
std::string write_chunk_script(std::string_view staged, std::string_view base64_chunk);
std::string write_commit_script(std::string_view target, std::string_view staged);
std::string write_abort_script(std::string_view staged);

/// the guest's own `rm` of the file the file plane uploaded.
std::string removal_probe_script(std::string_view file);
/// A-15 `host-tools`: `mkdir -p /`, `mv -f` of a missing path exiting exactly 1, `nohup sh`.
std::string host_tools_probe_script(std::string_view missing);

/// `rm -f` / `rm -rf` of one absolute path.
std::string remove_script(std::string_view path, bool recursive);

}  // namespace maf::sandbox::acas::detail
