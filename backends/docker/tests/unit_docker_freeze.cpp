// The freeze protocol against a scripted engine (D-21, D-22, and the [port decision]
// on the engine's lagging paused flag): the engine answers pause and unpause before it flips
// its own flag, so right after this process's own change a refusal may be that lag only.
#include <chrono>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include "freeze.hpp"
#include "host_lock.hpp"
#include "maf/sandbox/sync.hpp"
#include "recording_transport.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::docker;
using namespace maf::sandbox::docker::detail;

namespace {

/// An engine whose flag lags: the next `pause_lags` pauses are refused "already paused", the
/// next `unpause_lags` unpauses "is not paused", the next `exec_refusals` execs are paused
/// refusals, and the next `paused_reads` state reads say paused.
class LaggingEngine final : public docker_test::RecordingTransport {
public:
  int pause_lags = 0, unpause_lags = 0, exec_refusals = 0, paused_reads = 0;
  int pauses = 0, unpauses = 0, execs = 0, state_reads = 0;

  boost::asio::awaitable<void> pause(std::string c) override {
    ++pauses;
    if (pause_lags > 0 && pause_lags--) throw OSError("docker API pause " + c + " failed (HTTP 409): Container abc is already paused");
    co_return;
  }
  boost::asio::awaitable<void> unpause(std::string c) override {
    ++unpauses;
    if (unpause_lags > 0 && unpause_lags--) throw OSError("docker API unpause " + c + " failed (HTTP 409): Container abc is not paused");
    co_return;
  }
  boost::asio::awaitable<ExecOutcome> exec(ExecCall) override {
    ++execs;
    ExecOutcome o;
    if (exec_refusals > 0 && exec_refusals--) {
      o.exit_code = 1;
      o.stderr_bytes = "Error response from daemon: Container abc is paused, unpause the container before exec\n";
      o.paused_refusal = true;
    } else {
      o.stdout_bytes = "ran\n";
    }
    co_return o;
  }
  boost::asio::awaitable<std::optional<ContainerState>> container_state(std::string) override {
    ++state_reads;
    const bool paused = paused_reads > 0 && paused_reads--;
    co_return ContainerState{"id", paused ? "paused" : "running", true, paused, ""};
  }
};

boost::asio::awaitable<void> nothing() { co_return; }

/// One engine, one freeze slot, and the two operations under test on them.
struct Rig {
  BlockingRunner run;
  LaggingEngine engine;
  FreezeSlot slot;

  void freeze() {
    const std::function<boost::asio::awaitable<void>()> body = nothing;
    const std::string container = "c";  // run_frozen keeps a reference: it must outlive the call
    run([&] { return run_frozen(engine, slot, container, body); });
  }

  ExecOutcome exec() {
    const std::function<ExecCall()> make_call = [] {
      ExecCall call;
      call.container = "c";
      call.argv = {"true"};
      return call;
    };
    return run([&] { return exec_respecting_freeze(engine, slot, make_call); });
  }
};

}  // namespace

TEST_CASE("issue 54 D-21: a pause refused 'already paused' by a freeze held elsewhere is waited for and asked again once thawed") {
  Rig r;
  r.engine.pause_lags = 1;
  r.engine.paused_reads = 3;  // the other holder's freeze stands for three reads
  r.freeze();
  CHECK(r.engine.pauses == 2);
  CHECK(r.engine.unpauses == 1);  // ours only: the other's freeze was never lifted
  CHECK(r.engine.state_reads == 4);
}

TEST_CASE("issue 54 D-11: a freeze standing past the bound with no holder on this host is recovered, then taken") {
  Rig r;
  r.slot.foreign_wait = std::chrono::milliseconds(100);
  r.engine.pause_lags = 1;
  r.engine.paused_reads = 1000000;
  r.freeze();
  CHECK(r.engine.pauses == 2);
  CHECK(r.engine.unpauses == 2);  // the recovery, then ours
}

TEST_CASE("[port decision] the engine's lagging flag: just after our own unpause a pause refused 'already paused' is asked again") {
  Rig r;
  r.freeze();  // our own thaw, just now
  r.engine.pause_lags = 2;
  r.freeze();
  CHECK(r.engine.pauses == 1 + 3);
  CHECK(r.engine.unpauses == 2);
  CHECK_FALSE(r.slot.possibly_frozen);
}

TEST_CASE("[port decision] the engine's lagging flag: just after our own pause an unpause refused 'is not paused' is asked again; the freeze ends thawed") {
  Rig r;
  r.engine.unpause_lags = 2;
  r.freeze();
  CHECK(r.engine.unpauses == 3);
  CHECK_FALSE(r.slot.possibly_frozen);
  CHECK(r.slot.live_claim == 0);
}

TEST_CASE("issue 54 D-22: an exec refused as paused by a freeze held elsewhere is re-issued once the pause is gone") {
  Rig r;
  r.engine.exec_refusals = 1;
  r.engine.paused_reads = 2;
  const ExecOutcome o = r.exec();
  CHECK_FALSE(o.paused_refusal);
  CHECK(o.stdout_bytes == "ran\n");
  CHECK(r.engine.execs == 2);
  CHECK(r.engine.state_reads == 3);
}

TEST_CASE("D-22 [port decision]: an exec refused just after our own thaw is re-issued once the engine's flag clears") {
  Rig r;
  r.freeze();
  r.engine.exec_refusals = 1;
  r.engine.paused_reads = 2;
  const ExecOutcome o = r.exec();
  CHECK_FALSE(o.paused_refusal);
  CHECK(o.stdout_bytes == "ran\n");
  CHECK(r.engine.execs == 2);
  CHECK(r.engine.state_reads == 3);  // paused, paused, clear
}

TEST_CASE("D-22: a pause that stays past the bound is refused after exactly one attempt, its refusal returned unchanged") {
  Rig r;
  r.slot.foreign_wait = std::chrono::milliseconds(100);
  r.engine.exec_refusals = 1;
  r.engine.paused_reads = 1000000;
  const ExecOutcome o = r.exec();
  CHECK(o.paused_refusal);
  CHECK(r.engine.execs == 1);
  CHECK(r.engine.unpauses == 0);  // an exec never lifts a freeze
}

TEST_CASE("issue 54: the host lock — one holder at a time; a holder that died holding it is told from one that let go") {
  const std::string name = "unit-test\n" + std::to_string(::getpid()) + "\nhost-lock";
  {
    auto first = HostLock::try_take(name);
    REQUIRE(first);
    CHECK_FALSE(first->previous_holder_died());
    CHECK_FALSE(HostLock::try_take(name));  // another open file description: refused
  }
  {
    auto again = HostLock::try_take(name);  // let go properly: no dead holder
    REQUIRE(again);
    CHECK_FALSE(again->previous_holder_died());
  }
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto held = HostLock::try_take(name);
    ::_exit(held ? 0 : 1);  // dies holding it: no unlink ran
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  {
    auto shared = HostLock::try_take_shared(name);  // a shared holder leaves the record alone
    REQUIRE(shared);
  }
  auto after = HostLock::try_take(name);
  REQUIRE(after);
  CHECK(after->previous_holder_died());
}

TEST_CASE("issue 54: shared holders of the host lock share it, keep it from an exclusive taker, and leave no file") {
  const std::string name = "unit-test\n" + std::to_string(::getpid()) + "\nshared";
  std::string path;
  {
    auto one = HostLock::try_take_shared(name);
    auto two = HostLock::try_take_shared(name);
    REQUIRE(one);
    REQUIRE(two);
    CHECK_FALSE(HostLock::try_take(name));
    path = one->path();
  }
  CHECK_FALSE(std::filesystem::exists(path));
  {
    auto alone = HostLock::try_take(name);
    REQUIRE(alone);
    CHECK_FALSE(alone->previous_holder_died());
    CHECK_FALSE(HostLock::try_take_shared(name));
  }
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("issue 54 D-11: a freeze left by a process on this host that died holding it is lifted at once, then taken") {
  Rig r;
  r.slot.host_lock_name = "unit-test\n" + std::to_string(::getpid()) + "\ndead-holder";
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto held = HostLock::try_take(r.slot.host_lock_name);
    ::_exit(held ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  r.engine.pause_lags = 1;
  r.engine.paused_reads = 1000000;  // would stand for the whole default bound (120 s)
  r.freeze();
  CHECK(r.engine.pauses == 2);
  CHECK(r.engine.unpauses == 2);  // the dead holder's, then ours
  CHECK(r.engine.state_reads == 1);
}

TEST_CASE("issue 54 D-21: a freeze another process on this host holds is waited for; past the bound nothing is paused") {
  Rig r;
  r.slot.host_lock_name = "unit-test\n" + std::to_string(::getpid()) + "\nlive-holder";
  r.slot.foreign_wait = std::chrono::milliseconds(100);
  auto other = HostLock::try_take(r.slot.host_lock_name);  // a live holder
  REQUIRE(other);
  CHECK_THROWS_WITH(r.freeze(), Catch::Contains("another process on this host held the lock of the freeze of container c"));
  CHECK(r.engine.pauses == 0);
  CHECK(r.engine.unpauses == 0);
}
