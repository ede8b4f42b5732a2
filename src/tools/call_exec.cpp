// A call's programs and the call's stop (docs/tools.md "A cancelled call stops its program",
// AGENT-7): SandboxToolSession's exec, exec_stream and run_code. Where the backend declares
// EXEC_STREAM a program runs through Sandbox::exec_stream with the call's stop token, so a
// cancelled call ends the program's whole process group (STR-10) and a sandbox the host
// keeps (RECLAIM) stays usable; where the seam cannot stop it (no EXEC_STREAM, run_code) the
// call returns at once and its rung is escalated to DISPOSE, which ends it. The same stream
// hands the host its output so far (AGENT-8, SandboxedTool::invoke's on_output).
#include "tools/call_record.hpp"

#include <memory>

#include "maf/sandbox/sandbox.hpp"
#include "spec/command_check.hpp"
#include "tools/until_stopped.hpp"

namespace maf::sandbox {

namespace detail {

namespace {

using boost::asio::awaitable;

/// The call's own reference to `sandbox` (acquire recorded it), or null.
std::shared_ptr<Sandbox> held_by(ToolCallRecord* call, const Sandbox& sandbox) {
  if (!call) return nullptr;
  std::lock_guard guard(call->mutex);
  for (const auto& entry : call->admitted)
    if (entry.sandbox.get() == &sandbox) return entry.sandbox;
  return nullptr;
}

/// Awaits `op` on `sandbox`, or returns Cancelled at the call's stop with the sandbox marked
/// for DISPOSE (the program runs on until then). A sandbox the call did not acquire is not
/// the call's to dispose: its operation is awaited to its end.
template <class T>
awaitable<T> unstoppable(ToolCallRecord* call, const std::shared_ptr<Sandbox>& held,
                         std::function<awaitable<T>()> op) {
  const std::stop_token stop = call ? call->stop : std::stop_token{};
  if (!held || !stop.stop_possible()) co_return co_await op();
  try {
    co_return co_await until_stopped<T>(stop, std::move(op));
  } catch (const Cancelled&) {
    std::lock_guard guard(call->mutex);
    call->unstoppable.push_back(held.get());
  }
  throw Cancelled();
}

}  // namespace

awaitable<ExecResult> exec_in_call(ToolCallRecord* call, Sandbox& sandbox, Command command,
                                   std::string working_directory, std::chrono::milliseconds timeout) {
  const std::stop_token stop = call ? call->stop : std::stop_token{};
  const OutputHandler tee = call ? call->on_output : OutputHandler{};
  if (!stop.stop_possible() && !tee)  // nothing can stop or watch the call: exec as it always ran
    co_return co_await sandbox.exec(std::move(command), std::move(working_directory), timeout);
  if (!sandbox.capabilities().contains(Capability::ExecStream)) {
    std::shared_ptr<Sandbox> held = held_by(call, sandbox);
    Sandbox* target = &sandbox;
    std::function<awaitable<ExecResult>()> op = [held, target, command = std::move(command),
                                                 wd = std::move(working_directory), timeout]() {
      return target->exec(command, wd, timeout);
    };
    co_return co_await unstoppable<ExecResult>(call, held, std::move(op));
  }
  // The output collected as exec would return it; only the deadline bounds the program, as
  // for exec (the silence bound is set to it).
  auto result = std::make_shared<ExecResult>();
  OutputHandler collect = [result, tee](OutputStream stream, std::string_view bytes) {
    (stream == OutputStream::Stdout ? result->stdout_bytes : result->stderr_bytes).append(bytes);
    if (tee) tee(stream, bytes);  // AGENT-8: the host's output so far
  };
  ExecStreamOptions options;
  options.working_directory = std::move(working_directory);
  options.timeout = timeout;
  options.read_timeout = timeout;
  options.stop = stop;
  StreamedExit exit;
  std::optional<SandboxProgramTimeout> timed_out;
  try {
    exit = co_await sandbox.exec_stream(std::move(command), std::move(collect), options);
  } catch (const SandboxStreamIdle& e) {
    timed_out.emplace(e.what(), result->stdout_bytes + result->stderr_bytes, SandboxProgramTimeout::Signal::Sent,
                      SandboxProgramTimeout::Reach::Group);
  } catch (const SandboxProgramTimeout&) {
    throw;
  } catch (const TimeoutError& e) {
    // exec's own type for its deadline (EXE-1), with what the program printed: the stream's
    // deadline stopped the whole group (STR-3).
    timed_out.emplace(e.what(), result->stdout_bytes + result->stderr_bytes, SandboxProgramTimeout::Signal::Sent,
                      SandboxProgramTimeout::Reach::Group);
  }
  if (timed_out) throw *timed_out;
  result->exit_code = exit.exit_code;
  result->limits_hit = exit.limits_hit;
  co_return std::move(*result);
}

}  // namespace detail

boost::asio::awaitable<StreamedExit> SandboxToolSession::exec_stream(Sandbox& sandbox, Command command,
                                                                     OutputHandler on_output,
                                                                     const ExecStreamOptions& options) const {
  return exec_stream_with(sandbox, std::move(command), std::move(on_output), options);  // not a coroutine (GCC 12)
}

boost::asio::awaitable<StreamedExit> SandboxToolSession::exec_stream(Sandbox& sandbox, Command command,
                                                                     OutputHandler on_output) const {
  return exec_stream_with(sandbox, std::move(command), std::move(on_output), ExecStreamOptions());
}

boost::asio::awaitable<StreamedExit> SandboxToolSession::exec_stream_with(Sandbox& sandbox, Command command,
                                                                          OutputHandler on_output,
                                                                          ExecStreamOptions options) const {
  const auto& b = detail::binding_of(binding_);
  detail::refuse_malformed_command("tool '" + b.definition.name + "'", command);
  if (!options.stop.stop_possible() && call_) options.stop = call_->stop;
  co_return co_await sandbox.exec_stream(std::move(command), std::move(on_output), options);
}

boost::asio::awaitable<ExecResult> SandboxToolSession::run_code(Sandbox& sandbox, std::string code,
                                                   std::chrono::milliseconds timeout) const {
  detail::binding_of(binding_);
  std::shared_ptr<Sandbox> held = detail::held_by(call_.get(), sandbox);
  Sandbox* target = &sandbox;
  std::function<boost::asio::awaitable<ExecResult>()> op = [held, target, code = std::move(code), timeout]() {
    return target->run_code(code, timeout);
  };
  co_return co_await detail::unstoppable<ExecResult>(call_.get(), held, std::move(op));
}

}  // namespace maf::sandbox
