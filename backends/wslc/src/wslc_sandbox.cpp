// The wslc sandbox's hooks: exec through `container exec`, writes as one confined tar entry
// through `container cp - N:/` (wslc.md W-24…W-29).
#include "wslc_sandbox.hpp"

#include <algorithm>
#include <limits>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/guest_stream.hpp"
#include "maf/sandbox/support/subprocess.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "maf/sandbox/wslc/commands.hpp"
#include "maf/sandbox/wslc/error_codes.hpp"
#include "maf/sandbox/wslc/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::wslc::detail {

using boost::asio::awaitable;

WslcSandbox::WslcSandbox(WslcSandboxParts parts)
    : Sandbox(Descriptor{.backend_name = "wslc",
                         .kind = parts.kind,
                         .capabilities = parts.capabilities,
                         .storage_base = parts.storage_base,
                         .instance_id = parts.instance_id}),
      p_(std::move(parts)),
      plane_{p_.runner.get(), p_.container, p_.kind, p_.command_timeout} {}

awaitable<void> WslcSandbox::do_abandon() {
  // Killing wslc does not stop the guest process (W-28): only removal does. A failure is
  // thrown for the core to say beside the ending it raises, never instead of it (EXE-2).
  WslcCall call;
  call.args = remove_args(p_.container);
  call.timeout = p_.command_timeout;
  const WslcOutcome r = co_await run_lifecycle(*p_.runner, std::move(call), "container remove");
  // W-38: exit 0, or already gone, is removed.
  if (r.exit_code != 0 && find_symbol(r.stderr_bytes) != WslcSymbol::ContainerNotFound)
    throw OSError(said("container ") + p_.container + " (kind '" + kind() + "') could not be removed: exit " +
                  std::to_string(r.exit_code) + ": " + r.stderr_bytes.substr(0, 400));
}

awaitable<ExecReport> WslcSandbox::do_exec(const ExecRequest& request) {
  std::vector<std::string> argv =
      request.command.is_argv() ? request.command.argv() : std::vector<std::string>{"sh", "-c", request.shell_line};
  if (argv.empty()) throw ValueError(said("exec of kind '") + kind() + "' got an empty argv");
  WslcCall call;
  call.args = exec_args(p_.container, request.working_directory, argv);
  call.timeout = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline -
                                                                                std::chrono::steady_clock::now()),
                          std::chrono::milliseconds(1));
  // Each stream is capped one byte past the budget, so "together over 8 MiB" is decided on
  // at most 16 MiB + 2 buffered bytes (W-7).
  call.max_stdout = call.max_stderr = kMaxExecOutputBytes + 1;
  WslcOutcome r;
  bool timed_out = false;
  try {
    r = co_await p_.runner->run(std::move(call));
  } catch (const support::SubprocessTimeout&) {
    timed_out = true;
  }
  // W-28: killing wslc does not stop the guest process; only the container's removal does,
  // so the core abandons the sandbox through do_abandon (EXE-2).
  if (timed_out)
    co_return ExecReport::deadline_expired("wslc was killed (container " + p_.container + ")", /*abandon=*/true);
  if (r.stdout_overflowed || r.stderr_overflowed ||
      r.stdout_bytes.size() + r.stderr_bytes.size() > kMaxExecOutputBytes)
    co_return ExecReport::over_cap("max_exec_output_bytes", kMaxExecOutputBytes, "stdout and stderr together",
                                   "wslc was stopped (container " + p_.container + ")", /*abandon=*/true);
  // W-27: the guest's stderr is never classified as a wslc error.
  co_return ExecResult{std::move(r.stdout_bytes), std::move(r.stderr_bytes), r.exit_code, {}};
}

awaitable<void> WslcSandbox::stop_streamed(const std::string& token, const std::optional<std::string>& pgid) {
  WslcCall call;
  call.args = exec_args(p_.container, "/", support::guest_group_kill_argv(token, pgid));
  call.timeout = p_.command_timeout;  // the backend's own bound: the caller's deadline may be spent
  call.max_stdout = call.max_stderr = 4096;
  const WslcOutcome r = co_await run_lifecycle(*p_.runner, std::move(call), "container exec (stop)");
  if (r.exit_code != 0)
    throw OSError(said("could not stop the streamed command in container ") + p_.container + " (kind '" +
                  kind() + "'" + (pgid ? ", process group " + *pgid : std::string()) + "): exit " +
                  std::to_string(r.exit_code) + ": " + r.stderr_bytes);
}

awaitable<StreamOutcome> WslcSandbox::do_exec_stream(const ExecRequest& request, ExecOutputSink& sink) {
  const std::vector<std::string> program =
      request.command.is_argv() ? request.command.argv() : std::vector<std::string>{"sh", "-c", request.shell_line};
  if (program.empty()) throw ValueError(said("exec_stream of kind '") + kind() + "' got an empty argv");
  const std::string token = support::guest_stream_token();
  // W-7's budget is stdout and stderr together, as for exec.
  support::GuestStreamGate gate(sink, kMaxExecOutputBytes, "the W-7 exec output budget (stdout and stderr together)",
                                support::GuestStreamGate::CapScope::Together);
  WslcCall call;
  call.args = exec_args(p_.container, request.working_directory, support::guest_stream_argv(token, program));
  call.timeout = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline -
                                                                                std::chrono::steady_clock::now()),
                          std::chrono::milliseconds(1));
  call.idle_timeout = request.read_timeout;
  call.stop = request.stop;  // STR-10: a stop kills wslc, then the group below
  // The budget is the gate's; wslc's pipes are only read, never capped here.
  call.max_stdout = call.max_stderr = std::numeric_limits<std::size_t>::max();
  call.on_stdout = [&gate](std::string_view b) { return gate.feed(OutputStream::Stdout, b); };
  call.on_stderr = [&gate](std::string_view b) { return gate.feed(OutputStream::Stderr, b); };
  WslcOutcome r;
  bool expired = false;
  try {
    r = co_await p_.runner->run(std::move(call));
  } catch (const support::SubprocessTimeout&) {
    expired = true;
  }
  if (!expired && !r.stopped_early && !r.idle_expired) {
    if (!gate.started()) {
      const std::string preamble = gate.preamble();
      if (r.exit_code == support::kGuestStreamNotLeader && preamble.rfind("maf-exec-stream:", 0) == 0)
        throw OSError(said("cannot stream exec in container ") + p_.container + " (kind '" + kind() +
                      "'): " + preamble);
      gate.deliver_preamble();  // never started: wslc's words are the command's stderr, as for exec
    }
    co_return StreamOutcome::exited(r.exit_code);
  }
  // STR-2: wslc was killed; the program runs on in the guest until its group is (W-28).
  co_await stop_streamed(token, gate.pgid());
  if (gate.over_cap()) co_return StreamOutcome::over_cap(*gate.over_cap(), gate.cap_name(), gate.cap());
  if (gate.stopped() || r.stopped_early) co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
  if (expired) co_return StreamOutcome::ended(StreamOutcome::End::DeadlineExpired);
  co_return StreamOutcome::ended(StreamOutcome::End::ReadTimedOut);
}

awaitable<std::optional<GuestStat>> WslcSandbox::do_lstat(const std::string& absolute_path) {
  co_return co_await engine_stat(plane_, absolute_path);
}

awaitable<void> WslcSandbox::do_prepare_storage_base(const StorageBaseWalk& walk) {
  if (walk.complete()) co_return;
  // The walk stopped at the first missing component; everything from there down is new. No
  // freeze exists (C-23): a component a guest swaps to a link between the walk and this
  // upload is followed by the engine — W-25's residual, as for write_file's parents.
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  support::TarWriter tar;
  tar.add_directory(walk.base.substr(1), {.mode = 0755, .uid = 0, .gid = 0, .mtime = now});
  std::string archive = std::move(tar).finish();
  co_await upload_tar(plane_, std::move(archive), walk.base);
}

awaitable<void> WslcSandbox::do_write_file(const std::string& absolute_path, const std::string& content) {
  if (content.size() > kMaxFileBytes)
    throw SandboxTransferCapExceeded(said("writing guest file '") + absolute_path + "' (kind '" + kind() +
                                     "') needs " + std::to_string(content.size()) +
                                     " bytes, over the per-file cap of " + std::to_string(kMaxFileBytes) +
                                     "; nothing was uploaded");
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  // One entry, no directory entries: the engine creates missing parents (root, 0755) and
  // leaves existing ones alone (W-24). `/` is the only destination sure to exist.
  co_await upload_file(plane_, absolute_path, content, now);
}

}  // namespace maf::sandbox::wslc::detail
