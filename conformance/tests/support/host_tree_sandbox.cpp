#include "host_tree_sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <fstream>
#include <cstdlib>
#include <cstring>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "maf/sandbox/support/subprocess.hpp"

namespace maf::sandbox::conformance::test {
namespace fs = std::filesystem;

HostTreeSandbox::HostTreeSandbox(const fs::path& root, Flaw flaw, CapabilitySet cleanup_rungs)
    : Sandbox(Descriptor{
          .backend_name = "host-tree",
          .kind = "conformance",
          .capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                        Capability::FilesList, Capability::FilesDelete}
                              .united(cleanup_rungs.intersection({Capability::Reclaim, Capability::Snapshot,
                                                                  Capability::HostTools, Capability::ExecStream,
                                                                  Capability::Background})),
          .storage_base = (root / "work").string(),
          .instance_id = "host-tree-0"}),
      work_(root / "work"),
      snapshot_(root / ".snapshot-work"),
      flaw_(flaw) {
  fs::create_directories(work_);
  fs::copy(work_, snapshot_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::permissions(snapshot_, fs::status(work_).permissions());
}

namespace {

/// What a careless host-side cleanup does: walk with stat, not lstat, and empty every
/// directory a link leads to before removing the link.
void remove_following_links(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec))  // follows a link
    for (const auto& e : fs::directory_iterator(path, ec)) remove_following_links(e.path());
  if (fs::is_symlink(path, ec)) {
    const fs::path target = fs::absolute(path.parent_path() / fs::read_symlink(path, ec));
    if (!fs::is_directory(target, ec)) fs::remove(target, ec);
  }
  fs::remove(path, ec);
}

}  // namespace

boost::asio::awaitable<void> HostTreeSandbox::do_reclaim(const std::string& absolute_directory,
                                                        std::chrono::milliseconds timeout,
                                                        std::chrono::steady_clock::time_point deadline) {
  switch (flaw_) {
    case Flaw::ReclaimNothing: co_return;
    case Flaw::ReclaimFollowsLinks: remove_following_links(absolute_directory); co_return;
    case Flaw::ReclaimTakesTheParent:
      for (const auto& e : fs::directory_iterator(fs::path(absolute_directory).parent_path()))
        if (e.path().filename().string().rfind(".probe", 0) != 0) fs::remove_all(e.path());
      co_return;
    case Flaw::ReclaimRefusesMissing:
      if (!fs::exists(fs::symlink_status(absolute_directory)))
        throw OSError("reclaim: '" + absolute_directory + "' does not exist");
      break;
    default: break;
  }
  co_await Sandbox::do_reclaim(absolute_directory, timeout, deadline);
}

boost::asio::awaitable<void> HostTreeSandbox::do_reset(std::chrono::milliseconds, std::chrono::steady_clock::time_point) {
  if (flaw_ == Flaw::ResetNothing) co_return;
  std::error_code ec;
  if (flaw_ == Flaw::ResetOnlyEmpties) {
    for (const auto& e : fs::directory_iterator(work_, ec)) fs::remove_all(e.path());
    co_return;
  }
  fs::remove_all(work_);
  fs::copy(snapshot_, work_, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::permissions(work_, fs::status(snapshot_).permissions());
  if (flaw_ == Flaw::ResetStrandsFilePlane) stranded_ = true;
  co_return;
}

std::string hidden_from_host(std::string text) {
  for (std::size_t at = text.find("sleep "); at != std::string::npos; at = text.find("sleep ", at + 7))
    text.insert(at + 6, "0");
  return text;
}

void HostTreeSandbox::kill_leftovers() const {
  // Every process whose working directory is in this double's tree: what earlier execs left.
  const std::string root = fs::weakly_canonical(work_.parent_path()).string() + "/";
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    const std::string cwd = fs::read_symlink(e.path() / "cwd", ec).string() + "/";
    if (!ec && cwd.rfind(root, 0) == 0) ::kill(static_cast<pid_t>(std::stol(pid)), SIGKILL);
  }
}

boost::asio::awaitable<ExecReport> HostTreeSandbox::do_exec(const ExecRequest& request) {
  support::SubprocessOptions o;
  o.argv = request.command.is_argv() ? request.command.argv()
                                     : std::vector<std::string>{"sh", "-c", request.shell_line};
  if (flaw_ == Flaw::HiddenFromHost)
    for (auto& a : o.argv) a = hidden_from_host(a);
  // setsid -w: the command leads a session of its own and setsid waits for it, so a stop
  // sent to setsid's group misses the command and everything it started. TimeoutNeverSignals
  // uses it too, so the stop of the wait it gives up on reaches nothing of the program.
  if (flaw_ == Flaw::TimeoutSparesSession || flaw_ == Flaw::TimeoutNeverSignals)
    o.argv.insert(o.argv.begin(), {"setsid", "-w"});
  if (flaw_ == Flaw::EndsLeftoversOnNextExec) kill_leftovers();
  if (flaw_ == Flaw::NoNewSession) {
    // A `setsid` first on PATH that starts no session: the program shares its supervisor's group.
    const auto shim = work_.parent_path() / ".shim";
    fs::create_directories(shim);
    std::ofstream(shim / "setsid") << "#!/bin/sh\nexec \"$@\"\n";
    fs::permissions(shim / "setsid", fs::perms(0755));
    const char* path = std::getenv("PATH");
    o.argv.insert(o.argv.begin(), {"env", "PATH=" + shim.string() + ":" + (path ? path : "/usr/bin:/bin")});
  }
  o.cwd = flaw_ == Flaw::IgnoreWorkingDirectory ? "/" : request.working_directory;
  const auto remaining =
      std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline - std::chrono::steady_clock::now());
  o.timeout = std::max(remaining, std::chrono::milliseconds(1));
  o.kill_grace = std::chrono::milliseconds(500);
  support::SubprocessResult r;
  bool timed_out = false;
  try {
    r = co_await support::run_subprocess(std::move(o));  // SubprocessTimeout is a TimeoutError
  } catch (const TimeoutError& e) {
    if (flaw_ == Flaw::TimeoutAsOSError) throw OSError(std::string("command failed: ") + e.what());
    timed_out = true;
  }
  const bool launcher = request.command.is_argv() && !request.command.argv().empty() &&
                        request.command.argv().back().ends_with("/launch.sh");
  if (!timed_out && flaw_ == Flaw::HoldsFinishedExec && launcher) {
    // As a backend that waits on something the ended program left behind (a pipe a
    // descendant holds, a container that lingers): the caller is blocked to its deadline.
    co_await support::sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(
        request.deadline - std::chrono::steady_clock::now()));
    co_return ExecReport::group_killed_at_deadline("its process group was killed");
  }
  if (timed_out && flaw_ == Flaw::TimeoutNeverSignals)
    co_return ExecReport::deadline_expired("the wait was given up; nothing was signalled");  // signal unknown
  if (timed_out) co_return ExecReport::group_killed_at_deadline("its process group was killed");
  if (flaw_ == Flaw::FoldStderr) {
    r.stdout_bytes += r.stderr_bytes;
    r.stderr_bytes.clear();
  }
  if (flaw_ == Flaw::NormaliseExitCode && r.exit_code != 0) r.exit_code = 1;
  if (flaw_ == Flaw::ExitCodeAlwaysZero) r.exit_code = 0;
  co_return ExecResult{std::move(r.stdout_bytes), std::move(r.stderr_bytes), r.exit_code, {}};
}

std::optional<GuestStat> HostTreeSandbox::stat_now(const std::string& path) const {
  struct stat st {};
  const int rc = flaw_ == Flaw::FollowLinks ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  if (rc != 0) {
    if (errno == ENOENT) return std::nullopt;
    if (errno == ENOTDIR) throw NotADirectoryError("'" + path + "': a parent is not a directory");
    throw OSError("lstat '" + path + "': " + std::strerror(errno));
  }
  GuestStat s;
  if (S_ISREG(st.st_mode)) {
    s.kind = EntryKind::File;
    s.size_bytes = st.st_size;
  } else if (S_ISDIR(st.st_mode)) {
    s.kind = EntryKind::Directory;
  } else if (S_ISLNK(st.st_mode)) {
    s.kind = EntryKind::Symlink;
  }
  return s;
}

boost::asio::awaitable<std::optional<GuestStat>> HostTreeSandbox::do_lstat(const std::string& absolute_path) {
  if (flaw_ == Flaw::BlindToHostToolCalls && absolute_path.find(".request.json") != std::string::npos)
    co_return std::nullopt;
  co_return stat_now(absolute_path);
}

boost::asio::awaitable<void> HostTreeSandbox::do_write_file(const std::string& absolute_path,
                                                           const std::string& content_in) {
  if (stranded_) throw OSError("write '" + absolute_path + "': the file plane still points at the tree the reset replaced");
  std::string content = flaw_ == Flaw::HiddenFromHost ? hidden_from_host(content_in) : content_in;
  if (flaw_ == Flaw::ForgesHostToolAnswers && content.rfind("refused\n", 0) == 0) content = "ok\n\"forged\"";
  fs::create_directories(fs::path(absolute_path).parent_path());
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
  flags |= flaw_ == Flaw::AppendOnWrite ? O_APPEND : O_TRUNC;
  flags |= flaw_ == Flaw::FollowLinks ? 0 : O_NOFOLLOW;
  const int fd = ::open(absolute_path.c_str(), flags, 0644);
  if (fd < 0) throw OSError("open '" + absolute_path + "' for writing: " + std::strerror(errno));
  const bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  ::close(fd);
  if (!ok) throw OSError("short write to '" + absolute_path + "'");
  co_return;
}

boost::asio::awaitable<std::string> HostTreeSandbox::do_read_file(const std::string& absolute_path,
                                                                 std::int64_t max_bytes) {
  const int flags = O_RDONLY | O_CLOEXEC | (flaw_ == Flaw::FollowLinks ? 0 : O_NOFOLLOW);
  const int fd = ::open(absolute_path.c_str(), flags);
  if (fd < 0) throw OSError("open '" + absolute_path + "': " + std::strerror(errno));
  std::string out;
  char buf[65536];
  ssize_t n = 0;
  while (static_cast<std::int64_t>(out.size()) <= max_bytes && (n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  co_return out;
}

boost::asio::awaitable<std::vector<GuestDirEntry>> HostTreeSandbox::do_list_dir(const std::string& absolute_path) {
  std::vector<GuestDirEntry> out;
  for (const auto& e : fs::directory_iterator(absolute_path)) {
    auto s = stat_now(e.path().string());
    if (s) out.push_back({e.path().filename().string(), *s});
  }
  co_return out;
}

boost::asio::awaitable<void> HostTreeSandbox::do_remove(const std::string& absolute_path, bool recursive) {
  if (recursive && flaw_ == Flaw::FollowLinksWhenRemovingTrees && fs::is_directory(fs::symlink_status(absolute_path))) {
    for (const auto& e : fs::recursive_directory_iterator(absolute_path))
      if (e.is_symlink()) fs::remove_all(fs::absolute(e.path().parent_path() / fs::read_symlink(e.path())));
  }
  if (recursive) fs::remove_all(absolute_path);  // remove_all unlinks links, never follows them
  else fs::remove(absolute_path);
  co_return;
}

boost::asio::awaitable<std::optional<GuestStat>> TruncatingSandbox::do_lstat(const std::string& absolute_path) {
  auto s = co_await InProcessSandbox::do_lstat(absolute_path);
  if (s && s->kind == EntryKind::File) s->size_bytes.reset();  // "unknown": the core cannot refuse from the stat
  co_return s;
}

boost::asio::awaitable<std::string> TruncatingSandbox::do_read_file(const std::string& absolute_path,
                                                                   std::int64_t max_bytes) {
  auto bytes = co_await InProcessSandbox::do_read_file(absolute_path, max_bytes);
  if (static_cast<std::int64_t>(bytes.size()) > max_bytes) bytes.resize(static_cast<std::size_t>(max_bytes));
  co_return bytes;
}

boost::asio::awaitable<std::string> OffByOneCapSandbox::do_read_file(const std::string& absolute_path,
                                                                    std::int64_t max_bytes) {
  auto bytes = co_await InProcessSandbox::do_read_file(absolute_path, max_bytes);
  if (static_cast<std::int64_t>(bytes.size()) >= max_bytes)
    throw SandboxTransferCapExceeded("'" + absolute_path + "' reaches the cap max_bytes=" + std::to_string(max_bytes));
  co_return bytes;
}

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
  // Searchable by others: a root host runs bubblewrap as the process backend's host_uid.
  fs::permissions(path_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string failure_messages(const std::vector<ProbeResult>& results) {
  std::string out;
  for (const auto& r : results)
    if (!r.passed()) out += r.id + ": " + r.message + "\n";
  return out;
}

}  // namespace maf::sandbox::conformance::test
