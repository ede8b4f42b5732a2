// The freeze protocol against a scripted engine (D-21, D-22, and the [port decision]
// on the engine's lagging paused flag): the engine answers pause and unpause before it flips
// its own flag, so right after this process's own change a refusal may be that lag only.
#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "freeze.hpp"
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

TEST_CASE("D-22 [port decision]: a pause refused 'already paused' with no thaw of ours is a foreign pause: refused at once") {
  Rig r;
  r.engine.pause_lags = 1;
  CHECK_THROWS_WITH(r.freeze(), Catch::Contains("already paused"));
  CHECK(r.engine.pauses == 1);
  CHECK(r.engine.unpauses == 0);
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

TEST_CASE("D-22: an exec refused as paused with no freeze of ours is returned unchanged after exactly one attempt") {
  Rig r;
  r.engine.exec_refusals = 1;
  const ExecOutcome o = r.exec();
  CHECK(o.paused_refusal);
  CHECK(r.engine.execs == 1);
  CHECK(r.engine.state_reads == 0);
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

TEST_CASE("D-22: a pause that outlasts the window after our thaw is someone else's: its refusal is returned after one attempt") {
  Rig r;
  // Our thaw answered 1.9 s ago: the rest of the window is spent reading a flag that stays.
  r.slot.thawed_at = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       (std::chrono::steady_clock::now() - std::chrono::milliseconds(1900)).time_since_epoch())
                       .count();
  r.engine.exec_refusals = 1;
  r.engine.paused_reads = 1000;
  const ExecOutcome o = r.exec();
  CHECK(o.paused_refusal);
  CHECK(r.engine.execs == 1);
  CHECK(r.engine.state_reads >= 1);
}
