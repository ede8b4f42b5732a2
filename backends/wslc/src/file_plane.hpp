#pragma once
// The engine stat (wslc.md W-21, W-22) and the one-entry tar upload (W-24), shared by the
// sandbox's hooks and acquire's work-base walk (W-18).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/wslc/runner.hpp"

namespace maf::sandbox::wslc::detail {

struct FilePlane {
  WslcRunner* runner;
  std::string container;
  std::string kind;
  std::chrono::milliseconds command_timeout;
};

/// No-follow stat of an absolute guest path: absent when missing; kind File / Directory /
/// Symlink / Other (size unknown). A directory costs a full subtree download (C-14).
boost::asio::awaitable<std::optional<GuestStat>> engine_stat(const FilePlane& plane, const std::string& path);

/// Extract `tar` at `/` of the container (`container cp - N:/`); raises naming `path`.
boost::asio::awaitable<void> upload_tar(const FilePlane& plane, std::string tar, const std::string& path);

/// The W-24 upload of one file at absolute `path`: the same one-entry archive, streamed —
/// its header, then `content` a chunk at a time, then padding and end blocks — so no
/// second whole copy of the file is ever held. `content` must outlive the call.
boost::asio::awaitable<void> upload_file(const FilePlane& plane, const std::string& path, std::string_view content,
                                         std::int64_t mtime);

}  // namespace maf::sandbox::wslc::detail
