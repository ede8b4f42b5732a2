// How an exec ends (docs/writing-a-backend.md EXE-1…EXE-3): the backend reports, the core
// raises one type per ending and abandons through the backend's do_abandon — on the
// in-process double, whose do_exec here reports what each case scripts.
#include <catch2/catch.hpp>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;
using namespace std::chrono_literals;

namespace {

class ReportingDouble : public InProcessSandbox {
public:
  using InProcessSandbox::InProcessSandbox;
  ExecReport report;
  std::string abandon_failure;  ///< non-empty: do_abandon throws this
  int abandoned = 0;

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest&) override { co_return report; }
  boost::asio::awaitable<ExecReport> do_run_code(const std::string&, std::chrono::milliseconds,
                                                 std::chrono::steady_clock::time_point) override {
    co_return report;
  }
  boost::asio::awaitable<void> do_abandon() override {
    ++abandoned;
    if (!abandon_failure.empty()) throw OSError(abandon_failure);
    co_return;
  }
};

std::shared_ptr<ReportingDouble> make() {
  return std::make_shared<ReportingDouble>(
      InProcessSandboxOptions{.capabilities = {Capability::Exec, Capability::FilesIn, Capability::RunCode}});
}

}  // namespace

TEST_CASE("EXE-1: an exited report is the program's result, whatever its exit code; nothing is abandoned") {
  auto sb = make();
  BlockingRunner run;
  sb->report = ExecResult{"out", "err", 7, {}};
  const ExecResult r = run([&] { return sb->exec(Command("anything")); });
  CHECK(r.stdout_text() == "out");
  CHECK(r.stderr_text() == "err");
  CHECK(r.exit_code == 7);
  CHECK(sb->abandoned == 0);
}

TEST_CASE("EXE-1: a deadline report is a SandboxProgramTimeout (a TimeoutError) naming backend, kind, timeout and how "
          "it was stopped, with the stop's signal and reach") {
  auto sb = make();
  BlockingRunner run;
  sb->report = ExecReport::group_killed_at_deadline("its process group was killed");
  try {
    run([&] { return sb->exec(Command("sleep 9"), ".", 1234ms); });
    FAIL("exec returned");
  } catch (const SandboxProgramTimeout& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("exec in backend 'in-process'") && Catch::Contains("1234 ms") &&
                         Catch::Contains("its process group was killed"));
    CHECK(e.signal() == SandboxProgramTimeout::Signal::Sent);
    CHECK(e.reach() == SandboxProgramTimeout::Reach::Group);
  }
  CHECK(sb->abandoned == 0);
  // The same through run_code (EXE-3), and caught at TimeoutError as C-40 says.
  CHECK_THROWS_AS(run([&] { return sb->run_code("x", 1s); }), TimeoutError);
}

TEST_CASE("EXE-1: an over-cap report is a SandboxTransferCapExceeded naming the cap as name=value and the output") {
  auto sb = make();
  BlockingRunner run;
  sb->report = ExecReport::over_cap("max_stdout_bytes", 4096, "stdout", "it was killed");
  try {
    run([&] { return sb->exec(Command("yes")); });
    FAIL("exec returned");
  } catch (const SandboxTransferCapExceeded& e) {
    CHECK_THAT(e.what(), Catch::Contains("max_stdout_bytes=4096") && Catch::Contains("to stdout") &&
                             Catch::Contains("it was killed"));
  }
  CHECK(sb->abandoned == 0);
}

TEST_CASE("EXE-2: an abandon report ends the sandbox through do_abandon before the error; the end reached the group") {
  auto sb = make();
  BlockingRunner run;
  sb->report = ExecReport::deadline_expired("the client was stopped", /*abandon=*/true);
  try {
    run([&] { return sb->exec(Command("sleep 9"), ".", 50ms); });
    FAIL("exec returned");
  } catch (const SandboxProgramTimeout& e) {
    CHECK_THAT(e.what(), Catch::Contains("the sandbox was ended"));
    CHECK(e.signal() == SandboxProgramTimeout::Signal::Sent);
    CHECK(e.reach() == SandboxProgramTimeout::Reach::Group);
  }
  CHECK(sb->abandoned == 1);
  sb->report = ExecReport::over_cap("max_exec_output_bytes", 10, "stderr", "the client was stopped", true);
  CHECK_THROWS_AS(run([&] { return sb->exec(Command("yes >&2")); }), SandboxTransferCapExceeded);
  CHECK(sb->abandoned == 2);
}

TEST_CASE("EXE-2: a teardown that fails is said in the raised error, never instead of it") {
  auto sb = make();
  BlockingRunner run;
  sb->report = ExecReport::deadline_expired("wslc was killed", /*abandon=*/true);
  sb->abandon_failure = "engine unreachable";
  try {
    run([&] { return sb->exec(Command("sleep 9"), ".", 50ms); });
    FAIL("exec returned");
  } catch (const SandboxProgramTimeout& e) {
    CHECK_THAT(e.what(), Catch::Contains("ending the sandbox failed: engine unreachable"));
    CHECK(e.signal() == SandboxProgramTimeout::Signal::Refused);
  }
  CHECK(sb->abandoned == 1);
}

TEST_CASE("EXE-2: a backend that reports an abandon without implementing do_abandon is said, not hidden") {
  class NoAbandon : public InProcessSandbox {
  public:
    using InProcessSandbox::InProcessSandbox;

  protected:
    boost::asio::awaitable<ExecReport> do_exec(const ExecRequest&) override {
      co_return ExecReport::deadline_expired("stopped", /*abandon=*/true);
    }
  };
  auto sb = std::make_shared<NoAbandon>(InProcessSandboxOptions{.capabilities = {Capability::Exec, Capability::FilesIn}});
  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return sb->exec(Command("x"), ".", 50ms); }),
                    Catch::Contains("ending the sandbox failed") && Catch::Contains("implements no do_abandon"));
}
