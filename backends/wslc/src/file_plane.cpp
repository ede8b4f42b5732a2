// Engine stat through `container cp N:P -` into a private temp directory, and the upload
// through `container cp - N:/` (wslc.md W-21, W-22, W-24).
#include "file_plane.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "maf/sandbox/wslc/commands.hpp"
#include "maf/sandbox/wslc/error_codes.hpp"
#include "said.hpp"

namespace maf::sandbox::wslc::detail {

using boost::asio::awaitable;

namespace {

/// C-14: there is no stdout form; the copy lands in a file named `-` in wslc's cwd, so each
/// stat gets a fresh private directory, removed on every path out.
class PrivateDir {
public:
  PrivateDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/maf-wslc-stat.XXXXXX";
    if (!::mkdtemp(pattern.data()))
      throw OSError(said("cannot create a private temp directory under ") + pattern);
    path_ = pattern;
  }
  ~PrivateDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

std::string describe(const FilePlane& plane, const std::string& verb, const std::string& path) {
  return "wslc container " + verb + " of guest path '" + path + "' in container " + plane.container +
         " (kind '" + plane.kind + "')";
}

/// W-22: `test` as root, no shell; 126/127 means the image lacks /usr/bin/test.
awaitable<int> guest_test(const FilePlane& plane, const char* flag, const std::string& path) {
  WslcCall call;
  call.args = exec_args(plane.container, "/", {"/usr/bin/test", flag, path}, "0");
  call.timeout = plane.command_timeout;
  call.max_stdout = call.max_stderr = 64 * 1024;
  WslcOutcome r = co_await run_lifecycle(*plane.runner, std::move(call), "container exec /usr/bin/test");
  if (r.exit_code == 126 || r.exit_code == 127)
    throw SandboxCapabilityNotSupported("backend 'wslc' cannot stat guest paths in container " + plane.container +
                                        " (kind '" + plane.kind + "'): the image has no usable /usr/bin/test (exit " +
                                        std::to_string(r.exit_code) + ")");
  co_return r.exit_code;
}

}  // namespace

awaitable<std::optional<GuestStat>> engine_stat(const FilePlane& plane, const std::string& path) {
  WslcOutcome r;
  {
    PrivateDir dir;
    WslcCall call;
    call.args = copy_out_args(plane.container, path);
    call.timeout = plane.command_timeout;
    call.max_stdout = call.max_stderr = 64 * 1024;  // wslc writes the file, not stdout
    call.cwd = dir.path();
    r = co_await run_lifecycle(*plane.runner, std::move(call), "container cp");
  }
  if (r.exit_code == 0) {
    GuestStat s;
    if (co_await guest_test(plane, "-L", path) == 0)
      s.kind = EntryKind::Symlink;
    else if (co_await guest_test(plane, "-f", path) == 0)
      s.kind = EntryKind::File;
    else if (co_await guest_test(plane, "-d", path) == 0)
      // The engine said "not a directory"; a guest saying otherwise is a swap in between.
      throw OSError(said("guest path '") + path + "' in container " + plane.container +
                    " changed kind while being inspected; refusing");
    else
      s.kind = EntryKind::Other;
    co_return s;
  }
  const WslcSymbol symbol = find_symbol(r.stderr_bytes);
  if (symbol == WslcSymbol::PathNotFound) co_return std::nullopt;
  if (is_directory_copy_refusal(r.stderr_bytes)) co_return GuestStat{EntryKind::Directory, std::nullopt};
  if (symbol == WslcSymbol::Fail) {
    // The directory message may be localized one day (an uncertainty about the real CLI): accept only a guest "yes".
    if (co_await guest_test(plane, "-d", path) == 0) co_return GuestStat{EntryKind::Directory, std::nullopt};
  }
  raise_wslc_failure(describe(plane, "cp", path), r.exit_code, r.stderr_bytes);
}

namespace {

/// upload_file's stdin piece.
constexpr std::size_t kUploadChunk = std::size_t{256} << 10;

awaitable<void> copy_in(const FilePlane& plane, WslcCall call, const std::string& path) {
  call.args = copy_in_args(plane.container);
  call.timeout = plane.command_timeout;
  call.max_stdout = call.max_stderr = 64 * 1024;
  WslcOutcome r = co_await run_lifecycle(*plane.runner, std::move(call), "container cp -");
  if (r.exit_code != 0) raise_wslc_failure(describe(plane, "cp -", path), r.exit_code, r.stderr_bytes);
}

}  // namespace

awaitable<void> upload_tar(const FilePlane& plane, std::string tar, const std::string& path) {
  WslcCall call;
  call.stdin_bytes = std::move(tar);
  co_await copy_in(plane, std::move(call), path);
}

awaitable<void> upload_file(const FilePlane& plane, const std::string& path, std::string_view content,
                            std::int64_t mtime) {
  // Built whole, the archive was a copy of the file beside the caller's bytes: a write
  // peaked at twice its payload (bench/wslc's memory phase). Streamed, the extra is a
  // chunk or two. The source runs only while the call is in flight (the runner closes stdin
  // when it reaps wslc), and the caller's `content` outlives the call.
  // The writer makes the header (a pax one too, for a long name); the body follows as is,
  // then zeros to the block and the two zero blocks that end the archive.
  support::TarStream stream = support::TarWriter().finish_with_file(
      path.substr(1), content, {.mode = 0644, .uid = 0, .gid = 0, .mtime = mtime});
  WslcCall call;
  call.stdin_bytes = std::move(stream.head);
  call.stdin_source = stream.after_head(kUploadChunk);
  co_await copy_in(plane, std::move(call), path);
}

}  // namespace maf::sandbox::wslc::detail
