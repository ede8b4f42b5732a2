// The non-virtual half of Sandbox: gates, confinement and caps, written once for every
// backend (C-35…C-50, C-95…C-103).
#include "maf/sandbox/sandbox.hpp"

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/stdin_stream.hpp"
#include "seam/exec_input.hpp"
#include "spec/command_check.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/shell.hpp"

namespace maf::sandbox {

namespace {

/// Times one observed NVI operation and keeps what ended it, so its event is built once,
/// after the operation, and the failure is rethrown unchanged (OBS-3).
struct Observed {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::exception_ptr failure;

  std::chrono::nanoseconds elapsed() const { return std::chrono::steady_clock::now() - started; }
  std::string error_type() const { return error_type_name(failure); }
  template <class E>
  bool failed_with() const {
    if (!failure) return false;
    try {
      std::rethrow_exception(failure);
    } catch (const E&) {
      return true;
    } catch (...) {
      return false;
    }
  }
  void rethrow() const {
    if (failure) std::rethrow_exception(failure);
  }
};

ExecEvent exec_event(const Observed& o, const std::string& digested, const ExecResult& result, bool run_code) {
  ExecEvent e;
  e.run_code = run_code;
  e.argv_digest = support::sha256_hex(digested);
  e.duration = o.elapsed();
  if (o.failure) {
    e.error_type = o.error_type();
    e.timed_out = o.failed_with<TimeoutError>();
  } else {
    e.exit_code = result.exit_code;
    e.stdout_bytes = result.stdout_bytes.size();
    e.stderr_bytes = result.stderr_bytes.size();
  }
  return e;
}

TransferEvent transfer_event(const Observed& o, TransferDirection direction, const std::string& path,
                             std::size_t bytes) {
  TransferEvent e;
  e.direction = direction;
  e.guest_path = path;
  e.bytes = o.failure ? 0 : bytes;
  e.duration = o.elapsed();
  e.error_type = o.error_type();
  e.refused_by_cap = o.failed_with<SandboxTransferCapExceeded>();
  return e;
}

CleanupEvent cleanup_event(const Observed& o, Cleanup rung) {
  return make_cleanup_event({}, rung, o.failure ? CleanupOutcome::Failed : CleanupOutcome::Done,
                            o.failure ? o.error_type() : std::string(), o.elapsed());
}

}  // namespace

Sandbox::Sandbox(Descriptor descriptor) : descriptor_(std::move(descriptor)) {
  descriptor_.storage_base = normalize_guest_path(descriptor_.storage_base);
}

Sandbox::~Sandbox() = default;

void Sandbox::require_capability(Capability capability, const char* method) const {
  if (descriptor_.capabilities.contains(capability)) return;
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not declare capability '" +
                            std::string(to_string(capability)) + "', so " + method +
                            " is not available to workload kind '" + descriptor_.kind + "'");
}

boost::asio::awaitable<ExecResult> Sandbox::settle_exec(ExecReport report, const char* what,
                                                        std::chrono::milliseconds timeout) {
  if (report.end == ExecReport::End::Exited) co_return std::move(report.result);
  // EXE-1: one type per ending, whatever the backend; EXE-2: an abandon takes the backend's
  // teardown first, and a teardown that fails is said, never hides the ending.
  std::string abandoned;
  if (report.abandon) {
    std::string failure;
    try {
      co_await do_abandon();
    } catch (const Error& e) {  // a cancellation is no failure of the teardown (C-106): it propagates
      failure = e.what();
    }
    abandoned = failure.empty() ? "; the sandbox was ended (the program could not be stopped alone)"
                                : "; ending the sandbox failed: " + failure;
    if (failure.empty()) {
      // The sandbox's end took the program and everything it started.
      report.signal = SandboxProgramTimeout::Signal::Sent;
      report.reach = SandboxProgramTimeout::Reach::Group;
    } else {
      report.signal = SandboxProgramTimeout::Signal::Refused;
    }
  }
  const std::string where = std::string(what) + " in backend '" + descriptor_.backend_name + "' sandbox (kind '" +
                            descriptor_.kind + "')";
  if (report.end == ExecReport::End::DeadlineExpired)
    throw SandboxProgramTimeout(where + " did not finish within its timeout of " + std::to_string(timeout.count()) +
                                    " ms; " + report.stopped + abandoned,
                                {}, report.signal, report.reach);
  throw SandboxTransferCapExceeded(where + " wrote more than " + report.cap_name + "=" +
                                   std::to_string(report.cap_bytes) + " to " + report.cap_output + "; " +
                                   report.stopped + abandoned);
}

boost::asio::awaitable<void> Sandbox::do_abandon() {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' reported an exec to abandon but implements no "
                            "do_abandon");
  co_return;
}

boost::asio::awaitable<ExecResult> Sandbox::exec_with_input(Command command, ExecInput input, std::string working_directory,
                                                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  require_capability(Capability::Exec, "exec");
  refuse_if_paused("exec");  // SNAP-9
  detail::require_input_capabilities(input, [&](Capability c) { require_capability(c, "exec"); });
  detail::refuse_malformed_command("exec", command);
  if (timeout.count() <= 0)
    throw ValueError("exec timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  detail::check_exec_input(input, "exec", descriptor_.backend_name + " sandbox (kind '" + descriptor_.kind + "')");
  ExecRequest request{command, command.shell_line(),
                      resolve_working_directory(working_directory, descriptor_.storage_base), timeout, deadline};
  request.environment = input.environment;
  request.stdin_bytes = input.stdin_bytes;
  const auto observed = observation();
  if (!observed) {
    ExecReport report = co_await do_exec(request);
    co_return co_await settle_exec(std::move(report), "exec", timeout);
  }
  Observed o;
  ExecResult result;
  try {
    ExecReport report = co_await do_exec(request);
    result = co_await settle_exec(std::move(report), "exec", timeout);
  } catch (...) {
    o.failure = std::current_exception();
  }
  ExecEvent e = exec_event(o, request.shell_line, result, false);
  detail::describe_exec_input(input, e);
  deliver(*observed, std::move(e));
  o.rethrow();
  co_return result;
}

bool ExecOutputSink::deliver(OutputStream stream, std::string_view bytes) noexcept {
  if (failure_) return false;
  if (bytes.empty()) return true;
  (stream == OutputStream::Stdout ? stdout_total_ : stderr_total_) += bytes.size();
  try {
    if (handler_) handler_(stream, bytes);
  } catch (...) {
    failure_ = std::current_exception();
    return false;
  }
  return true;
}

namespace {

/// STR-3…STR-6: one error type per ending, whatever the backend. A handler's exception wins
/// over every other ending, the program's own exit included (it was the caller's decision).
StreamedExit settle_stream(const StreamOutcome& outcome, const ExecOutputSink& sink, const std::string& what,
                           const ExecRequest& request) {
  if (sink.failure()) std::rethrow_exception(sink.failure());
  // STR-10 the caller's stop, STDIN-9 the stream's abort: either is the caller's reason.
  if (outcome.end == StreamOutcome::End::Stopped &&
      (request.stop.stop_requested() || (request.stdin_stream && request.stdin_stream->abort_token().stop_requested())))
    throw Cancelled();
  switch (outcome.end) {
    case StreamOutcome::End::Exited:
      return StreamedExit{outcome.exit_code, outcome.limits_hit, sink.total(OutputStream::Stdout),
                          sink.total(OutputStream::Stderr)};
    case StreamOutcome::End::DeadlineExpired:
      throw TimeoutError("streamed command in " + what + " exceeded its timeout of " +
                         std::to_string(request.timeout.count()) + " ms and was stopped");
    case StreamOutcome::End::ReadTimedOut:
      throw SandboxStreamIdle("streamed command in " + what + " wrote nothing for read_timeout=" +
                              std::to_string(request.read_timeout.count()) + " ms and was stopped");
    case StreamOutcome::End::OverCap:
      throw SandboxTransferCapExceeded("streamed command in " + what + " wrote more than " + outcome.cap_name +
                                       "=" + std::to_string(outcome.cap_bytes) + " to " +
                                       to_string(outcome.cap_stream) + "; it was stopped");
    case StreamOutcome::End::Stopped:
      break;
  }
  throw RuntimeError("streamed command in " + what + " was stopped with no reason the caller gave");
}

}  // namespace

boost::asio::awaitable<StreamedExit> Sandbox::exec_stream_with(Command command, OutputHandler on_output,
                                                               ExecStreamOptions options) {
  const detail::FinishStdinStream finish_stream = detail::begin_stdin_stream(options, *this);  // STDIN-6, STDIN-8
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  require_capability(Capability::ExecStream, "exec_stream");
  refuse_if_paused("exec_stream");  // SNAP-9
  detail::refuse_malformed_command("exec_stream", command);
  if (options.timeout.count() <= 0)
    throw ValueError("exec_stream timeout must be positive, got " + std::to_string(options.timeout.count()) + " ms");
  if (options.read_timeout.count() <= 0)
    throw ValueError("exec_stream read_timeout must be positive, got " +
                     std::to_string(options.read_timeout.count()) + " ms");
  if (!on_output) throw ValueError("exec_stream needs an output handler, got an empty one");
  detail::require_input_capabilities(options.input, [&](Capability c) { require_capability(c, "exec_stream"); });
  detail::check_exec_input(options.input, "exec_stream",
                           descriptor_.backend_name + " sandbox (kind '" + descriptor_.kind + "')");
  ExecRequest request{command, command.shell_line(),
                      resolve_working_directory(options.working_directory, descriptor_.storage_base), options.timeout,
                      deadline, options.read_timeout};
  request.environment = options.input.environment;
  request.stdin_bytes = options.input.stdin_bytes;
  if ((request.stop = options.stop).stop_requested()) throw Cancelled();  // STR-10: nothing started
  request.stdin_stream = options.stdin_stream;
  const std::string what = descriptor_.backend_name + " sandbox (kind '" + descriptor_.kind + "')";
  ExecOutputSink sink(std::move(on_output));
  const auto observed = observation();
  if (!observed) {
    const StreamOutcome outcome = co_await do_exec_stream(request, sink);
    co_return settle_stream(outcome, sink, what, request);
  }
  Observed o;
  StreamedExit exit;
  try {
    const StreamOutcome outcome = co_await do_exec_stream(request, sink);
    exit = settle_stream(outcome, sink, what, request);
  } catch (...) {
    o.failure = std::current_exception();
  }
  ExecEvent e = exec_event(o, request.shell_line, ExecResult{}, false);
  e.streamed = true;
  detail::describe_exec_input(options.input, e);
  e.stdout_bytes = sink.total(OutputStream::Stdout);
  e.stderr_bytes = sink.total(OutputStream::Stderr);
  if (!o.failure) e.exit_code = exit.exit_code;
  deliver(*observed, std::move(e));
  o.rethrow();
  co_return exit;
}

boost::asio::awaitable<StreamOutcome> Sandbox::do_exec_stream(const ExecRequest&, ExecOutputSink&) {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' declares exec_stream but does not implement it");
  co_return StreamOutcome{};
}

boost::asio::awaitable<ExecResult> Sandbox::run_code(std::string code, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  require_capability(Capability::RunCode, "run_code");
  refuse_if_paused("run_code");  // SNAP-9
  if (timeout.count() <= 0)
    throw ValueError("run_code timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  const auto observed = observation();
  if (!observed) {
    ExecReport report = co_await do_run_code(code, timeout, deadline);
    co_return co_await settle_exec(std::move(report), "run_code", timeout);
  }
  Observed o;
  ExecResult result;
  try {
    ExecReport report = co_await do_run_code(code, timeout, deadline);
    result = co_await settle_exec(std::move(report), "run_code", timeout);
  } catch (...) {
    o.failure = std::current_exception();
  }
  deliver(*observed, exec_event(o, code, result, true));
  o.rethrow();
  co_return result;
}

boost::asio::awaitable<ExecReport> Sandbox::do_run_code(const std::string&, std::chrono::milliseconds,
                                                        std::chrono::steady_clock::time_point) {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' offers no run_code runtime");
  co_return ExecReport{};
}

boost::asio::awaitable<void> Sandbox::do_file_operation(FileOperation,
                                                        std::function<boost::asio::awaitable<void>()> body) {
  co_await body();
}

boost::asio::awaitable<bool> Sandbox::do_file_batch(std::function<boost::asio::awaitable<void>()>) {
  co_return false;
}

boost::asio::awaitable<void> Sandbox::do_prepare_storage_base(const StorageBaseWalk& walk) {
  if (walk.complete()) co_return;
  throw NotImplementedError("backend '" + backend_name() + "': storage base '" + walk.base + "' of workload kind '" +
                            kind() + "' is missing from '" + walk.chain[walk.first_missing] +
                            "' down, and this backend makes it only when it creates a sandbox");
}

boost::asio::awaitable<void> Sandbox::bracketed(bool batched, FileOperation operation,
                                                std::function<boost::asio::awaitable<void>()> body) {
  // Inside a batch the batch's own bracket covers the call (do_file_batch).
  if (batched)
    co_await body();
  else
    co_await do_file_operation(operation, std::move(body));
}

boost::asio::awaitable<void> Sandbox::write_file(std::string path, std::string content,
                                                 std::string working_directory) {
  require_capability(Capability::FilesIn, "write_file");
  const std::string wd = resolve_working_directory(working_directory, descriptor_.storage_base);
  UnconfinedStat stat = [this](const std::string& p) -> boost::asio::awaitable<std::optional<EntryKind>> {
    auto s = co_await do_lstat(p);
    co_return s ? std::optional<EntryKind>(s->kind) : std::nullopt;
  };
  auto body = [&]() -> boost::asio::awaitable<void> {
    const std::string resolved = co_await confine_resolve_guest_write_path(stat, path, wd);
    co_await do_write_file(resolved, content);
  };
  const auto observed = observation();
  if (!observed) co_return co_await do_file_operation(FileOperation::Write, body);
  Observed o;
  try {
    co_await do_file_operation(FileOperation::Write, body);
  } catch (...) {
    o.failure = std::current_exception();
  }
  deliver(*observed, transfer_event(o, TransferDirection::In, path, content.size()));
  o.rethrow();
}

boost::asio::awaitable<std::optional<SandboxEntry>> Sandbox::stat_file(std::string path,
                                                                       std::string working_directory) {
  co_return co_await stat_file_in(false, std::move(path), std::move(working_directory));
}

boost::asio::awaitable<std::optional<SandboxEntry>> Sandbox::stat_file_in(bool batched, std::string path,
                                                                          std::string working_directory) {
  require_capability(Capability::FilesOut, "stat_file");
  const std::string wd = resolve_working_directory(working_directory, descriptor_.storage_base);
  const std::string resolved = confine_resolve_guest_path(path, wd);
  std::optional<SandboxEntry> out;
  UnconfinedStat stat = [this](const std::string& p) -> boost::asio::awaitable<std::optional<EntryKind>> {
    auto s = co_await do_lstat(p);
    co_return s ? std::optional<EntryKind>(s->kind) : std::nullopt;
  };
  co_await bracketed(batched, FileOperation::Stat, [&]() -> boost::asio::awaitable<void> {
    co_await refuse_symlinked_ancestors(stat, resolved, wd, false);
    if (auto s = co_await do_lstat(resolved)) {
      SandboxEntry e{*guest_path_relative_to(resolved, wd), s->kind, s->size_bytes};
      if (e.kind == EntryKind::Symlink) e.size_bytes.reset();
      out = std::move(e);
    }
  });
  co_return out;
}

boost::asio::awaitable<std::string> Sandbox::read_file(std::string path, std::string working_directory,
                                                       std::int64_t max_bytes) {
  co_return co_await read_file_in(false, std::move(path), std::move(working_directory), max_bytes);
}

boost::asio::awaitable<std::string> Sandbox::read_file_in(bool batched, std::string path,
                                                          std::string working_directory, std::int64_t max_bytes) {
  require_capability(Capability::FilesOut, "read_file");
  const auto observed = observation();
  if (!observed) co_return co_await read_confined(batched, std::move(path), std::move(working_directory), max_bytes);
  Observed o;
  std::string content;
  try {
    content = co_await read_confined(batched, path, std::move(working_directory), max_bytes);
  } catch (...) {
    o.failure = std::current_exception();
  }
  deliver(*observed, transfer_event(o, TransferDirection::Out, path, content.size()));
  o.rethrow();
  co_return content;
}

boost::asio::awaitable<std::string> Sandbox::read_confined(bool batched, std::string path,
                                                           std::string working_directory, std::int64_t max_bytes) {
  if (max_bytes < 0) throw ValueError("read_file max_bytes must not be negative, got " + std::to_string(max_bytes));
  const std::string wd = resolve_working_directory(working_directory, descriptor_.storage_base);
  const std::string resolved = confine_resolve_guest_path(path, wd);
  std::string content;
  UnconfinedStat stat = [this](const std::string& p) -> boost::asio::awaitable<std::optional<EntryKind>> {
    auto s = co_await do_lstat(p);
    co_return s ? std::optional<EntryKind>(s->kind) : std::nullopt;
  };
  co_await bracketed(batched, FileOperation::Read, [&]() -> boost::asio::awaitable<void> {
    co_await refuse_symlinked_ancestors(stat, resolved, wd, false);
    const auto s = co_await do_lstat(resolved);
    if (!s) throw FileNotFoundError("guest file '" + path + "' does not exist (in '" + wd + "')");
    switch (s->kind) {
      case EntryKind::Directory:
        throw IsADirectoryError("guest path '" + path + "' is a directory, not a file");
      case EntryKind::Symlink:
        throw OSError("guest path '" + path + "' is a symbolic link; links are never read through");
      case EntryKind::Other:
        throw OSError("guest path '" + path + "' is not a regular file");
      case EntryKind::File:
        break;
    }
    if (s->size_bytes && *s->size_bytes > max_bytes)
      throw SandboxTransferCapExceeded("guest file '" + path + "' is " + std::to_string(*s->size_bytes) +
                                       " bytes, over the read cap max_bytes=" + std::to_string(max_bytes));
    content = co_await do_read_file(resolved, max_bytes);
  });
  if (static_cast<std::int64_t>(content.size()) > max_bytes)
    throw SandboxTransferCapExceeded("guest file '" + path + "' holds more than the read cap max_bytes=" +
                                     std::to_string(max_bytes) + "; refusing rather than truncating");
  co_return content;
}

boost::asio::awaitable<std::vector<SandboxEntry>> Sandbox::list_dir(std::string path,
                                                                    std::string working_directory) {
  require_capability(Capability::FilesList, "list_dir");
  const std::string wd = resolve_working_directory(working_directory, descriptor_.storage_base);
  const std::string resolved = confine_resolve_guest_path(path, wd);
  std::vector<SandboxEntry> out;
  UnconfinedStat stat = [this](const std::string& p) -> boost::asio::awaitable<std::optional<EntryKind>> {
    auto s = co_await do_lstat(p);
    co_return s ? std::optional<EntryKind>(s->kind) : std::nullopt;
  };
  co_await do_file_operation(FileOperation::List, [&]() -> boost::asio::awaitable<void> {
    co_await refuse_symlinked_ancestors(stat, resolved, wd, true);
    const auto self = co_await do_lstat(resolved);
    if (!self) throw FileNotFoundError("guest directory '" + path + "' does not exist (in '" + wd + "')");
    if (self->kind != EntryKind::Directory)
      throw NotADirectoryError("guest path '" + path + "' is not a directory");
    const std::string rel = *guest_path_relative_to(resolved, wd);
    for (auto& child : co_await do_list_dir(resolved)) {
      SandboxEntry e{rel.empty() ? child.name : rel + "/" + child.name, child.stat.kind, child.stat.size_bytes};
      if (e.kind == EntryKind::Symlink) e.size_bytes.reset();
      out.push_back(std::move(e));
    }
  });
  co_return out;
}

boost::asio::awaitable<void> Sandbox::remove(std::string path, std::string working_directory, bool recursive) {
  require_capability(Capability::FilesDelete, "remove");
  const std::string wd = resolve_working_directory(working_directory, descriptor_.storage_base);
  const std::string resolved = confine_resolve_guest_path(path, wd);
  if (resolved == wd)
    throw ValueError("refusing to remove the working directory '" + wd + "' itself");
  UnconfinedStat stat = [this](const std::string& p) -> boost::asio::awaitable<std::optional<EntryKind>> {
    auto s = co_await do_lstat(p);
    co_return s ? std::optional<EntryKind>(s->kind) : std::nullopt;
  };
  co_await do_file_operation(FileOperation::Remove, [&]() -> boost::asio::awaitable<void> {
    co_await refuse_symlinked_ancestors(stat, resolved, wd, false);
    const auto s = co_await do_lstat(resolved);
    if (!s) co_return;  // C-49: missing is success
    if (s->kind == EntryKind::Directory && !recursive)
      throw OSError("guest path '" + path + "' is a directory; pass recursive=true to remove it");
    co_await do_remove(resolved, recursive && s->kind == EntryKind::Directory);
  });
}

boost::asio::awaitable<void> Sandbox::reclaim(std::string directory, std::string working_directory,
                                              std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  require_capability(Capability::Exec, "reclaim");
  refuse_if_paused("reclaim");  // SNAP-9
  if (timeout.count() <= 0)
    throw ValueError("reclaim timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  if (directory.empty() || directory.front() != '/')
    throw ValueError("reclaim needs an absolute guest directory, got '" + directory + "'");
  const std::string target = normalize_guest_path(directory);
  std::size_t components = 0;
  for (std::size_t i = 0; i < target.size(); ++i)
    if (target[i] != '/' && (i == 0 || target[i - 1] == '/')) ++components;
  // `/` and `/tmp` are the shapes that turn a cleanup into an outage: a recursive delete is
  // irreversible, so this guard stands whatever the caller derived the path from.
  if (components < 2)
    throw ValueError("reclaim refuses '" + directory + "': fewer than two path components is too close to the root");
  const std::string wd = resolve_working_directory(working_directory, descriptor_.storage_base);
  if (target == wd) throw ValueError("reclaim refuses '" + directory + "': it is the working directory itself");
  const auto observed = observation();
  if (!observed) co_return co_await do_reclaim(target, timeout, deadline);
  Observed o;
  try {
    co_await do_reclaim(target, timeout, deadline);
  } catch (...) {
    o.failure = std::current_exception();
  }
  deliver(*observed, cleanup_event(o, Cleanup::Reclaim));
  o.rethrow();
}

namespace {

std::string trimmed_stderr(const ExecResult& r) {
  std::string detail = r.stderr_text();
  while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' ')) detail.pop_back();
  return detail;
}

}  // namespace

boost::asio::awaitable<void> Sandbox::do_reclaim(const std::string& absolute_directory,
                                                 std::chrono::milliseconds timeout,
                                                 std::chrono::steady_clock::time_point deadline) {
  // `rm -rf` run by the guest's own principal: it can never remove more than the program it
  // serves could. From `/`, since the target is absolute and a call that never wrote has no
  // working directory to stand in. rm never follows a link it meets (the named directory
  // being a link is unlinked, an interior link is unlinked), so a planted link cannot aim it
  // anywhere; a directory swapped for a link mid-walk is caught by rm's own no-follow walk,
  // and whatever slips through is still bounded by the guest's own authority.
  auto run = [&](std::vector<std::string> argv) -> boost::asio::awaitable<ExecResult> {
    ExecRequest request{Command(std::move(argv)), {}, "/", timeout, deadline};
    request.shell_line = request.command.shell_line();
    ExecReport report = co_await do_exec(request);
    co_return co_await settle_exec(std::move(report), "reclaim", timeout);
  };
  auto expired = [&](const TimeoutError& e) {
    return TimeoutError("backend '" + descriptor_.backend_name + "': reclaiming '" + absolute_directory +
                        "' (workload kind '" + descriptor_.kind + "') exceeded its timeout of " +
                        std::to_string(timeout.count()) + " ms: " + e.what());
  };
  try {
    // Named, not braced into the co_await (the GCC 12 trap, docs/getting-started.md).
    std::vector<std::string> rm{"rm", "-rf", "--", absolute_directory};
    std::vector<std::string> chmod{"chmod", "-R", "u+rwx", "--", absolute_directory};
    ExecResult removed = co_await run(rm);
    if (removed.exit_code == 0) co_return;
    // A guest that made a directory of its own read-only (0555) keeps rm out of it — the
    // guest could undo that itself, so the reclaim does, still as the guest: `chmod -R`
    // changes only what the guest owns and does not follow links met on the way. One exec
    // on the common path; the recovery costs two more only when the first refused.
    (void)co_await run(std::move(chmod));
    removed = co_await run(std::move(rm));
    if (removed.exit_code == 0) co_return;
    const std::string detail = trimmed_stderr(removed);
    throw OSError("backend '" + descriptor_.backend_name + "': the guest of workload kind '" + descriptor_.kind +
                  "' refused to remove '" + absolute_directory + "': rm exited " +
                  std::to_string(removed.exit_code) + (detail.empty() ? "" : " — " + detail));
  } catch (const TimeoutError& e) {
    // Every backend's own expiry (a killed exec, a queue that never started it) reads as the
    // one docs/tools.md "The cleanup ladder" names, with the directory in it.
    throw expired(e);
  }
}

boost::asio::awaitable<void> Sandbox::reset(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  require_capability(Capability::Snapshot, "reset");
  refuse_if_paused("reset");  // SNAP-9
  if (timeout.count() <= 0)
    throw ValueError("reset timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  const auto observed = observation();
  if (!observed) co_return co_await do_reset(timeout, deadline);
  Observed o;
  try {
    co_await do_reset(timeout, deadline);
  } catch (...) {
    o.failure = std::current_exception();
  }
  deliver(*observed, cleanup_event(o, Cleanup::Reset));
  o.rethrow();
}

boost::asio::awaitable<void> Sandbox::do_reset(std::chrono::milliseconds, std::chrono::steady_clock::time_point) {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement reset");
  co_return;
}

boost::asio::awaitable<std::string> Sandbox::do_read_file(const std::string&, std::int64_t) {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement read_file");
  co_return std::string{};
}
boost::asio::awaitable<std::vector<GuestDirEntry>> Sandbox::do_list_dir(const std::string&) {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement list_dir");
  co_return std::vector<GuestDirEntry>{};
}
boost::asio::awaitable<void> Sandbox::do_remove(const std::string&, bool) {
  throw NotImplementedError("backend '" + descriptor_.backend_name + "' does not implement remove");
  co_return;
}

}  // namespace maf::sandbox
