#include "stream_double.hpp"

#include "maf/sandbox/support/subprocess.hpp"

namespace maf::sandbox::conformance::test {

StreamDouble::StreamDouble(const std::filesystem::path& root, StreamFlaw flaw)
    : HostTreeSandbox(root, Flaw::None, {Capability::ExecStream}), flaw_(flaw) {}

boost::asio::awaitable<StreamOutcome> StreamDouble::do_exec_stream(const ExecRequest& request, ExecOutputSink& sink) {
  support::SubprocessOptions o;
  o.argv = request.command.is_argv() ? request.command.argv()
                                     : std::vector<std::string>{"sh", "-c", request.shell_line};
  if (flaw_ == StreamFlaw::HiddenFromHost)
    for (auto& a : o.argv) a = hidden_from_host(a);
  if (flaw_ == StreamFlaw::SparesGroup) o.argv.insert(o.argv.begin(), {"setsid", "-w"});
  o.cwd = request.working_directory;
  const auto remaining =
      std::chrono::duration_cast<std::chrono::milliseconds>(request.deadline - std::chrono::steady_clock::now());
  o.timeout = std::max(remaining, std::chrono::milliseconds(1));
  o.kill_grace = std::chrono::milliseconds(500);
  o.idle_timeout = request.read_timeout;
  o.max_stdout = o.max_stderr = flaw_ == StreamFlaw::NoCap ? std::size_t{4} << 30 : kCap;
  if (flaw_ != StreamFlaw::AtExit) {
    o.on_stdout = [&sink](std::string_view b) { return sink.deliver(OutputStream::Stdout, b); };
    const OutputStream err = flaw_ == StreamFlaw::FoldsStderr ? OutputStream::Stdout : OutputStream::Stderr;
    o.on_stderr = [&sink, err](std::string_view b) { return sink.deliver(err, b); };
  }
  if (flaw_ != StreamFlaw::IgnoresStop) o.stop = request.stop;  // STR-10
  support::SubprocessResult r;
  try {
    r = co_await support::run_subprocess(std::move(o));
  } catch (const support::SubprocessTimeout&) {
    co_return StreamOutcome::ended(StreamOutcome::End::DeadlineExpired);
  } catch (const Cancelled&) {
    co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
  }
  if (r.stopped_early) co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
  if (r.idle_expired)
    co_return StreamOutcome::ended(flaw_ == StreamFlaw::IdleAsDeadline ? StreamOutcome::End::DeadlineExpired
                                                                      : StreamOutcome::End::ReadTimedOut);
  if (r.stdout_overflowed) co_return StreamOutcome::over_cap(OutputStream::Stdout, "max_stdout", kCap);
  if (r.stderr_overflowed) co_return StreamOutcome::over_cap(OutputStream::Stderr, "max_stderr", kCap);
  if (flaw_ == StreamFlaw::AtExit) {
    if (!sink.deliver(OutputStream::Stdout, r.stdout_bytes) || !sink.deliver(OutputStream::Stderr, r.stderr_bytes))
      co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
  }
  co_return StreamOutcome::exited(r.exit_code);
}

}  // namespace maf::sandbox::conformance::test
