// The Docker sandbox's hooks: exec through `docker exec`, files through the tar plane of
// `docker cp`, every tar-plane operation frozen (D-12…D-23; docs/backends/docker.md "The freeze").
#include "docker_sandbox.hpp"

#include "teardown.hpp"

#include <sstream>

#include <boost/algorithm/string/predicate.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <fcntl.h>
#include <functional>
#include <limits>
#include <stop_token>
#include <unistd.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/stdin_stream.hpp"
#include "maf/sandbox/support/guest_stream.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "tar_plane.hpp"
#include "work_dir.hpp"
#include "said.hpp"

namespace maf::sandbox::docker::detail {

using boost::asio::awaitable;

namespace {

/// How long an exec that ended 137 waits for its container's state to settle (see do_exec).
constexpr std::chrono::seconds kKilledExecSettle{2};

GuestStat to_guest_stat(const support::TarEntry& e) {
  GuestStat s;
  switch (e.type) {
    case support::TarEntryType::file:
      s.kind = EntryKind::File;
      s.size_bytes = static_cast<std::int64_t>(e.size);
      break;
    case support::TarEntryType::directory:
      s.kind = EntryKind::Directory;
      break;
    case support::TarEntryType::symlink:
      s.kind = EntryKind::Symlink;
      break;
    default:  // hard links (never seen in single-path copies), devices, fifos, unknown
      s.kind = EntryKind::Other;
      break;
  }
  return s;
}

/// The same reading of a body-less stat (Go's os.FileMode type bits) as to_guest_stat gives
/// the tar header of the same path.
GuestStat to_guest_stat(const PathStat& p) {
  constexpr std::uint32_t kDir = 1u << 31, kSymlink = 1u << 27, kDevice = 1u << 26, kPipe = 1u << 25,
                          kSocket = 1u << 24, kCharDevice = 1u << 21, kIrregular = 1u << 19;
  GuestStat s;
  if (p.mode & kDir) {
    s.kind = EntryKind::Directory;
  } else if (p.mode & kSymlink) {
    s.kind = EntryKind::Symlink;
  } else if (p.mode & (kDevice | kPipe | kSocket | kCharDevice | kIrregular)) {
    s.kind = EntryKind::Other;
  } else {
    s.kind = EntryKind::File;
    s.size_bytes = p.size;
  }
  return s;
}

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool at_or_below(const std::string& path, const std::string& base) {
  return guest_path_relative_to(path, base).has_value();
}

}  // namespace

awaitable<std::optional<GuestStat>> probe(DockerTransport& transport, const std::string& container,
                                          const std::string& container_id, const std::string& path) {
  PathStat quick = co_await transport.path_stat(container, path);
  if (quick.status == PathStatStatus::Ok) co_return to_guest_stat(quick);
  if (quick.status == PathStatStatus::NotFound && !container_id.empty()) {
    // The 404 was the path's, not the container's, if that very container (IDs are never
    // reused) is still there after it: an inspect (~1 ms) instead of a tar stream (~50 ms,
    // the engine re-executes itself for every archive). Otherwise the tar plane decides.
    auto state = co_await transport.container_state(container);
    if (state && state->id == container_id) co_return std::nullopt;
  }
  auto entry = co_await tar_stat(transport, container, path);
  if (!entry) co_return std::nullopt;
  co_return to_guest_stat(*entry);
}

awaitable<std::optional<support::TarEntry>> tar_stat(DockerTransport& transport, const std::string& container,
                                                     const std::string& path) {
  for (std::size_t limit : kPrefixes) {
    ArchiveGet got = co_await transport.archive_get(container, path, limit);
    if (got.status == ArchiveStatus::Absent) co_return std::nullopt;
    FirstEntry first = parse_first_entry(got.bytes, got.cut, false, path);
    if (!first.need_more) co_return first.entry;
  }
  throw OSError(said("the tar header of guest path '" + path + "' does not end within " +
                     std::to_string(kRetryPrefix) + " bytes"));
}

DockerSandbox::DockerSandbox(DockerSandboxParts parts)
    : Sandbox(Descriptor{.backend_name = "docker",
                         .kind = parts.kind,
                         .capabilities = parts.capabilities,
                         .storage_base = parts.storage_base,
                         .instance_id = parts.container_id}),
      p_(std::move(parts)) {}

awaitable<std::optional<GuestStat>> DockerSandbox::unconfined_stat_for_testing(std::string absolute_path) {
  co_return co_await do_lstat(absolute_path);
}

awaitable<std::optional<std::uint64_t>> DockerSandbox::oom_kills() {
  // Inspect's State.OOMKilled speaks only of the container's init (measured on 20.10: false
  // while an exec'd `tail` was killed at a 32 MiB bound); the cgroup's counter counts every kill.
  auto make_call = [&] {
    ExecCall call;
    call.container = p_.container;
    call.argv = {"cat", "/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"};
    call.working_directory = "/";
    call.timeout = p_.command_timeout;
    call.max_stdout = 4096;
    call.max_stderr = 4096;
    return call;
  };
  const ExecOutcome read = co_await exec_respecting_freeze(*p_.transport, *p_.freeze, make_call);
  std::istringstream in(read.stdout_bytes);
  std::string key;
  std::uint64_t value = 0;
  std::optional<std::uint64_t> kills;
  while (in >> key >> value)
    if (key == "oom_kill") kills = std::max(kills.value_or(0), value);
  co_return kills;
}

awaitable<void> DockerSandbox::oom_baseline() {
  if (!p_.watch_oom_kills) co_return;
  std::optional<std::uint64_t> seen;
  {
    std::lock_guard lock(oom_mutex_);
    seen = oom_seen_;
  }
  if (seen) co_return;
  const std::optional<std::uint64_t> baseline = co_await oom_kills();
  std::lock_guard lock(oom_mutex_);
  if (!oom_seen_) oom_seen_ = baseline.value_or(0);
}

awaitable<void> DockerSandbox::oom_after(ResourceBoundSet& limits_hit) {
  if (!p_.watch_oom_kills) co_return;
  // LIM-6: overlapping commands of one sandbox share the counter, so either may see the other's kill.
  const std::optional<std::uint64_t> now = co_await oom_kills();
  std::lock_guard lock(oom_mutex_);
  if (now && *now > oom_seen_.value_or(0)) limits_hit.insert(ResourceBound::Memory);
  if (now) oom_seen_ = *now;
}

awaitable<void> DockerSandbox::refuse_lost_container(int exit_code, bool not_running_text) {
  // A container killed or stopped under a running exec (docker kill, a daemon restart) ends
  // the exec with 137, and a later exec with "is not running": neither is the program's
  // own status. Only then is the state asked, so an ordinary exit costs nothing. The engine
  // reports the exec's end before it has handled the container's (measured on 20.10: the
  // Engine API's first inspect after a kill still reads "running"), so a 137 from a
  // container that still reads running is asked again until it settles — a bounded wait
  // that only a program killed by SIGKILL inside a live container pays in full.
  if (exit_code != 137 && !not_running_text) co_return;
  auto state = co_await p_.transport->container_state(p_.container);
  const auto settle_until = std::chrono::steady_clock::now() + kKilledExecSettle;
  while (exit_code == 137 && state && state->running && state->id == instance_id() &&
         std::chrono::steady_clock::now() < settle_until) {
    co_await support::sleep_for(std::chrono::milliseconds(20));
    state = co_await p_.transport->container_state(p_.container);
  }
  if (!state || !state->running || state->id != instance_id())
    throw OSError(said("container " + p_.container + " (kind '" + kind() + "') is " +
                       (state ? "'" + state->status + "'" : "gone") +
                       " after the exec: it was stopped under the command; acquire again to restart it"));
}

awaitable<ExecReport> DockerSandbox::do_exec(const ExecRequest& request) {
  co_await oom_baseline();
  std::vector<std::string> argv;
  if (request.command.is_argv())
    argv = request.command.argv();  // verbatim, no shell (D-12)
  else
    argv = {"sh", "-c", request.shell_line};
  auto make_call = [&] {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline -
                                                                          std::chrono::steady_clock::now());
    ExecCall call;
    call.container = p_.container;
    call.argv = argv;
    call.working_directory = request.working_directory;
    call.timeout = std::max(remaining, std::chrono::milliseconds(1));
    call.max_stdout = p_.max_exec_output_bytes;
    call.max_stderr = p_.max_exec_output_bytes;
    call.env = request.environment;
    call.stdin_bytes = request.stdin_bytes;
    return call;
  };
  ExecOutcome outcome;
  bool timed_out = false;
  try {
    outcome = co_await exec_respecting_freeze(*p_.transport, *p_.freeze, make_call);
  } catch (const TimeoutError&) {
    timed_out = true;
  }
  // Killing the client does not reach the process inside the container (D-13), and the
  // engine goes on draining a command after the client stops reading (measured on 20.10: a
  // `head -c 1G /dev/zero` kept running): only the container's end stops it, so the core
  // abandons the sandbox through do_abandon; the next acquire creates a fresh one.
  const std::string stopped = "the client of container " + p_.container + " was stopped";
  if (timed_out) co_return ExecReport::deadline_expired(stopped, /*abandon=*/true);
  if (outcome.stdout_overflowed || outcome.stderr_overflowed)
    co_return ExecReport::over_cap("max_exec_output_bytes", p_.max_exec_output_bytes,
                                   outcome.stdout_overflowed ? "stdout" : "stderr", stopped, /*abandon=*/true);
  co_await refuse_lost_container(outcome.exit_code, boost::algorithm::icontains(outcome.stderr_bytes, "is not running"));
  ExecResult result{std::move(outcome.stdout_bytes), std::move(outcome.stderr_bytes), outcome.exit_code, {}};
  co_await oom_after(result.limits_hit);
  co_return result;
}

awaitable<void> DockerSandbox::do_abandon() {
  // The backend's one teardown plan (D-27): proxy, workload, network — not the workload alone.
  auto teardown = teardown_workload(*p_.transport, *p_.config, p_.container, p_.key);
  const std::optional<DisposalFailure> failure = co_await std::move(teardown);
  if (failure)
    throw OSError(said("container " + p_.container + " (kind '" + kind() + "') could not be ended: " +
                       failure->to_string()));
  if (p_.memory) p_.memory->forget(p_.container);
}

awaitable<void> DockerSandbox::stop_streamed(const std::string& token, const std::optional<std::string>& pgid) {
  auto make_call = [&] {
    ExecCall call;
    call.container = p_.container;
    call.argv = support::guest_group_kill_argv(token, pgid);
    call.working_directory.assign(1, '/');  // (assign: see do_remove)
    call.timeout = p_.command_timeout;  // the backend's own bound: the caller's deadline may be spent
    call.max_stdout = call.max_stderr = 4096;
    return call;
  };
  ExecOutcome killed;
  bool timed_out = false;
  try {
    killed = co_await exec_respecting_freeze(*p_.transport, *p_.freeze, make_call);
  } catch (const TimeoutError&) {
    timed_out = true;
  }
  if (!timed_out && killed.exit_code == 0) co_return;
  // A container that is gone or stopped took the program with it.
  auto state = co_await p_.transport->container_state(p_.container);
  if (!state || !state->running || state->id != instance_id()) co_return;
  throw OSError(said("could not stop the streamed command in container " + p_.container + " (kind '" +
                     kind() + "'" + (pgid ? ", process group " + *pgid : std::string()) + "): " +
                     (timed_out ? "the stop did not finish within command_timeout_seconds"
                                : "exit " + std::to_string(killed.exit_code) + ": " + killed.stderr_bytes)));
}

awaitable<StreamOutcome> DockerSandbox::do_exec_stream(const ExecRequest& request, ExecOutputSink& sink) {
  co_await oom_baseline();
  std::vector<std::string> program;
  if (request.command.is_argv())
    program = request.command.argv();  // verbatim, no shell (D-12): the wrapper `exec`s it
  else
    program = {"sh", "-c", request.shell_line};
  const std::string token = support::guest_stream_token();
  std::optional<support::GuestStreamGate> gate;
  ExecStreamEnd end;
  // STDIN-6: the stream's read end, held here so a re-issued attempt (D-22) gets its own copy;
  // closed when this returns, so the writer then sees the program gone.
  const int stream_fd = request.stdin_stream ? request.stdin_stream->take_read_end() : -1;
  const std::shared_ptr<void> close_stream_fd(nullptr, [stream_fd](void*) {
    if (stream_fd >= 0) ::close(stream_fd);
  });
  // STDIN-9: an abort ends the program where it runs — the client's end does not (D-13) — by
  // the same group kill a stopped stream gets, posted onto this sandbox's executor.
  const auto live = std::make_shared<bool>(true);
  std::optional<std::stop_callback<std::function<void()>>> on_abort;
  if (request.stdin_stream) {
    const auto executor = co_await boost::asio::this_coro::executor;
    on_abort.emplace(request.stdin_stream->abort_token(), std::function<void()>([this, executor, live, token, &gate] {
      boost::asio::post(executor, [this, executor, live, token, &gate] {
        if (!*live) return;
        const std::optional<std::string> pgid = gate ? gate->pgid() : std::nullopt;
        boost::asio::co_spawn(
            executor,
            [this, token, pgid]() -> awaitable<void> {
              try {
                co_await stop_streamed(token, pgid);
              } catch (const std::exception&) {
                // The stream's own end reports what happened.
              }
            },
            boost::asio::detached);
      });
    }));
  }
  // A paused refusal arrives before the header and so reaches no handler: it is re-issued
  // like a plain exec's (D-22), each attempt with a fresh gate.
  const std::function<awaitable<bool>()> attempt = [&]() -> awaitable<bool> {
    gate.emplace(sink, p_.max_exec_output_bytes, "max_exec_output_bytes");
    ExecStreamCall call;
    call.container = p_.container;
    call.argv = support::guest_stream_argv(token, program);
    call.working_directory = request.working_directory;
    call.deadline = request.deadline;
    call.idle_timeout = request.read_timeout;
    call.env = request.environment;
    call.stdin_bytes = request.stdin_bytes;
    call.stop = request.stop;  // STR-10: Stopped below, then the group is killed in the container
    if (stream_fd >= 0) call.stdin_fd = ::fcntl(stream_fd, F_DUPFD_CLOEXEC, 3);
    ExecChunkSink feed = [&gate](OutputStream stream, std::string_view bytes) { return gate->feed(stream, bytes); };
    end = co_await p_.transport->exec_stream(std::move(call), std::move(feed));
    co_return end.how == ExecStreamEnd::How::Exited && !gate->started() && end.exit_code == 1 &&
        boost::algorithm::icontains(gate->preamble(), "is paused, unpause the container");
  };
  co_await retry_past_own_freeze(*p_.transport, *p_.freeze, p_.container, attempt);
  *live = false;
  on_abort.reset();
  if (request.stdin_stream && request.stdin_stream->abort_token().stop_requested()) {
    if (end.how != ExecStreamEnd::How::Exited) co_await stop_streamed(token, gate->pgid());
    throw Cancelled();
  }

  if (end.how == ExecStreamEnd::How::Exited) {
    if (!gate->started()) {
      const std::string preamble = gate->preamble();
      if (end.exit_code == support::kGuestStreamNotLeader && preamble.rfind("maf-exec-stream:", 0) == 0)
        throw OSError(said("cannot stream exec in container " + p_.container + " (kind '" + kind() +
                           "'): " + preamble));
      // Never started (a missing working directory, a refusal): the engine's words are the
      // command's stderr, as plain exec reports them.
      gate->deliver_preamble();
      co_await refuse_lost_container(end.exit_code, boost::algorithm::icontains(preamble, "is not running"));
      co_return StreamOutcome::exited(end.exit_code);
    }
    co_await refuse_lost_container(end.exit_code, false);
    ResourceBoundSet hit;
    co_await oom_after(hit);
    co_return StreamOutcome::exited(end.exit_code, hit);
  }
  // STR-2: the client stopped reading; the command still runs in the container until its
  // group is killed there. The container stays (issue 25).
  co_await stop_streamed(token, gate->pgid());
  if (gate->over_cap())
    co_return StreamOutcome::over_cap(*gate->over_cap(), gate->cap_name(), gate->cap());
  if (gate->stopped()) co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
  if (end.how == ExecStreamEnd::How::IdleExpired) co_return StreamOutcome::ended(StreamOutcome::End::ReadTimedOut);
  if (end.how == ExecStreamEnd::How::DeadlineExpired)
    co_return StreamOutcome::ended(StreamOutcome::End::DeadlineExpired);
  co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
}

awaitable<std::optional<GuestStat>> DockerSandbox::do_lstat(const std::string& absolute_path) {
  co_return co_await probe(*p_.transport, p_.container, p_.container_id, absolute_path);
}

awaitable<void> DockerSandbox::do_prepare_storage_base(const StorageBaseWalk& walk) {
  const StorageBaseTarget target{*p_.transport,  *p_.freeze, p_.container, p_.container_id, p_.kind,
                                 GuestUser{p_.uid, p_.gid, true}, *p_.memory, p_.fresh_image};
  co_await prepare_storage_base(target, walk);
  if (p_.keeps_reset_tree) co_await keep_reset_tree();  // RESET's acquire-time tree (issue 49)
}

awaitable<void> DockerSandbox::do_write_file(const std::string& absolute_path, const std::string& content) {
  // The public write_file walked every ancestor from "/" (links refused, non-directories
  // refused, the first absent component ends the walk). Find the missing suffix from the
  // parent upwards: the frozen guest cannot change it in between.
  std::vector<std::string> chain = cumulative_components(guest_dirname(absolute_path));
  std::size_t first_missing = chain.size();
  while (first_missing > 0 && !co_await probe(*p_.transport, p_.container, p_.container_id, chain[first_missing - 1]))
    --first_missing;
  const std::int64_t mtime = now_seconds();  // [port decision] not 0, which reads as 1970
  const auto owner = [&](const std::string& dir) {
    // Missing directories at or below the storage base belong to the image user; anything
    // above it is the root-owned scaffolding do_prepare_storage_base would have made.
    return at_or_below(dir, storage_base()) ? std::pair{p_.uid, p_.gid} : std::pair{0LL, 0LL};
  };
  support::TarWriter tar;
  // One entry per *missing* directory only: an entry for an existing one would rewrite its
  // owner, mode and mtime (D-14, measured on 20.10).
  for (std::size_t i = first_missing; i < chain.size(); ++i) {
    auto [uid, gid] = owner(chain[i]);
    tar.add_directory(chain[i].substr(1), {.mode = 0755, .uid = static_cast<std::uint64_t>(uid),
                                           .gid = static_cast<std::uint64_t>(gid), .mtime = mtime});
  }
  // The body goes from `content` itself (the transports stream it): no copy of the file in
  // an archive.
  TarUpload upload = std::move(tar).finish_with_file(absolute_path.substr(1), content,
                                 {.mode = 0644, .uid = static_cast<std::uint64_t>(p_.uid),
                                  .gid = static_cast<std::uint64_t>(p_.gid), .mtime = mtime});
  co_await p_.transport->archive_put_upload(p_.container, "/", std::move(upload));
}

awaitable<std::string> DockerSandbox::do_read_file(const std::string& absolute_path, std::int64_t max_bytes) {
  const std::size_t cap = static_cast<std::size_t>(
      std::min<std::int64_t>(max_bytes, std::numeric_limits<std::int64_t>::max() / 2));
  for (std::size_t prefix : kPrefixes) {
    // Never read more than the header prefix plus the cap (D-18).
    ArchiveGet got = co_await p_.transport->archive_get(p_.container, absolute_path, prefix + cap);
    if (got.status == ArchiveStatus::Absent)
      throw FileNotFoundError(said("guest file '" + absolute_path + "' does not exist"));
    // Peek at the header first so the type and the cap are decided before any body byte.
    FirstEntry head = parse_first_entry(got.bytes, got.cut, false, absolute_path);
    if (head.need_more) continue;
    if (head.entry.type != support::TarEntryType::file)
      throw OSError(said("guest path '" + absolute_path + "' is not a regular file; it is never read"));
    if (head.entry.size > cap)
      throw SandboxTransferCapExceeded(said("guest file '" + absolute_path + "' is " +
                                            std::to_string(head.entry.size) + " bytes, over the read cap max_bytes=" +
                                            std::to_string(max_bytes)));
    std::optional<std::string> body = take_file_body(std::move(got.bytes), head, got.cut, absolute_path);
    if (!body) continue;
    co_return std::move(*body);
  }
  throw OSError(said("the tar stream of guest file '" + absolute_path +
                     "' did not fit its header prefix and cap"));
}

awaitable<std::vector<GuestDirEntry>> DockerSandbox::do_list_dir(const std::string& absolute_path) {
  // FILES_LIST is withheld (D-5): archiving a directory streams every body below it.
  throw NotImplementedError("backend 'docker' does not list directories (kind '" + kind() + "', path '" +
                            absolute_path + "'): files_list is not declared");
  co_return std::vector<GuestDirEntry>{};
}

awaitable<void> DockerSandbox::do_remove(const std::string& absolute_path, bool recursive) {
  refuse_if_paused("remove");  // its `rm` is an exec, which a frozen container refuses (issue 49)
  // Reach rule (D-23): root only where the guest could not have swapped any
  // directory on the path — every one owned by uid 0 with no group or other write bit.
  bool as_root = true;
  for (const auto& dir : cumulative_components(guest_dirname(absolute_path))) {
    auto e = co_await tar_stat(*p_.transport, p_.container, dir);
    if (!e || e->type != support::TarEntryType::directory || e->uid != 0 || (e->mode & 022) != 0) {
      as_root = false;
      break;
    }
  }
  auto attempt = [&](bool root) -> awaitable<ExecOutcome> {
    auto make_call = [&] {
      ExecCall call;
      call.container = p_.container;
      call.argv = {"rm", recursive ? "-rf" : "-f", "--", absolute_path};
      // [port decision] a removed work dir must not fail the removal. (assign(1, '/'), not
      // `= "/"`: GCC 12 at -O2 reports a false -Wrestrict on the literal's copy here.)
      call.working_directory.assign(1, '/');
      if (root) call.user = "0";
      call.timeout = p_.command_timeout;
      return call;
    };
    co_return co_await exec_respecting_freeze(*p_.transport, *p_.freeze, make_call);
  };
  ExecOutcome outcome = co_await attempt(as_root);
  // Without CAP_DAC_OVERRIDE root cannot empty a guest-owned directory: retry once as the
  // image user, gated on the setting, never on rm's message (D-23).
  if (outcome.exit_code != 0 && as_root && p_.cap_drop_all) outcome = co_await attempt(false);
  if (outcome.exit_code != 0)
    throw OSError(said("removing guest path '" + absolute_path + "' in container " + p_.container +
                       " failed (exit " + std::to_string(outcome.exit_code) + "): " + outcome.stderr_bytes));
}

awaitable<bool> DockerSandbox::do_file_batch(std::function<awaitable<void>()> body) {
  // [port decision] (issue 24) One freeze for a whole collection: its stats and reads each
  // keep their check and their copy inside one pause window, as D-21 asks of every call,
  // and the window is simply shared — one pause, one unpause, and no other freeze of the
  // container overlaps it (the slot's mutex is held throughout). A collection of three
  // outputs paid six pause/unpause pairs.
  co_await run_frozen(*p_.transport, *p_.freeze, p_.container, body);
  co_return true;
}

awaitable<void> DockerSandbox::do_file_operation(FileOperation operation,
                                                 std::function<awaitable<void>()> body) {
  // exec and remove are never frozen: a frozen container refuses exec (D-21).
  if (operation == FileOperation::Write || operation == FileOperation::Stat || operation == FileOperation::Read)
    co_await run_frozen(*p_.transport, *p_.freeze, p_.container, body);
  else
    co_await body();
}

}  // namespace maf::sandbox::docker::detail
