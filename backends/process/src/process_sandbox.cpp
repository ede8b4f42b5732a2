#include "process_sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stop_token>

#include "bwrap.hpp"
#include "guest_snapshot.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/stdin_stream.hpp"
#include "maf/sandbox/support/subprocess.hpp"

namespace maf::sandbox::process {

ProcessSandbox::ProcessSandbox(std::shared_ptr<const ProcessBackendConfig> config,
                               std::shared_ptr<const Boundary> boundary, std::string kind, CapabilitySet capabilities,
                               std::string storage_base, std::string instance_id, std::string sandbox_dir,
                               ResourceLimits resources, std::optional<GuestEgress> egress)
    : Sandbox(Descriptor{.backend_name = "process",
                         .kind = std::move(kind),
                         .capabilities = capabilities,
                         .storage_base = std::move(storage_base),
                         .instance_id = std::move(instance_id)}),
      config_(std::move(config)),
      boundary_(std::move(boundary)),
      sandbox_dir_(std::move(sandbox_dir)),
      resources_(resources),
      tree_(sandbox_dir_ + "/root", boundary_->views, guest_virtual_dirs(), boundary_->run_as),
      egress_(std::move(egress)) {}

ProcessSandbox::Confined ProcessSandbox::prepare_confined(const std::vector<std::string>& command,
                                                          const std::string& working_directory,
                                                          std::optional<std::string> stdin_bytes,
                                                          std::chrono::steady_clock::time_point deadline,
                                                          const std::map<std::string, std::string>& environment) {
  const auto wd = tree_.lstat(working_directory);
  if (!wd) throw FileNotFoundError("working directory '" + working_directory + "' does not exist in the sandbox");
  if (wd->kind != EntryKind::Directory)
    throw NotADirectoryError("working directory '" + working_directory + "' is not a directory");
  // LIM-7: only a sandbox with an idle timeout keeps the clock a use resets.
  if (resources_.idle_timeout()) touch_last_used(sandbox_dir_);
  Confined c;
  c.cgroups = join_cgroups();
  c.launch = std::make_unique<const Launch>(*config_, *boundary_, tree_.root_dir(), working_directory,
                                            storage_base(), command, c.cgroups->procs_files,
                                            egress_ ? &*egress_ : nullptr, environment);
  const Launch& launch = *c.launch;
  // LIM-6: what the kernel counts over this command's run (overlapping commands of the same
  // sandbox share the counters, so either may see the other's event).
  c.before = read_cgroup_events(c.cgroups->event_files);
  auto& o = c.options;
  o.argv = launch.argv;
  o.keep_fds = launch.keep_fds;
  o.join_cgroup_procs = launch.cgroup_procs;
  o.cwd = "/";  // the caller's cwd may be closed to the identity bubblewrap runs as
  o.stdin_bytes = std::move(stdin_bytes);
  o.max_stdout = config_->max_stdout_bytes;
  o.max_stderr = config_->max_stderr_bytes;
  o.env_mode = support::EnvMode::replace;
  o.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}};
  const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  o.timeout = std::max(remaining, std::chrono::milliseconds(1));
  return c;
}

namespace {
/// Whether `head` is, or could still become, the start of a set-up failure report
/// (refuse_setup_failure).
bool may_be_setup_failure(std::string_view head) {
  const std::string_view marker = "bwrap: ";
  const std::size_t n = std::min(head.size(), marker.size());
  return head.substr(0, n) == marker.substr(0, n);
}
}  // namespace

void ProcessSandbox::refuse_setup_failure(int exit_code, const std::string& stderr_head) const {
  // bwrap reports its own setup failures as exit 1 with a "bwrap: " line; that is not the
  // program's status (C-39) and must not be mistaken for it.
  if (exit_code == 1 && stderr_head.rfind("bwrap: ", 0) == 0)
    throw OSError("process sandbox could not start the command: " + stderr_head);
}

ResourceBoundSet ProcessSandbox::Confined::limits_hit() const {
  ResourceBoundSet hit;
  const CgroupEvents after = read_cgroup_events(cgroups->event_files);
  if (after.oom_kills > before.oom_kills) hit.insert(ResourceBound::Memory);
  if (after.fork_refusals > before.fork_refusals) hit.insert(ResourceBound::Processes);
  return hit;
}

boost::asio::awaitable<ExecReport> ProcessSandbox::run_confined(std::vector<std::string> command,
                                                                std::string working_directory,
                                                                std::optional<std::string> stdin_bytes,
                                                                std::chrono::steady_clock::time_point deadline,
                                                                std::map<std::string, std::string> environment) {
  Confined c = prepare_confined(command, working_directory, std::move(stdin_bytes), deadline, environment);
  support::SubprocessResult r;
  bool timed_out = false;
  try {
    r = co_await support::run_subprocess(std::move(c.options));
  } catch (const support::SubprocessTimeout&) {
    timed_out = true;
  }
  // bubblewrap's PID namespace ends with the killed command: nothing of it runs on (EXE-1).
  if (timed_out) co_return ExecReport::group_killed_at_deadline("its process group was killed");
  if (r.stdout_overflowed || r.stderr_overflowed) {
    const bool out = r.stdout_overflowed;
    co_return ExecReport::over_cap(out ? "max_stdout_bytes" : "max_stderr_bytes",
                                   out ? config_->max_stdout_bytes : config_->max_stderr_bytes,
                                   out ? "stdout" : "stderr", "it was killed");
  }
  refuse_setup_failure(r.exit_code, r.stderr_bytes);
  ExecResult result{std::move(r.stdout_bytes), std::move(r.stderr_bytes), r.exit_code, {}};
  result.limits_hit = c.limits_hit();
  co_return result;
}

boost::asio::awaitable<StreamOutcome> ProcessSandbox::do_exec_stream(const ExecRequest& request,
                                                                     ExecOutputSink& sink) {
  std::vector<std::string> command = guest_argv(request);
  Confined c =
      prepare_confined(command, request.working_directory, request.stdin_bytes, request.deadline, request.environment);
  // bwrap's own set-up failure arrives on stderr before the program runs; its first bytes
  // are held back until they cannot be one (STR-7: the caller never sees bwrap's words as
  // the program's, and the program's bytes are never changed).
  std::string held;
  bool holding = true;
  auto release = [&]() -> bool {
    holding = false;
    if (held.empty()) return true;
    const std::string bytes = std::move(held);
    held.clear();
    return sink.deliver(OutputStream::Stderr, bytes);
  };
  c.options.on_stdout = [&](std::string_view bytes) {
    if (holding && !release()) return false;
    return sink.deliver(OutputStream::Stdout, bytes);
  };
  c.options.on_stderr = [&](std::string_view bytes) {
    if (!holding) return sink.deliver(OutputStream::Stderr, bytes);
    held.append(bytes);
    return may_be_setup_failure(held) || release();
  };
  c.options.idle_timeout = request.read_timeout;
  // STR-10: a stop SIGKILLs bubblewrap's group and reaps it; its PID namespace ends with it.
  c.options.stop = request.stop;
  // STDIN-6: the stream's pipe is the program's stdin, through bwrap unchanged; an abort
  // stops the run like a cancelled one. The run takes one stop token, so the caller's stop
  // and the stream's abort are forwarded into one source, whichever comes first.
  struct Forward {
    mutable std::stop_source to;
    void operator()() const noexcept { to.request_stop(); }
  };
  std::stop_source either;
  std::optional<std::stop_callback<Forward>> from_stop, from_abort;
  if (request.stdin_stream) {
    c.options.stdin_fd = request.stdin_stream->take_read_end();
    from_stop.emplace(request.stop, Forward{either});
    from_abort.emplace(request.stdin_stream->abort_token(), Forward{either});
    c.options.stop = either.get_token();
  }
  support::SubprocessResult r;
  try {
    r = co_await support::run_subprocess(std::move(c.options));
  } catch (const support::SubprocessTimeout&) {
    co_return StreamOutcome::ended(StreamOutcome::End::DeadlineExpired);
  } catch (const Cancelled&) {
    co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
  }
  if (r.stopped_early) co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
  if (r.idle_expired) co_return StreamOutcome::ended(StreamOutcome::End::ReadTimedOut);
  if (r.stdout_overflowed) co_return StreamOutcome::over_cap(OutputStream::Stdout, "max_stdout_bytes", config_->max_stdout_bytes);
  if (r.stderr_overflowed) co_return StreamOutcome::over_cap(OutputStream::Stderr, "max_stderr_bytes", config_->max_stderr_bytes);
  if (holding) {
    refuse_setup_failure(r.exit_code, held);
    if (!release()) co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
  }
  co_return StreamOutcome::exited(r.exit_code, c.limits_hit());
}

std::shared_ptr<const ProcessSandbox::Joined> ProcessSandbox::join_cgroups() {
  std::lock_guard lock(join_mutex_);
  if (joined_) return joined_;
  // Named after the sandbox *instance*: a recreated sandbox never inherits an old cgroup.
  auto joined = std::make_shared<Joined>();
  joined->dirs = boundary_->cgroups.prepare(
      std::filesystem::path(sandbox_dir_).filename().string() + "-" + instance_id(), resources_);
  record_cgroups(sandbox_dir_, joined->dirs);
  joined->procs_files = cgroup_procs_files(joined->dirs);
  joined->event_files = cgroup_event_files(joined->dirs);
  joined_ = std::move(joined);
  return joined_;
}

std::vector<std::string> ProcessSandbox::guest_argv(const ExecRequest& request) {
  // The argv form runs without any shell; the string form through the guest's sh.
  std::vector<std::string> command =
      request.command.is_argv() ? request.command.argv() : std::vector<std::string>{"sh", "-c", request.shell_line};
  if (command.empty()) throw ValueError("exec: an argv command needs at least one element");
  return command;
}

boost::asio::awaitable<ExecReport> ProcessSandbox::do_exec(const ExecRequest& request) {
  co_return co_await run_confined(guest_argv(request), request.working_directory, request.stdin_bytes, request.deadline,
                                  request.environment);
}

boost::asio::awaitable<ExecReport> ProcessSandbox::do_run_code(const std::string& code,
                                                               std::chrono::milliseconds /*timeout*/,
                                                               std::chrono::steady_clock::time_point deadline) {
  // No queue stands between the call and the start, but the rule holds anyway (C-41).
  if (std::chrono::steady_clock::now() >= deadline)
    throw SandboxQueuedTimeout("run_code deadline passed before the program started");
  co_return co_await run_confined(config_->run_code_interpreter, storage_base(), code, deadline);
}

boost::asio::awaitable<std::optional<GuestStat>> ProcessSandbox::do_lstat(const std::string& absolute_path) {
  co_return tree_.lstat(absolute_path);
}
boost::asio::awaitable<void> ProcessSandbox::do_prepare_storage_base(const StorageBaseWalk& walk) {
  if (!walk.complete()) tree_.ensure_directory(walk.base);
  co_return;
}
boost::asio::awaitable<void> ProcessSandbox::do_write_file(const std::string& absolute_path, const std::string& content) {
  tree_.write_file(absolute_path, content);
  co_return;
}
boost::asio::awaitable<std::string> ProcessSandbox::do_read_file(const std::string& absolute_path, std::int64_t max_bytes) {
  co_return tree_.read_file(absolute_path, max_bytes);
}
boost::asio::awaitable<std::vector<GuestDirEntry>> ProcessSandbox::do_list_dir(const std::string& absolute_path) {
  co_return tree_.list_dir(absolute_path);
}
boost::asio::awaitable<void> ProcessSandbox::do_remove(const std::string& absolute_path, bool recursive) {
  tree_.remove(absolute_path, recursive);
  co_return;
}

boost::asio::awaitable<void> ProcessSandbox::do_reset(std::chrono::milliseconds timeout,
                                                     std::chrono::steady_clock::time_point deadline) {
  if (std::chrono::steady_clock::now() >= deadline)
    throw TimeoutError("reset of process sandbox (kind '" + kind() + "') found its timeout of " +
                       std::to_string(timeout.count()) + " ms already spent");
  std::lock_guard lock(reset_mutex_);
  // A guest process left running would keep the old tree open (its root) and could write
  // into the new one through descriptors it holds; a reset ends every one of them first.
  kill_guest_processes(tree_.root_dir());
  restore_snapshot(sandbox_dir_);
  co_return;
}

void record_cgroups(const std::string& sandbox_dir, const std::vector<std::string>& dirs) {
  if (dirs.empty()) return;
  const auto file = std::filesystem::path(sandbox_dir) / "cgroups";
  std::vector<std::string> lines = recorded_cgroups(sandbox_dir);
  bool changed = false;
  for (const auto& d : dirs)
    if (std::find(lines.begin(), lines.end(), d) == lines.end()) {
      lines.push_back(d);
      changed = true;
    }
  if (!changed) return;
  std::ofstream out(file, std::ios::trunc);
  for (const auto& l : lines) out << l << "\n";
}

std::vector<std::string> recorded_cgroups(const std::string& sandbox_dir) {
  std::vector<std::string> lines;
  std::ifstream in(std::filesystem::path(sandbox_dir) / "cgroups");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

void touch_last_used(const std::string& sandbox_dir) {
  // The mtime is the record: utimensat(NULL) sets it to now on every filesystem, in one call.
  const std::string file = sandbox_dir + "/last_used";
  if (::utimensat(AT_FDCWD, file.c_str(), nullptr, 0) == 0) return;
  std::ofstream(file, std::ios::trunc) << "used\n";  // a sandbox made before create() wrote it
}

int kill_guest_processes(const std::string& root_dir) {
  struct stat root {};
  if (::stat(root_dir.c_str(), &root) != 0) return 0;
  int killed = 0;
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  while (dirent* e = ::readdir(proc)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    struct stat st {};
    const std::string link = std::string("/proc/") + e->d_name + "/root";
    // /proc/<pid>/root resolves to the process's root directory: a guest's is the sandbox's
    // private root, whichever host process started it.
    if (::stat(link.c_str(), &st) == 0 && st.st_dev == root.st_dev && st.st_ino == root.st_ino) {
      if (::kill(static_cast<pid_t>(std::stol(e->d_name)), SIGKILL) == 0) ++killed;
    }
  }
  ::closedir(proc);
  return killed;
}

}  // namespace maf::sandbox::process
