// The emulator's Docker side; see docker_guest.hpp.
#include "docker_guest.hpp"

#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "maf/sandbox/support/subprocess.hpp"

namespace maf::sandbox::acas::emulator {
namespace {

constexpr const char* kHelper = "/.acas-emulator/busybox";
constexpr const char* kRunDir = "/.acas-emulator/run";

// E-22: FIFOs make the answer wait for every inherited writer (R-50), the way the service
// does; plain `docker exec` returns when the shell exits and drops later output.
// $1 = working directory, $2 = command, $3 = this exec's tag (its private directory, where
// the command's pid is left for E-23's kill). The command runs in its own session through
// the helper's `setsid` (a background job is never a group leader, so setsid does not fork:
// the pid is the process group). Exit 2 with the shell's own complaint on a missing
// directory (E-23, guessed).
constexpr const char* kExecWrapper = R"SH(
B=/.acas-emulator/busybox
d=/.acas-emulator/run/e.$3
$B mkdir "$d" || exit 125
$B mkfifo "$d/o" "$d/e" || exit 125
$B cat "$d/o" & p1=$!
$B cat "$d/e" >&2 & p2=$!
( cd "$1" || exit 2
  # The image's own sh from its PATH, never the helper's applet: an image without sh
  # must fail the way it does on the service.
  s=; IFS=:; for p in $PATH; do [ -x "$p/sh" ] && { s="$p/sh"; break; }; done; unset IFS
  [ -n "$s" ] || { echo "sh: not found" >&2; exit 127; }
  exec $B setsid "$s" -c "$2" ) >"$d/o" 2>"$d/e" &
c=$!
echo $c >"$d/pid"
wait $c
rc=$?
wait $p1; wait $p2
$B rm -rf "$d"
exit $rc
)SH";

// E-23: kills the command's process group (its pid, left by the wrapper) inside the container.
constexpr const char* kKillExec = R"SH(
p=$(/.acas-emulator/busybox cat "/.acas-emulator/run/e.$1/pid") || exit 1
/.acas-emulator/busybox kill -s KILL "-$p"
)SH";

// Exit codes the file scripts use for HTTP answers: 44 -> 404, 21 -> a directory where a
// file was needed, 39 -> directory not empty, 17 -> exists and is not a directory.
constexpr const char* kStat = R"SH(
B=/.acas-emulator/busybox
[ -e "$1" ] || [ -L "$1" ] || exit 44
$B stat -c '%F|%s|%a|%Y|' -- "$1" || exit 1
if [ -L "$1" ]; then $B readlink -- "$1"; fi
)SH";

constexpr const char* kList = R"SH(
B=/.acas-emulator/busybox
[ -d "$1" ] || exit 44
cd -- "$1" || exit 44
for f in * .*; do
  case "$f" in .|..) continue;; esac
  [ -e "$f" ] || [ -L "$f" ] || continue
  [ "$1" = / ] && [ "$f" = .acas-emulator ] && continue
  $B stat -c '%F|%s|%a|%Y|%n' -- "$f"
done
)SH";

constexpr const char* kDownload = R"SH(
B=/.acas-emulator/busybox
[ -e "$1" ] || exit 44
[ -d "$1" ] && exit 21
exec $B cat -- "$1"
)SH";

constexpr const char* kUpload = R"SH(
B=/.acas-emulator/busybox
d=$($B dirname -- "$1")
if [ "$2" = true ]; then $B mkdir -p -- "$d" || exit 1; fi
[ -d "$d" ] || exit 44
[ -d "$1" ] && exit 21
$B cat > "$1" || exit 1
$B chmod "$3" -- "$1"
)SH";

constexpr const char* kRemove = R"SH(
B=/.acas-emulator/busybox
[ -e "$1" ] || [ -L "$1" ] || exit 44
if [ -d "$1" ] && [ ! -L "$1" ]; then
  if [ "$2" = true ]; then $B rm -rf -- "$1" || exit 1; else $B rmdir -- "$1" 2>/dev/null || exit 39; fi
else
  $B rm -f -- "$1" || exit 1
fi
)SH";

constexpr const char* kMkdir = R"SH(
B=/.acas-emulator/busybox
[ -d "$1" ] && exit 0
if [ -e "$1" ] || [ -L "$1" ]; then exit 17; fi
[ -d "$($B dirname -- "$1")" ] || exit 44
$B mkdir -- "$1" || exit 1
)SH";

// Built outside any coroutine: GCC 12 rejects braced lists inside a coroutine's co_await
// expression ("array used as initializer").
template <typename... A>
std::vector<std::string> args_of(A&&... a) {
  std::vector<std::string> v;
  (v.emplace_back(std::forward<A>(a)), ...);
  return v;
}

int status_for(int exit_code) {
  switch (exit_code) {
    case 0: return 200;
    case 44: return 404;
    case 21: return 400;
    case 39: return 409;
    case 17: return 409;
    default: return 500;
  }
}

std::string detail_for(int exit_code, const std::string& stderr_bytes) {
  switch (exit_code) {
    case 44: return "Requested document not found.";
    case 21: return "The path is a directory.";
    case 39: return "Directory not empty.";
    case 17: return "The path exists and is not a directory.";
    default: return stderr_bytes.substr(0, 300);
  }
}

}  // namespace

DockerGuest::DockerGuest(std::string docker, std::string helper, std::string instance_label)
    : docker_(std::move(docker)), helper_(std::move(helper)), instance_label_(std::move(instance_label)) {}

boost::asio::awaitable<std::string> DockerGuest::start(const std::string& image, const std::string& sandbox_id) {
  support::SubprocessOptions o;
  // The helper keeps the container alive whatever the image's entrypoint does (CYRUS F1);
  // --network none: egress is recorded, never enforced (E-20, E-71).
  o.argv = {docker_, "run", "-d", "--network", "none",
            "--label", "acas-emulator=" + instance_label_, "--label", "acas-sandbox=" + sandbox_id,
            "--mount", "type=bind,src=" + helper_ + ",dst=" + kHelper + ",readonly",
            "--tmpfs", std::string(kRunDir) + ":mode=1777",
            "--entrypoint", kHelper, image, "sleep", "2147483647"};
  o.timeout = std::chrono::seconds(60);
  auto r = co_await support::run_subprocess(std::move(o));
  if (r.exit_code != 0) throw std::runtime_error("docker run " + image + " failed: " + r.stderr_bytes);
  std::string id = r.stdout_bytes;
  while (!id.empty() && (id.back() == '\n' || id.back() == '\r')) id.pop_back();
  co_return id;
}

boost::asio::awaitable<void> DockerGuest::remove(const std::string& container) {
  support::SubprocessOptions o;
  o.argv = {docker_, "rm", "-f", container};
  o.timeout = std::chrono::seconds(60);
  co_await support::run_subprocess(std::move(o));
}

boost::asio::awaitable<void> DockerGuest::pause(const std::string& container, bool paused) {
  support::SubprocessOptions o;
  o.argv = {docker_, paused ? "pause" : "unpause", container};
  o.timeout = std::chrono::seconds(60);
  auto r = co_await support::run_subprocess(std::move(o));
  if (r.exit_code != 0)
    throw std::runtime_error(std::string("docker ") + (paused ? "pause " : "unpause ") + container + " failed: " + r.stderr_bytes);
}

boost::asio::awaitable<void> DockerGuest::reap() {
  support::SubprocessOptions o;
  o.argv = {docker_, "ps", "-aq", "--filter", "label=acas-emulator=" + instance_label_};
  o.timeout = std::chrono::seconds(60);
  auto r = co_await support::run_subprocess(std::move(o));
  std::string ids = r.stdout_bytes;
  std::size_t pos = 0;
  while (pos < ids.size()) {
    auto nl = ids.find('\n', pos);
    std::string id = ids.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (!id.empty()) co_await remove(id);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
}

boost::asio::awaitable<GuestExec> DockerGuest::exec(const std::string& container, const std::string& command,
                                                    const std::string& working_directory, std::size_t cap) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string tag = std::to_string(rng());
  support::SubprocessOptions o;
  o.argv = {docker_, "exec", container, kHelper, "sh", "-c", kExecWrapper, "sh", working_directory, command, tag};
  o.max_stdout = cap;
  o.max_stderr = cap;
  o.timeout = std::chrono::hours(1);
  auto r = co_await support::run_subprocess(std::move(o));
  GuestExec out{std::move(r.stdout_bytes), std::move(r.stderr_bytes), r.exit_code, false};
  if (r.stdout_overflowed || r.stderr_overflowed) {
    // R-53: the service cuts at the ceiling, kills the program and says so on stderr. The
    // docker client is gone already; the command's process group inside the container is
    // killed here, before the answer is sent (E-23).
    support::SubprocessOptions k;
    k.argv = {docker_, "exec", "-u", "0", container, kHelper, "sh", "-c", kKillExec, "sh", tag};
    k.timeout = std::chrono::seconds(60);
    auto killed = co_await support::run_subprocess(std::move(k));
    out.killed = killed.exit_code == 0;
    out.truncated = true;
    out.exit_code = 137;
    out.stderr_bytes += "\n[adc] output exceeded " + std::to_string(cap) + " bytes and was truncated; process terminated\n";
  }
  co_return out;
}

boost::asio::awaitable<GuestAnswer> DockerGuest::file_script(const std::string& container, const char* script,
                                                             std::vector<std::string> args,
                                                             std::optional<std::string> stdin_bytes,
                                                             std::optional<std::chrono::milliseconds> timeout) {
  support::SubprocessOptions o;
  o.argv = {docker_, "exec"};
  if (stdin_bytes) o.argv.push_back("-i");
  o.argv.insert(o.argv.end(), {"-u", "0", container, kHelper, "sh", "-c", script, "sh"});
  for (auto& a : args) o.argv.push_back(std::move(a));
  o.stdin_bytes = std::move(stdin_bytes);
  o.max_stdout = std::size_t{128} << 20;
  o.timeout = timeout.value_or(std::chrono::seconds(120));
  GuestAnswer out;
  try {
    auto r = co_await support::run_subprocess(std::move(o));
    out.status = status_for(r.exit_code);
    out.body = std::move(r.stdout_bytes);
    if (out.status != 200) out.detail = detail_for(r.exit_code, r.stderr_bytes);
  } catch (const support::SubprocessTimeout&) {
    // A FIFO download never ends (R-63); the emulator gives up after fifoReadMax.
    out.status = 504;
    out.detail = "the guest did not finish serving the path";
  }
  co_return out;
}

boost::asio::awaitable<GuestAnswer> DockerGuest::stat(const std::string& container, const std::string& path) {
  co_return co_await file_script(container, kStat, args_of(path));
}
boost::asio::awaitable<GuestAnswer> DockerGuest::list(const std::string& container, const std::string& path) {
  co_return co_await file_script(container, kList, args_of(path));
}
boost::asio::awaitable<GuestAnswer> DockerGuest::download(const std::string& container, const std::string& path,
                                                          std::chrono::milliseconds fifo_read_max) {
  co_return co_await file_script(container, kDownload, args_of(path), std::nullopt, fifo_read_max);
}
boost::asio::awaitable<GuestAnswer> DockerGuest::upload(const std::string& container, const std::string& path,
                                                        bool create_dirs, int mode, std::string bytes) {
  // R-64: `mode` arrives as a decimal integer and is applied as those permission bits.
  char octal[16];
  std::snprintf(octal, sizeof octal, "%o", static_cast<unsigned>(mode) & 07777u);
  co_return co_await file_script(container, kUpload, args_of(path, create_dirs ? "true" : "false", octal), std::move(bytes));
}
boost::asio::awaitable<GuestAnswer> DockerGuest::remove_path(const std::string& container, const std::string& path,
                                                             bool recursive) {
  co_return co_await file_script(container, kRemove, args_of(path, recursive ? "true" : "false"));
}
boost::asio::awaitable<GuestAnswer> DockerGuest::mkdir(const std::string& container, const std::string& path) {
  co_return co_await file_script(container, kMkdir, args_of(path));
}

boost::asio::awaitable<GuestExec> DockerGuest::run_out_of_band(const std::string& container, const std::string& script,
                                                               bool as_root) {
  support::SubprocessOptions o;
  o.argv = {docker_, "exec"};
  if (as_root) o.argv.insert(o.argv.end(), {"-u", "0"});
  o.argv.insert(o.argv.end(), {container, kHelper, "sh", "-c", script});
  o.timeout = std::chrono::seconds(60);
  auto r = co_await support::run_subprocess(std::move(o));
  co_return GuestExec{std::move(r.stdout_bytes), std::move(r.stderr_bytes), r.exit_code, false};
}

std::string entry_json(const std::string& line, const std::string& requested_path, const std::string& link_target) {
  // %F|%s|%a|%Y|<name or empty>
  std::vector<std::string> f;
  std::size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    auto bar = line.find('|', pos);
    if (bar == std::string::npos) throw std::runtime_error("unexpected stat output: " + line);
    f.push_back(line.substr(pos, bar - pos));
    pos = bar + 1;
  }
  std::string path = requested_path;
  std::string name = line.substr(pos);
  if (name.empty()) {
    auto slash = path.find_last_of('/');
    name = slash == std::string::npos ? path : path.substr(slash + 1);
  } else {
    path = (requested_path == "/" ? "" : requested_path) + "/" + name;
  }
  nlohmann::json e;
  e["name"] = name;
  e["path"] = path;
  e["size"] = std::stoll(f[1]);
  // The file entry (R-31, E-25): only the nine permission bits, no type/sticky/setuid.
  e["mode"] = static_cast<int>(std::stoul(f[2], nullptr, 8) & 0777u);
  e["isDir"] = f[0] == "directory";
  e["isSymlink"] = f[0] == "symbolic link";
  if (f[0] == "symbolic link") e["symlinkTarget"] = link_target;
  e["modifiedTime"] = std::stoll(f[3]);
  return e.dump();
}

}  // namespace maf::sandbox::acas::emulator
