// Sandbox::reclaim and Sandbox::reset as the NVI checks them, once, for every backend (docs/tools.md
// "The cleanup ladder"), and the core's default reclaim (rm -rf as the guest, from /, with one recovery for a
// guest-made read-only tree) — on the in-process double, whose exec is scripted here.
#include <catch2/catch.hpp>

#include <deque>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;
using namespace std::chrono_literals;

namespace {

/// The double with the *core's* do_reclaim (whatever the double itself serves) over an exec
/// that records each command and answers from a script.
class CoreReclaimDouble : public InProcessSandbox {
public:
  using InProcessSandbox::InProcessSandbox;
  std::deque<ExecResult> answers;
  std::exception_ptr raise;
  std::vector<RecordedCommand> seen;

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override {
    seen.push_back({request.shell_line, request.working_directory, request.timeout});
    if (raise) std::rethrow_exception(raise);
    ExecResult r;
    if (!answers.empty()) {
      r = answers.front();
      answers.pop_front();
    }
    co_return r;
  }
  boost::asio::awaitable<void> do_reclaim(const std::string& directory, std::chrono::milliseconds timeout,
                                          std::chrono::steady_clock::time_point deadline) override {
    co_await Sandbox::do_reclaim(directory, timeout, deadline);
  }
};

std::shared_ptr<CoreReclaimDouble> make(CapabilitySet caps = {Capability::Exec, Capability::FilesIn}) {
  return std::make_shared<CoreReclaimDouble>(InProcessSandboxOptions{.capabilities = caps});
}

}  // namespace

TEST_CASE("cleanup ladder: reclaim_nvi: relative, root-near and working-directory targets are ValueError naming the value; nothing runs") {
  auto sb = make();
  BlockingRunner run;
  const std::pair<std::string, std::string> refused[] = {
      {"call-1", "."},                       // not absolute
      {"", "."},                             // not absolute
      {"/", "/"},                            // fewer than two components
      {"/tmp", "/"},                         // fewer than two components
      {"/tmp/..", "/"},                      // normalises to /
      {"/maf-sandbox/x/..", "/"},            // normalises to one component
      {"/maf-sandbox/work", "."},            // the working directory itself
      {"/maf-sandbox/work/sub/..", "."},     // … spelled otherwise
  };
  for (const auto& [directory, wd] : refused) {
    INFO("directory '" << directory << "', working directory '" << wd << "'");
    try {
      run([&] { return sb->reclaim(directory, wd, 10s); });
      FAIL("reclaim returned");
    } catch (const ValueError& e) {
      CHECK_THAT(e.what(), Catch::Contains("'" + directory + "'"));
    }
  }
  for (const auto bound : {0ms, -5ms}) {
    try {
      run([&] { return sb->reclaim("/maf-sandbox/work/call-1", ".", bound); });
      FAIL("reclaim returned");
    } catch (const ValueError& e) {
      CHECK_THAT(e.what(), Catch::Contains(std::to_string(bound.count()) + " ms"));
    }
  }
  CHECK(sb->seen.empty());
}

TEST_CASE("cleanup ladder: reclaim_nvi: a sandbox that cannot exec refuses reclaim at the gate (NotImplementedError)") {
  auto sb = make({Capability::FilesIn});
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sb->reclaim("/maf-sandbox/work/call-1", ".", 10s); }), NotImplementedError);
  CHECK(sb->seen.empty());
}

TEST_CASE("cleanup ladder: reclaim_nvi: the core's reclaim is one rm -rf as the guest, from /, with the caller's bound") {
  auto sb = make();
  BlockingRunner run;
  run([&] { return sb->reclaim("/maf-sandbox/work/./call-1/", "/elsewhere", 7s); });  // wd need not exist
  REQUIRE(sb->seen.size() == 1);
  CHECK(sb->seen[0].command == "rm -rf -- /maf-sandbox/work/call-1");
  CHECK(sb->seen[0].working_directory == "/");
  CHECK(sb->seen[0].timeout == 7s);
}

TEST_CASE("cleanup ladder: reclaim_nvi: a refused rm is retried once after chmod -R u+rwx as the guest; a second refusal is OSError naming the directory and the guest's words") {
  auto sb = make();
  BlockingRunner run;
  SECTION("the recovery succeeds") {
    sb->answers = {ExecResult::from_text("", "rm: can't remove 'x': Permission denied\n", 1), ExecResult{},
                   ExecResult{}};
    run([&] { return sb->reclaim("/maf-sandbox/work/call-1", ".", 10s); });
    REQUIRE(sb->seen.size() == 3);
    CHECK(sb->seen[1].command == "chmod -R u+rwx -- /maf-sandbox/work/call-1");
    CHECK(sb->seen[2].command == "rm -rf -- /maf-sandbox/work/call-1");
  }
  SECTION("the guest still refuses") {
    sb->answers = {ExecResult::from_text("", "denied\n", 1), ExecResult{},
                   ExecResult::from_text("", "rm: can't remove 'x': Read-only file system\n", 1)};
    try {
      run([&] { return sb->reclaim("/maf-sandbox/work/call-1", ".", 10s); });
      FAIL("reclaim returned");
    } catch (const TimeoutError&) {
      FAIL("a refusal is not an expiry");
    } catch (const OSError& e) {
      CHECK_THAT(e.what(), Catch::Contains("/maf-sandbox/work/call-1") && Catch::Contains("Read-only file system") &&
                               Catch::Contains("in-process"));
    }
  }
}

TEST_CASE("cleanup ladder: reclaim_nvi: a backend's expiry is TimeoutError naming the directory and the bound") {
  auto sb = make();
  sb->raise = std::make_exception_ptr(SandboxQueuedTimeout("queued past its deadline"));
  BlockingRunner run;
  try {
    run([&] { return sb->reclaim("/maf-sandbox/work/call-1", ".", 3s); });
    FAIL("reclaim returned");
  } catch (const TimeoutError& e) {
    CHECK_THAT(e.what(), Catch::Contains("/maf-sandbox/work/call-1") && Catch::Contains("3000 ms") &&
                             Catch::Contains("queued past its deadline"));
  }
}

TEST_CASE("cleanup ladder: reset_nvi: without SNAPSHOT reset is NotImplementedError; with it a non-positive bound is ValueError") {
  BlockingRunner run;
  auto plain = make();
  CHECK_THROWS_AS(run([&] { return plain->reset(10s); }), NotImplementedError);
  auto snap = make({Capability::Exec, Capability::Snapshot});
  CHECK_THROWS_AS(run([&] { return snap->reset(0ms); }), ValueError);
}
