// Background processes on the process backend (real bubblewrap): docs/background.md BG-1…BG-10.
// Every assertion is causal: a program waits for a file the test creates, never for time.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "maf/sandbox/background.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/sync.hpp"
#include "../support/process_sandbox.hpp"

using namespace maf::sandbox;
using namespace std::chrono_literals;

namespace {

const SandboxSpec kSpec({.kind = "background", .requires_capabilities = {Capability::Exec, Capability::Background}});

struct ProcessSandbox : test::ProcessSandbox {
  ProcessSandbox() : test::ProcessSandbox("maf-background-process", SandboxKey{"bg-scope", "t", "a", ""}, kSpec) {}
  ExecResult guest(const std::string& line) {
    return run([&] { return sandbox->exec(Command(line), ".", 60s); });
  }
  /// A guest-side bounded wait for `path` (the program says it got somewhere).
  void await_file(const std::string& path) {
    const auto r = guest("i=0; while [ ! -e " + path + " ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; test -e " + path);
    REQUIRE(r.exit_code == 0);
  }
};

/// Whether a host process whose command line holds `marker` runs now (a process guest's
/// processes are host processes).
bool host_runs_now(const std::string& marker) {
  bool found = false;
  DIR* proc = ::opendir("/proc");
  while (const dirent* e = proc ? ::readdir(proc) : nullptr) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    std::string cmdline = s.str();
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(marker) != std::string::npos && std::to_string(::getpid()) != e->d_name) found = true;
  }
  if (proc) ::closedir(proc);
  return found;
}

/// Whether it still runs: polled a bounded while, since a stop lands asynchronously.
bool host_still_runs(const std::string& marker) {
  for (int i = 0; i < 100; ++i) {
    if (!host_runs_now(marker)) return false;
    std::this_thread::sleep_for(100ms);
  }
  return true;
}

/// Whether it is seen running within a bounded while (a program just started may not have
/// exec'd its child yet): a bound on visibility, never a measurement.
bool host_sees(const std::string& marker) {
  for (int i = 0; i < 200; ++i) {
    if (host_runs_now(marker)) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

std::string marker_sleep() { return "sleep 2718." + std::to_string(::getpid() % 1000 + 1000); }

}  // namespace

TEST_CASE("background process BG-1/BG-2: the program runs on after start; a later exec feeds it; wait reports its own "
          "exit code; a wait that times out says running") {
  ProcessSandbox p;
  auto bg = p.run([&] {
    return start_background(p.sandbox, Command("while [ ! -e go ]; do sleep 0.05; done; echo fed > effect; exit 7"));
  });
  CHECK(bg.id().size() == 16);
  CHECK(p.run([&] { return bg.poll(); }).running);
  const auto timed_out = p.run([&] { return bg.wait(200ms); });
  CHECK(timed_out.running);
  CHECK_FALSE(timed_out.exit_code);
  p.guest("touch go");
  const auto ended = p.run([&] { return bg.wait(60s); });
  CHECK_FALSE(ended.running);
  REQUIRE(ended.exit_code);
  CHECK(*ended.exit_code == 7);
  CHECK(p.guest("cat effect").stdout_text() == "fed\n");
  CHECK(p.run([&] { return bg.poll(); }).exit_code == 7);
}

TEST_CASE("background process BG-3: output so far while it runs; each stream over its cap is cut and flagged") {
  ProcessSandbox p;
  auto bg = p.run([&] {
    return start_background(p.sandbox,
                            Command("printf 0123456789; printf oops >&2; touch ready; while [ ! -e go ]; do sleep 0.05; done"));
  });
  p.await_file("ready");
  const auto whole = p.run([&] { return bg.output(10); });
  CHECK(whole.stdout_bytes == "0123456789");
  CHECK_FALSE(whole.stdout_truncated);  // exactly at the cap is not over it
  CHECK(whole.stderr_bytes == "oops");
  CHECK_FALSE(whole.stderr_truncated);
  const auto cut = p.run([&] { return bg.output(3); });
  CHECK(cut.stdout_bytes == "012");
  CHECK(cut.stdout_truncated);
  CHECK(cut.stderr_bytes == "oop");
  CHECK(cut.stderr_truncated);
  CHECK(p.run([&] { return bg.poll(); }).running);
  p.guest("touch go");
  CHECK(p.run([&] { return bg.wait(60s); }).exit_code == 0);
}

TEST_CASE("background process BG-4: a signal reaches the whole group (a child it forked is gone too); a signal after "
          "the end is not sent") {
  ProcessSandbox p;
  const std::string marker = marker_sleep();
  auto bg = p.run([&] { return start_background(p.sandbox, Command("(" + marker + " &); " + marker + " & touch ready; wait")); });
  p.await_file("ready");
  REQUIRE(host_still_runs(marker));
  CHECK(p.run([&] { return bg.signal(15); }));
  const auto s = p.run([&] { return bg.wait(60s); });
  CHECK_FALSE(s.running);
  CHECK(s.exit_code == 128 + 15);
  CHECK_FALSE(host_still_runs(marker));
  CHECK_FALSE(p.run([&] { return bg.signal(15); }));
}

TEST_CASE("background process BG-8: past its lifetime the program's group is ended and the status says expired; the "
          "sandbox stays; a program stopped or ending by itself is not expired") {
  ProcessSandbox p;
  p.guest("echo kept > keeper");
  const std::string marker = marker_sleep();
  BackgroundOptions short_life{.lifetime = 1s};
  // Never ends by itself, and leaves a child that only a kill of its group reaches.
  auto bg = p.run([&] { return start_background(p.sandbox, Command(marker + " & touch ready; wait"), short_life); });
  p.await_file("ready");
  const auto s = p.run([&] { return bg.wait(60s); });
  CHECK_FALSE(s.running);
  CHECK(s.exit_code == 128 + 9);
  CHECK(s.expired);
  CHECK_FALSE(host_still_runs(marker));
  CHECK(p.guest("cat keeper").stdout_text() == "kept\n");  // the lifetime ended the program, not the sandbox

  auto stopped = p.run([&] { return start_background(p.sandbox, Command("while :; do sleep 0.05; done")); });
  const auto by_stop = p.run([&] { return stopped.stop(60s); });
  CHECK(by_stop.exit_code == 128 + 9);
  CHECK_FALSE(by_stop.expired);
  auto by_itself = p.run([&] { return start_background(p.sandbox, Command("exit 3"), short_life); });
  const auto own = p.run([&] { return by_itself.wait(60s); });
  CHECK(own.exit_code == 3);
  CHECK_FALSE(own.expired);
}

TEST_CASE("background process BG-5/BG-6: a handle rebuilt from the id (another runner, as from another call) sees the same "
          "process; an unknown id is refused naming it") {
  ProcessSandbox p;
  const BackgroundOptions named{.id = "mybuild000000001"};  // a braced temporary is refused (GCC 12)
  auto bg = p.run([&] { return start_background(p.sandbox, Command("while [ ! -e go ]; do sleep 0.05; done; exit 3"), named); });
  CHECK(bg.id() == "mybuild000000001");
  {
    BlockingRunner other;
    auto again = other([&] { return find_background(p.sandbox, "mybuild000000001"); });
    CHECK(other([&] { return again.poll(); }).running);
    p.guest("touch go");
    CHECK(other([&] { return again.wait(60s); }).exit_code == 3);
  }
  try {
    p.run([&] { return find_background(p.sandbox, "nosuchid00000000"); });
    FAIL("an unknown id was found");
  } catch (const BackgroundProcessNotFound& e) {
    CHECK(e.id() == "nosuchid00000000");
    CHECK_THAT(e.what(), Catch::Contains("nosuchid00000000"));
  }
  // An id is filed once per sandbox.
  CHECK_THROWS_AS(p.run([&] { return start_background(p.sandbox, Command("true"), named); }), ValueError);
}

TEST_CASE("background process BG-5: another host process, holding only the id, finds it and signals it") {
  ProcessSandbox p;
  auto bg = p.run([&] { return start_background(p.sandbox, Command("while :; do sleep 0.05; done")); });
  const std::string id = bg.id();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Another host process: its own runner, nothing of the parent's handle but the id.
    int code = 3;
    try {
      BlockingRunner own;
      auto found = own([&] { return find_background(p.sandbox, id); });
      const bool running = own([&] { return found.poll(); }).running;
      const bool delivered = own([&] { return found.signal(15); });
      code = running && delivered ? 0 : 1;
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(p.run([&] { return bg.wait(60s); }).exit_code == 128 + 15);  // the other process's signal ended it
}

TEST_CASE("background process BG-6/BG-7: bad input is a ValueError naming the value") {
  ProcessSandbox p;
  auto starts = [&](Command c, BackgroundOptions o = {}) {
    return p.run([&] { return start_background(p.sandbox, c, o); });
  };
  CHECK_THROWS_WITH(starts(Command("")), Catch::Contains("empty"));
  CHECK_THROWS_AS(starts(Command(std::vector<std::string>{})), ValueError);
  CHECK_THROWS_WITH(starts(Command("true"), BackgroundOptions{.id = "Bad-Id"}), Catch::Contains("'Bad-Id'"));
  CHECK_THROWS_WITH(p.run([&] { return find_background(p.sandbox, "../../etc00000000"); }), Catch::Contains("'../../etc00000000'"));
  auto bg = starts(Command("true"));
  CHECK_THROWS_WITH(p.run([&] { return bg.wait(0ms); }), Catch::Contains("got 0"));
  CHECK_THROWS_WITH(p.run([&] { return bg.wait(-5ms); }), Catch::Contains("got -5"));
  CHECK_THROWS_WITH(p.run([&] { return bg.output(-1); }), Catch::Contains("got -1"));
  CHECK_THROWS_WITH(p.run([&] { return bg.signal(0); }), Catch::Contains("got 0"));
}

TEST_CASE("background process BG-10: RESET (the process backend's) stops every background process and forgets it") {
  ProcessSandbox p;
  const std::string marker = marker_sleep();
  auto bg = p.run([&] { return start_background(p.sandbox, Command(marker + " & touch ready; wait")); });
  p.await_file("ready");
  REQUIRE(host_still_runs(marker));
  p.run([&] { return p.sandbox->reset(30s); });
  CHECK_FALSE(host_still_runs(marker));
  CHECK_THROWS_AS(p.run([&] { return find_background(p.sandbox, bg.id()); }), BackgroundProcessNotFound);
}

TEST_CASE("background process BG-10: the supervisor ends with its program once the program's directory is gone, "
          "though no status could be written there (a RECLAIM removes it right after the stop)") {
  ProcessSandbox p;
  // The program ends itself once its directory is removed, so no `status` can ever be written:
  // the supervisor must still end (its exec was held open until its watcher saw `status`).
  const std::string id = "bg10gone" + std::to_string(::getpid() % 100000000 + 100000000).substr(1);
  const std::string marker = "maf-marker-2717." + std::to_string(::getpid());
  BackgroundOptions options;
  options.id = id;
  auto bg = p.run([&] {
    return start_background(p.sandbox,
                            Command("while [ -d .maf-background/" + id + " ]; do sleep 0.05; done; : " + marker),
                            options);
  });
  REQUIRE(host_still_runs(marker));
  std::vector<std::string> argv{"rm", "-rf", "--", bg.directory()};
  CHECK(p.run([&] { return p.sandbox->exec(Command(std::move(argv))); }).exit_code == 0);
  CHECK_FALSE(host_still_runs(marker));  // the program, its supervisor and the supervisor's exec
}

// --- the cleanup ladder (docs/tools.md, BG-10) ---

namespace {

/// A tool whose body starts a background process through its session ("start": returns the
/// id) or looks one up by id ("find": returns "running" or "ended").
/// What a "start" call's body saw of its own background process before the call ended (and
/// the rung ran): BG-10 shows it running first, then gone (issue 50).
struct CallWatch {
  std::string marker;                 ///< looked for on the host right after the start
  bool seen = false;
  bool start_drops_command = false;   ///< the deliberately broken start: it launches nothing
};

struct ToolHarness {
  ProcessSandbox p;  // only for its backend and runner; the tool acquires its own sandbox
  std::shared_ptr<SandboxRouter> router;
  CallerContext context;
  std::shared_ptr<std::shared_ptr<Sandbox>> last = std::make_shared<std::shared_ptr<Sandbox>>();
  std::shared_ptr<CallWatch> watch = std::make_shared<CallWatch>();

  ToolHarness() {
    router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{p.backend},
                                             RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}));
    context.current_scope = [] { return std::string("bg-tools"); };
    context.current_thread_id = [] { return std::optional<std::string>("thread-1"); };
  }
  SandboxedTool tool(Cleanup cleanup) {
    auto last_seen = last;
    auto watch_ = watch;
    ToolBody body = [last_seen, watch_](SandboxToolSession session, nlohmann::json args) -> boost::asio::awaitable<ToolResult> {
      auto sandbox = co_await session.acquire();
      if (!sandbox) co_return ToolResult::error(sandbox.refusal());
      *last_seen = *sandbox;
      if (args["mode"] == "start") {
        // Awaitables made first, then awaited (the GCC 12 by-value-argument trap).
        auto starting = session.start_background(
            *sandbox, Command(watch_->start_drops_command ? std::string(":") : args["command"].get<std::string>()));
        auto started = co_await std::move(starting);
        if (!watch_->marker.empty()) watch_->seen = host_sees(watch_->marker);  // before the rung
        co_return ToolResult::text(started.id());
      }
      auto finding = find_background(*sandbox, args["id"].get<std::string>());
      auto found = co_await std::move(finding);
      const auto status = co_await found.poll();
      co_return ToolResult::text(status.running ? "running" : "ended");
    };
    SandboxedToolOptions o;
    o.cleanup.rung = cleanup;
    const SandboxedTool tool = sandboxed_tool(body, router, context, "agent-1", kSpec, "bg", std::move(o));
    return tool;
  }
  ToolResult call(const SandboxedTool& t, nlohmann::json args) {
    return p.run([&] { return t.invoke(ToolCall{"call-1", "bg", std::move(args)}); });
  }
  /// A background process of the host's own, in the sandbox the last call used.
  BackgroundProcess host_started(const std::string& line) {
    return p.run([&] { return start_background(*last, Command(line)); });
  }
};

/// BG-10's verdict on one "start" call under `cleanup`: empty when the call's background
/// process was seen running during the call (before the rung) and is gone after it; the
/// problem otherwise. `h.watch->start_drops_command` makes the start launch nothing.
std::string rung_stops_the_calls_process(ToolHarness& h, Cleanup cleanup) {
  auto tool = h.tool(cleanup);
  const std::string in_call = marker_sleep();
  h.watch->marker = in_call;
  h.watch->seen = false;
  const ToolResult started = h.call(tool, {{"mode", "start"}, {"command", in_call + " & wait"}});
  h.watch->marker.clear();
  if (started.is_error) return "the start call failed: " + started.joined_text();
  if (!h.watch->seen) return "the call's background process was never seen running before the rung";
  if (host_still_runs(in_call)) return "the call's background process still runs after the rung";
  return {};
}

}  // namespace

TEST_CASE("background BG-10: the rung verdict fails a start_background that launched nothing (a broken start that "
          "drops its command), which an absence-only check passed") {
  ToolHarness h;
  h.watch->start_drops_command = true;
  CHECK_THAT(rung_stops_the_calls_process(h, Cleanup::Reclaim), Catch::Contains("never seen running"));
  h.p.run([&] { return h.router->dispose(SandboxKey{"bg-tools", "thread-1", "agent-1", ""}); });
}

TEST_CASE("background BG-10 RECLAIM: the rung stops the processes the call started and forgets them; one the host "
          "started outside any call survives and a later call finds it by id") {
  ToolHarness h;
  auto tool = h.tool(Cleanup::Reclaim);
  const std::string in_call = marker_sleep();
  h.watch->marker = in_call;
  const ToolResult started = h.call(tool, {{"mode", "start"}, {"command", in_call + " & wait"}});
  h.watch->marker.clear();
  REQUIRE_FALSE(started.is_error);
  const std::string id = started.joined_text();
  CHECK(h.watch->seen);                   // it ran during the call ...
  CHECK_FALSE(host_still_runs(in_call));  // ... and the call's RECLAIM stopped it, children included
  auto sandbox = *h.last;
  REQUIRE(sandbox);
  CHECK_THROWS_AS(h.p.run([&] { return find_background(sandbox, id); }), BackgroundProcessNotFound);

  const std::string hosts = "sleep 2719." + std::to_string(::getpid() % 1000 + 1000);
  auto own = h.host_started(hosts + " & wait");
  const ToolResult found = h.call(tool, {{"mode", "find"}, {"id", own.id()}});
  CHECK(found.joined_text() == "running");
  CHECK((*h.last)->instance_id() == sandbox->instance_id());  // RECLAIM kept the sandbox
  CHECK(host_still_runs(hosts));  // a later call's RECLAIM did not touch it
  CHECK(h.p.run([&] { return own.stop(30s); }).exit_code == 128 + 9);
  CHECK_FALSE(host_still_runs(hosts));
  h.p.run([&] { return h.router->dispose(SandboxKey{"bg-tools", "thread-1", "agent-1", ""}); });
}

TEST_CASE("background BG-10 RESET: the rung ends every background process of the sandbox, the call's and the host's") {
  ToolHarness h;
  // RESET ran after the first call: the call's process, seen running during it, is gone.
  CHECK(rung_stops_the_calls_process(h, Cleanup::Reset) == "");
  auto tool = h.tool(Cleanup::Reset);
  const std::string hosts = "sleep 2719." + std::to_string(::getpid() % 1000 + 1000);
  auto own = h.host_started(hosts + " & wait");
  REQUIRE(host_still_runs(hosts));
  const ToolResult second = h.call(tool, {{"mode", "find"}, {"id", own.id()}});
  CHECK(second.joined_text() == "running");  // found by id during the call
  CHECK_FALSE(host_still_runs(hosts));        // and ended by the call's RESET
  h.p.run([&] { return h.router->dispose(SandboxKey{"bg-tools", "thread-1", "agent-1", ""}); });
}

TEST_CASE("background BG-10 DISPOSE: the rung ends the call's background process with the sandbox") {
  ToolHarness h;
  CHECK(rung_stops_the_calls_process(h, Cleanup::Dispose) == "");
}

TEST_CASE("background BG-10: start_background on a session outside a call is a RuntimeError; nothing starts") {
  ProcessSandbox p;
  const SandboxToolSession outside;
  CHECK_THROWS_AS(p.run([&] { return outside.start_background(p.sandbox, Command("sleep 100")); }), RuntimeError);
}
