// The subprocess seam (wslc.md W-40) over support/subprocess.hpp.
#include "maf/sandbox/wslc/runner.hpp"

#include <filesystem>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/subprocess.hpp"
#include "maf/sandbox/wslc/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::wslc {

WslcRunner::~WslcRunner() = default;

namespace {

class ProcessRunner final : public WslcRunner {
public:
  explicit ProcessRunner(std::string path) : path_(std::move(path)) {}

  boost::asio::awaitable<WslcOutcome> run(WslcCall call) override {
    support::SubprocessOptions o;
    o.argv.push_back(path_);
    o.argv.insert(o.argv.end(), std::make_move_iterator(call.args.begin()), std::make_move_iterator(call.args.end()));
    o.stdin_bytes = std::move(call.stdin_bytes);
    o.stdin_source = std::move(call.stdin_source);
    o.timeout = call.timeout;
    o.max_stdout = call.max_stdout;
    o.max_stderr = call.max_stderr;
    o.cwd = std::move(call.cwd);
    o.on_stdout = std::move(call.on_stdout);
    o.on_stderr = std::move(call.on_stderr);
    o.idle_timeout = call.idle_timeout;
    o.stop = call.stop;
    support::SubprocessResult r;
    try {
      r = co_await support::run_subprocess(std::move(o));
    } catch (const support::SubprocessSpawnError& e) {
      throw WslcBackendUnavailable(said("cannot run wslc_path '") + path_ + "': " + e.what());
    } catch (const Cancelled&) {
      // STR-10: wslc was killed and reaped; the caller stops the program in the guest.
      r.stopped_early = true;
    }
    // After a capped read the child was killed: its status means nothing, the flags say why.
    co_return WslcOutcome{r.exit_code,        std::move(r.stdout_bytes), std::move(r.stderr_bytes),
                          r.stdout_overflowed, r.stderr_overflowed,      r.stopped_early,
                          r.idle_expired};
  }

private:
  std::string path_;
};

}  // namespace

boost::asio::awaitable<WslcOutcome> run_lifecycle(WslcRunner& runner, WslcCall call, const std::string& verb) {
  const auto bound = call.timeout;
  try {
    co_return co_await runner.run(std::move(call));
  } catch (const support::SubprocessTimeout&) {
    throw OSError(said("wslc ") + verb + " did not answer within command_timeout_seconds (" +
                  std::to_string(bound ? bound->count() : 0) + " ms); it was killed");
  }
}

std::shared_ptr<WslcRunner> make_process_runner(std::string wslc_path) {
  // A relative path with a directory part is pinned now: verbs run with other working
  // directories (the file plane's copy-out runs in a private temp dir), where it would name
  // nothing. A bare name stays a PATH search.
  if (wslc_path.find('/') != std::string::npos && wslc_path.front() != '/') {
    wslc_path = std::filesystem::absolute(wslc_path).lexically_normal().string();
  }
  return std::make_shared<ProcessRunner>(std::move(wslc_path));
}

}  // namespace maf::sandbox::wslc
