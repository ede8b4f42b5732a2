// SandboxObserver (observer.hpp, docs/observability.md OBS-1…OBS-6): the fan-out, an
// observer that throws, the router's acquisition and cleanup events, the NVI's exec and
// transfer events, collect_outputs' cap refusals, and events from four threads (tsan).
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;
using namespace std::chrono_literals;

namespace {

/// Records every event; thread-safe.
class Recorder final : public SandboxObserver {
public:
  void on_event(const SandboxEvent& event) override {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
  }
  std::vector<SandboxEvent> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  template <class E>
  std::vector<E> of() const {
    std::vector<E> out;
    for (const auto& e : events())
      if (const auto* p = std::get_if<E>(&e)) out.push_back(*p);
    return out;
  }

private:
  mutable std::mutex mutex_;
  std::vector<SandboxEvent> events_;
};

class Thrower final : public SandboxObserver {
public:
  void on_event(const SandboxEvent&) override {
    ++calls;
    throw std::runtime_error("observer exploded");
  }
  std::atomic<int> calls{0};
};

SandboxSpec files_spec() {
  return SandboxSpec({.kind = "script",
                      .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut}});
}

const RouterOptions kNoFloor = RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{});

const SandboxKey kKey{"tenant", "conv", "agent", "call-7"};

/// The in-process backend, declaring the file capabilities these tests use.
std::shared_ptr<InProcessSandboxBackend> make_backend() {
  InProcessSandboxBackendOptions o;
  o.declarations.capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut};
  return std::make_shared<InProcessSandboxBackend>(o);
}

}  // namespace

TEST_CASE("OBS-1: events fan out to every observer, in registration order") {
  std::vector<int> order;
  auto first = make_observer([&](const SandboxEvent&) { order.push_back(1); });
  auto second = make_observer([&](const SandboxEvent&) { order.push_back(2); });
  ObserverSet set({first, nullptr, second});
  CHECK(set.size() == 2);
  emit(&set, CleanupEvent{});
  CHECK(order == std::vector<int>{1, 2});
}

TEST_CASE("OBS-3: an observer that throws is skipped and the next one still sees the event") {
  auto thrower = std::make_shared<Thrower>();
  auto recorder = std::make_shared<Recorder>();
  ObserverSet set({thrower, recorder});
  emit(&set, ExecEvent{});
  CHECK(thrower->calls == 1);
  CHECK(recorder->events().size() == 1);
}

TEST_CASE("OBS-2: emit stamps the time when the caller left it unset") {
  auto recorder = std::make_shared<Recorder>();
  ObserverSet set({recorder});
  const auto before = std::chrono::system_clock::now();
  emit(&set, TransferEvent{});
  REQUIRE(recorder->events().size() == 1);
  CHECK(context_of(recorder->events()[0]).time >= before);
  emit(nullptr, TransferEvent{});  // no observers: nothing, no crash
}

TEST_CASE("OBS-4: the router reports started, reused, refused and failed acquisitions with the key") {
  auto recorder = std::make_shared<Recorder>();
  auto backend = make_backend();
  SandboxRouter router({backend}, kNoFloor, {recorder});
  BlockingRunner run;
  auto first = run([&] { return router.acquire(kKey, files_spec()); });
  auto again = run([&] { return router.acquire(kKey, files_spec()); });
  CHECK(first == again);

  // A capability the in-process backend does not declare: the policy refuses (C-65).
  const SandboxSpec needs_list({.kind = "lister", .requires_capabilities = {Capability::Exec, Capability::Snapshot}});
  CHECK_THROWS_AS(run([&] { return router.acquire(kKey, needs_list); }), SandboxCapabilityNotSupported);
  backend->set_acquire_error(std::make_exception_ptr(OSError("engine gone")));
  CHECK_THROWS_AS(run([&] { return router.acquire(kKey, files_spec()); }), OSError);

  const auto acquisitions = recorder->of<AcquisitionEvent>();
  REQUIRE(acquisitions.size() == 4);
  CHECK(acquisitions[0].outcome == AcquisitionOutcome::Started);
  CHECK(acquisitions[1].outcome == AcquisitionOutcome::Reused);
  CHECK(acquisitions[2].outcome == AcquisitionOutcome::Refused);
  CHECK(acquisitions[2].error_type == "SandboxCapabilityNotSupported");
  CHECK_THAT(acquisitions[2].reason, Catch::Contains("snapshot"));
  CHECK(acquisitions[3].outcome == AcquisitionOutcome::Failed);
  CHECK(acquisitions[3].error_type == "OSError");
  CHECK(acquisitions[3].reason == "engine gone");
  for (const auto& a : acquisitions) {
    CHECK(a.context.key == kKey);
    CHECK(a.context.call_id == "call-7");
    CHECK(a.context.backend == "in-process");
  }
  CHECK(acquisitions[0].isolation == Isolation::None);
  CHECK(acquisitions[0].egress == Egress::Closed);
  CHECK(acquisitions[0].context.instance_id == first->instance_id());
}

TEST_CASE("OBS-5: exec, write_file and read_file through the NVI reach the router's observers") {
  auto recorder = std::make_shared<Recorder>();
  auto backend = make_backend();
  SandboxRouter router({backend}, kNoFloor, {recorder});
  BlockingRunner run;
  auto sandbox = run([&] { return router.acquire(kKey, files_spec()); });
  run([&] { return sandbox->write_file("in.txt", "hello"); });
  CHECK(run([&] { return sandbox->read_file("in.txt"); }) == "hello");
  CHECK_THROWS_AS(run([&] { return sandbox->read_file("in.txt", ".", 2); }), SandboxTransferCapExceeded);
  run([&] { return sandbox->exec(Command("echo hi")); });

  const auto transfers = recorder->of<TransferEvent>();
  REQUIRE(transfers.size() == 3);
  CHECK(transfers[0].direction == TransferDirection::In);
  CHECK(transfers[0].guest_path == "in.txt");
  CHECK(transfers[0].bytes == 5);
  CHECK(transfers[1].direction == TransferDirection::Out);
  CHECK(transfers[1].bytes == 5);
  CHECK_FALSE(transfers[1].refused_by_cap);
  CHECK(transfers[2].refused_by_cap);
  CHECK(transfers[2].error_type == "SandboxTransferCapExceeded");
  for (const auto& t : transfers) CHECK(t.context.key == kKey);

  const auto execs = recorder->of<ExecEvent>();
  REQUIRE(execs.size() == 1);
  CHECK(execs[0].argv_digest.size() == 64);
  CHECK(execs[0].argv_digest.find("echo") == std::string::npos);
  CHECK(execs[0].exit_code.has_value());
  CHECK(execs[0].context.call_id == "call-7");
  CHECK(execs[0].context.backend == "in-process");
}

TEST_CASE("OBS-3: an observer that throws changes no result of acquire, exec or transfer") {
  auto thrower = std::make_shared<Thrower>();
  auto backend = make_backend();
  SandboxRouter observed({backend}, kNoFloor, {thrower});
  BlockingRunner run;
  auto sandbox = run([&] { return observed.acquire(kKey, files_spec()); });
  run([&] { return sandbox->write_file("a.txt", "abc"); });
  CHECK(run([&] { return sandbox->read_file("a.txt"); }) == "abc");
  const ExecResult result = run([&] { return sandbox->exec(Command("echo hi")); });
  CHECK(result.exit_code == 0);
  CHECK(thrower->calls >= 4);
  // A throwing backend's error still reaches the caller as itself.
  backend->set_acquire_error(std::make_exception_ptr(OSError("down")));
  CHECK_THROWS_AS(run([&] { return observed.acquire(kKey, files_spec()); }), OSError);
}

TEST_CASE("OBS-4: dispose_kind reports a dispose cleanup with its outcome") {
  auto recorder = std::make_shared<Recorder>();
  auto backend = make_backend();
  SandboxRouter router({backend}, kNoFloor, {recorder});
  BlockingRunner run;
  CHECK(run([&] { return router.dispose_kind(kKey, "script"); }));
  backend->set_dispose_failure(DisposalFailure{kDisposalUnknown, "engine said no"});
  CHECK_FALSE(run([&] { return router.dispose_kind(kKey, "script"); }));
  const auto cleanups = recorder->of<CleanupEvent>();
  REQUIRE(cleanups.size() == 2);
  CHECK(cleanups[0].rung == Cleanup::Dispose);
  CHECK(cleanups[0].outcome == CleanupOutcome::Done);
  CHECK(cleanups[1].outcome == CleanupOutcome::Unconfirmed);
  CHECK(cleanups[1].context.kind == "script");
}

TEST_CASE("OBS-6: collect_outputs reports an output its files_out caps refuse") {
  auto recorder = std::make_shared<Recorder>();
  auto backend = make_backend();
  SandboxRouter router({backend}, kNoFloor, {recorder});
  BlockingRunner run;
  const SandboxSpec spec({.kind = "script",
                          .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                          .declared_outputs = {DeclaredOutput{.path = "big.txt", .disposition = OutputDisposition::Consume}},
                          .files_out = TransferLimits(4, 100, 4)});
  auto sandbox = run([&] { return router.acquire(kKey, spec); });
  run([&] { return sandbox->write_file("big.txt", "0123456789"); });
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sandbox, spec); }), SandboxTransferCapExceeded);
  const auto transfers = recorder->of<TransferEvent>();
  REQUIRE_FALSE(transfers.empty());
  const auto& refused = transfers.back();
  CHECK(refused.refused_by_cap);
  CHECK(refused.direction == TransferDirection::Out);
  CHECK(refused.guest_path == "big.txt");
  CHECK(refused.bytes == 10);
  CHECK(refused.context.key == kKey);
}

TEST_CASE("OBS-2: the JSON line carries the event type, the key and the fields, never a payload") {
  ToolCallEvent call;
  call.context.key = kKey;
  call.context.call_id = "call-7";
  call.tool = "python";
  call.phase = ToolCallPhase::Released;
  call.error_type = "TimeoutError";
  const auto j = nlohmann::json::parse(event_to_json(call));
  CHECK(j["event"] == "tool_call");
  CHECK(j["phase"] == "released");
  CHECK(j["tool"] == "python");
  CHECK(j["key"]["call_id"] == "call-7");
  CHECK_FALSE(j.contains("arguments"));
  ExecEvent exec;
  exec.exit_code = 3;
  exec.stdout_bytes = 12;
  const auto e = nlohmann::json::parse(event_to_json(exec));
  CHECK(e["event"] == "exec");
  CHECK(e["exit_code"] == 3);
  CHECK(e["stdout_bytes"] == 12);
}

TEST_CASE("OBS-1: events from four threads at once reach every observer, none lost") {
  auto recorder = std::make_shared<Recorder>();
  std::atomic<int> counted{0};
  auto counter = make_observer([&](const SandboxEvent&) { ++counted; });
  auto backend = make_backend();
  SandboxRouter router({backend}, kNoFloor, {recorder, counter, std::make_shared<Thrower>()});
  constexpr int kThreads = 4, kRounds = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      BlockingRunner run;
      const SandboxKey key{"tenant", "conv", "agent-" + std::to_string(t), ""};
      for (int i = 0; i < kRounds; ++i) {
        auto sandbox = run([&] { return router.acquire(key, files_spec()); });
        run([&] { return sandbox->write_file("f" + std::to_string(t) + ".txt", "x"); });
        run([&] { return sandbox->exec(Command("true")); });
      }
    });
  for (auto& t : threads) t.join();
  // Each round: one acquisition, one transfer, one exec.
  CHECK(counted == kThreads * kRounds * 3);
  CHECK(recorder->of<AcquisitionEvent>().size() == kThreads * kRounds);
  CHECK(recorder->of<ExecEvent>().size() == kThreads * kRounds);
}
