// The wslc sandbox's hooks: exec through `container exec`, writes as one confined tar entry
// through `container cp - N:/` (wslc.md W-24…W-29).
#include "wslc_sandbox.hpp"

#include <algorithm>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/subprocess.hpp"
#include "maf/sandbox/wslc/commands.hpp"
#include "maf/sandbox/wslc/errors.hpp"

namespace maf::sandbox::wslc::detail {

using boost::asio::awaitable;

WslcSandbox::WslcSandbox(WslcSandboxParts parts)
    : Sandbox(Identity{"wslc", parts.kind, parts.capabilities, parts.storage_base, parts.instance_id}),
      p_(std::move(parts)),
      plane_{p_.runner.get(), p_.container, p_.kind, p_.command_timeout} {}

awaitable<void> WslcSandbox::remove_container_quietly() {
  // Killing wslc does not stop the guest process (W-28): only removal does. A failing
  // removal must not hide the error being raised.
  try {
    WslcCall call;
    call.args = remove_args(p_.container);
    call.timeout = p_.command_timeout;
    co_await run_lifecycle(*p_.runner, std::move(call), "container remove");
  } catch (const Error&) {
  }
}

awaitable<ExecResult> WslcSandbox::do_exec(const ExecRequest& request) {
  std::vector<std::string> argv =
      request.command.is_argv() ? request.command.argv() : std::vector<std::string>{"sh", "-c", request.shell_line};
  if (argv.empty()) throw ValueError("backend 'wslc': exec of kind '" + kind() + "' got an empty argv");
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
  if (timed_out) {
    co_await remove_container_quietly();
    throw SandboxProgramTimeout("backend 'wslc': exec in container " + p_.container + " (kind '" + kind() +
                                "') did not finish within its timeout of " + std::to_string(request.timeout.count()) +
                                " ms; the container was removed");
  }
  if (r.stdout_overflowed || r.stderr_overflowed ||
      r.stdout_bytes.size() + r.stderr_bytes.size() > kMaxExecOutputBytes) {
    co_await remove_container_quietly();
    throw WslcExecOutputLimitExceeded("backend 'wslc': exec in container " + p_.container + " (kind '" + kind() +
                                      "') wrote more than " + std::to_string(kMaxExecOutputBytes) +
                                      " bytes of stdout and stderr together; wslc was stopped and the container "
                                      "removed");
  }
  // W-27: the guest's stderr is never classified as a wslc error.
  co_return ExecResult{std::move(r.stdout_bytes), std::move(r.stderr_bytes), r.exit_code, {}};
}

awaitable<std::optional<GuestStat>> WslcSandbox::do_lstat(const std::string& absolute_path) {
  co_return co_await engine_stat(plane_, absolute_path);
}

awaitable<void> WslcSandbox::do_write_file(const std::string& absolute_path, const std::string& content) {
  if (content.size() > kMaxFileBytes)
    throw SandboxTransferCapExceeded("backend 'wslc': writing guest file '" + absolute_path + "' (kind '" + kind() +
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
