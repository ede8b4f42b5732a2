// Call admission per (key, kind), docs/tools.md "Call admission", through SandboxRouter::admit_call /
// release_call on the in-process double. Orderings are observed by draining the io_context
// (poll), never by time; the last case runs one io_context on four threads (label `tsan`).
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <thread>

#include "unit/tool_fixture.hpp"

using namespace maf::sandbox;
using maf::sandbox::test::ToolFixture;

namespace {

namespace asio = boost::asio;

/// Runs every ready handler. An io_context that ran out of work is stopped, so restart first.
void drain(asio::io_context& io) {
  io.restart();
  io.poll();
}

/// A call parked on admission: `admitted` flips when the ticket arrives; `release()` hands
/// back what it owes.
struct ParkedCall {
  std::optional<CallTicket> ticket;
  std::exception_ptr error;
  bool admitted = false;
};

void admit_into(asio::io_context& io, SandboxRouter& router, const SandboxKey& key, ParkedCall& call,
                AdmitOptions options = {}) {
  asio::co_spawn(
      io,
      [&router, key, &call, options]() -> asio::awaitable<void> {
        call.ticket.emplace(co_await router.admit_call(key, "shell", options));
        call.admitted = true;
      },
      [&call](std::exception_ptr e) { call.error = e; });
}

void release_into(asio::io_context& io, SandboxRouter& router, ParkedCall& call, std::vector<OwedCleanup> owed,
                  std::vector<std::string>* log = nullptr, std::string name = {}) {
  asio::co_spawn(
      io,
      [&router, &call, owed = std::move(owed), log, name]() mutable -> asio::awaitable<void> {
        co_await router.release_call(std::move(*call.ticket), std::move(owed));
        if (log) log->push_back(name + " released");
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);  // a failed release fails the test loudly
      });
}

/// Records every dispose() as it arrives, with how many calls were inside the body then.
class WatchingBackend : public testing::InProcessSandboxBackend {
public:
  using InProcessSandboxBackend::InProcessSandboxBackend;
  std::atomic<int> inside{0};
  std::atomic<int> disposed_under_a_call{0};
  std::atomic<int> disposals{0};
  std::vector<std::string>* log = nullptr;

  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey key, std::optional<std::string> kind,
                                                                 std::optional<std::string> instance_id) override {
    ++disposals;
    if (inside.load() != 0) ++disposed_under_a_call;
    if (log) log->push_back("disposed");
    co_return co_await InProcessSandboxBackend::dispose(std::move(key), std::move(kind), std::move(instance_id));
  }
};

std::shared_ptr<WatchingBackend> watching_backend() {
  BackendDeclarations d = testing::kFakeBackendDeclarations;
  d.capabilities = test::tool_capabilities();
  auto sb = std::make_shared<testing::InProcessSandbox>(
      testing::InProcessSandboxOptions{.capabilities = test::tool_capabilities(), .kind = "shell"});
  return std::make_shared<WatchingBackend>(testing::InProcessSandboxBackendOptions{.sandbox = sb, .declarations = d});
}

}  // namespace

TEST_CASE("call admission: SERVING: ordinary calls on one (key, kind) overlap") {
  ToolFixture f;
  asio::io_context io;
  ParkedCall a, b;
  admit_into(io, *f.router, f.key(), a);
  admit_into(io, *f.router, f.key(), b);
  drain(io);
  CHECK(a.admitted);
  CHECK(b.admitted);
  release_into(io, *f.router, a, {});
  release_into(io, *f.router, b, {});
  drain(io);
  CHECK(f.backend->dispose_requests().empty());
}

TEST_CASE("call admission: DRAINING: a rung above RECLAIM owed while a sibling runs makes newcomers wait; CLEANING: the last call "
          "out runs the owed record before anyone is admitted") {
  ToolFixture f;
  auto backend = watching_backend();
  ToolFixture g(test::tool_capabilities(), backend);
  std::vector<std::string> log;
  backend->log = &log;
  asio::io_context io;
  ParkedCall a, b, late;
  admit_into(io, *g.router, g.key(), a);
  admit_into(io, *g.router, g.key(), b);
  drain(io);
  REQUIRE((a.admitted && b.admitted));
  // a ends owing a whole-sandbox cleanup while b is still inside: DRAINING.
  release_into(io, *g.router, a, {OwedCleanup{Cleanup::Dispose, backend->sandbox()}}, &log, "a");
  drain(io);
  CHECK(log == std::vector<std::string>{"a released"});  // nothing disposed under b
  admit_into(io, *g.router, g.key(), late);
  drain(io);
  CHECK_FALSE(late.admitted);  // new calls wait while the pair drains
  // b is the last call out: it runs the owed disposal, then the newcomer is admitted.
  release_into(io, *g.router, b, {}, &log, "b");
  drain(io);
  CHECK(log == std::vector<std::string>{"a released", "disposed", "b released"});
  CHECK(late.admitted);
  REQUIRE(backend->dispose_requests().size() == 1);
  CHECK(backend->dispose_requests()[0].kind == "shell");  // narrowed to the kind and instance
  CHECK(backend->dispose_requests()[0].instance_id == "in-process-0");
  release_into(io, *g.router, late, {});
  drain(io);
}

TEST_CASE("call admission: RECLAIM runs immediately inside the releasing call and does not drain the pair") {
  ToolFixture f;
  f.sandbox->seed("abc123abc123/x", std::string("x"));
  asio::io_context io;
  ParkedCall a, b, late;
  admit_into(io, *f.router, f.key(), a);
  admit_into(io, *f.router, f.key(), b);
  drain(io);
  release_into(io, *f.router, a, {OwedCleanup{Cleanup::Reclaim, f.sandbox, "/maf-sandbox/work/abc123abc123"}});
  drain(io);
  CHECK(f.sandbox->hook_counts().reclaim == 1);
  CHECK_FALSE(f.sandbox->lstat_now("/maf-sandbox/work/abc123abc123/x"));
  admit_into(io, *f.router, f.key(), late);
  drain(io);
  CHECK(late.admitted);  // b still runs, and nobody waits
  release_into(io, *f.router, b, {});
  release_into(io, *f.router, late, {});
  drain(io);
}

TEST_CASE("call admission: exclusive admission: one call at a time for the pair, its cleanup included") {
  ToolFixture f;
  auto backend = watching_backend();
  ToolFixture g(test::tool_capabilities(), backend);
  std::vector<std::string> log;
  backend->log = &log;
  asio::io_context io;
  ParkedCall a, b;
  const AdmitOptions exclusive{true, std::chrono::seconds(30)};
  admit_into(io, *g.router, g.key(), a, exclusive);
  admit_into(io, *g.router, g.key(), b, exclusive);
  drain(io);
  CHECK(a.admitted);
  CHECK_FALSE(b.admitted);
  release_into(io, *g.router, a, {OwedCleanup{Cleanup::Dispose, backend->sandbox()}}, &log, "a");
  drain(io);
  CHECK(log == std::vector<std::string>{"disposed", "a released"});
  CHECK(b.admitted);
  // An ordinary call waits behind a running exclusive one, too.
  ParkedCall ordinary;
  admit_into(io, *g.router, g.key(), ordinary);
  drain(io);
  CHECK_FALSE(ordinary.admitted);
  release_into(io, *g.router, b, {});
  drain(io);
  CHECK(ordinary.admitted);
  release_into(io, *g.router, ordinary, {});
  drain(io);
}

TEST_CASE("call admission: a waiter not admitted within its timeout gets TimeoutError naming key, kind and the state") {
  ToolFixture f;
  asio::io_context io;
  ParkedCall holder, waiter;
  admit_into(io, *f.router, f.key(), holder, AdmitOptions{true, std::chrono::seconds(30)});
  drain(io);
  admit_into(io, *f.router, f.key(), waiter, AdmitOptions{false, std::chrono::milliseconds(20)});
  drain(io);  // the waiter parks on its deadline
  io.restart();
  while (!waiter.error && !waiter.admitted) io.run_one();
  REQUIRE(waiter.error);
  try {
    std::rethrow_exception(waiter.error);
  } catch (const TimeoutError& e) {
    CHECK_THAT(e.what(), Catch::Contains(to_string(f.key())) && Catch::Contains("'shell'") &&
                             Catch::Contains("exclusive call running"));
  }
  // The expired waiter left the queue: after the holder, a new call is admitted at once.
  release_into(io, *f.router, holder, {});
  drain(io);
  ParkedCall next;
  admit_into(io, *f.router, f.key(), next);
  drain(io);
  CHECK(next.admitted);
  release_into(io, *f.router, next, {});
  drain(io);
}

TEST_CASE("call admission: owed records are keyed by (backend, instance_id) and keep the stronger rung") {
  ToolFixture f;
  asio::io_context io;
  ParkedCall a, b, c;
  for (auto* call : {&a, &b, &c}) admit_into(io, *f.router, f.key(), *call);
  drain(io);
  release_into(io, *f.router, a, {OwedCleanup{Cleanup::Dispose, f.sandbox}});
  release_into(io, *f.router, b, {OwedCleanup{Cleanup::Reset, f.sandbox}});
  drain(io);
  release_into(io, *f.router, c, {});
  drain(io);
  CHECK(f.backend->dispose_requests().size() == 1);  // one record, the stronger rung
  CHECK(f.sandbox->hook_counts().reset == 0);
}

TEST_CASE("call admission: a ticket dropped unreleased gives its place back; cleanup it owed marks the key unclean") {
  ToolFixture f;
  asio::io_context io;
  ParkedCall a, b;
  admit_into(io, *f.router, f.key(), a);
  admit_into(io, *f.router, f.key(), b);
  drain(io);
  release_into(io, *f.router, a, {OwedCleanup{Cleanup::Dispose, f.sandbox}});
  drain(io);
  b.ticket.reset();  // the last call out, dropped: it cannot run the disposal from a destructor
  REQUIRE(f.router->unclean().size() == 1);
  CHECK_THAT(f.router->unclean()[0].reason, Catch::Contains("destroyed unreleased"));
  ParkedCall next;
  admit_into(io, *f.router, f.key(), next);
  drain(io);
  CHECK(next.admitted);  // the gate does not wedge
  CHECK_THROWS_AS(f.run([&] { return f.router->acquire(f.key(), ToolFixture::spec()); }), SandboxKeyUnclean);
  release_into(io, *f.router, next, {});
  drain(io);
}

TEST_CASE("call admission: release_call refuses a ticket that was already released, and admit_call a non-positive timeout") {
  ToolFixture f;
  CHECK_THROWS_AS(f.run([&] { return f.router->release_call(CallTicket{}); }), ValueError);
  const AdmitOptions no_time{false, std::chrono::milliseconds(0)};
  CHECK_THROWS_AS(f.run([&] { return f.router->admit_call(f.key(), "shell", no_time); }),
                  ValueError);
}

TEST_CASE("call admission: the gate works across event loops: a release on one thread's io_context admits a waiter on another's") {
  ToolFixture f;
  asio::io_context first, second;
  ParkedCall holder, waiter;
  admit_into(first, *f.router, f.key(), holder, AdmitOptions{true, std::chrono::seconds(30)});
  first.run();
  REQUIRE(holder.admitted);
  admit_into(second, *f.router, f.key(), waiter, AdmitOptions{false, std::chrono::seconds(30)});
  second.restart();
  second.poll();
  REQUIRE_FALSE(waiter.admitted);
  std::thread other([&] {
    auto guard = asio::make_work_guard(second);
    while (!waiter.admitted && !waiter.error) second.run_one();
  });
  release_into(first, *f.router, holder, {});
  first.restart();
  first.run();
  other.join();
  CHECK(waiter.admitted);
  release_into(second, *f.router, waiter, {});
  second.restart();
  second.run();
}

TEST_CASE("call admission: TSan: one io_context on four threads, overlapping calls of two tools on one (key, kind), whole-sandbox "
          "disposals arriving mid-call: no disposal ever runs while a call is inside, and nothing is left") {
  auto backend = watching_backend();
  ToolFixture f(test::tool_capabilities(), backend);
  auto body = [backend](SandboxToolSession session, nlohmann::json) -> asio::awaitable<ToolResult> {
    auto sandbox = co_await session.acquire();
    if (!sandbox) co_return ToolResult::error(sandbox.refusal());
    ++backend->inside;
    const std::string dir = session.guest_call_path();
    co_await (*sandbox)->write_file(dir + "/f", "x", ".");
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);  // let siblings interleave
    co_await (*sandbox)->exec("true");
    --backend->inside;
    co_return ToolResult::text(dir);
  };
  SandboxedToolOptions reclaiming;
  reclaiming.cleanup.rung = Cleanup::Reclaim;
  auto ordinary = f.attach(body, reclaiming);
  auto whole = f.attach(body);  // DISPOSE: the whole-sandbox cleanup
  asio::io_context io;
  constexpr int kCalls = 200;
  std::atomic<int> done{0}, errors{0};
  std::mutex reclaimed_mutex;
  std::vector<std::string> reclaimed_dirs;
  for (int i = 0; i < kCalls; ++i) {
    const bool is_whole = i % 10 == 3;
    const auto& tool = is_whole ? whole : ordinary;
    asio::co_spawn(
        io, [&tool, i]() { return tool.invoke(ToolCall{"c" + std::to_string(i), "shell", nlohmann::json::object()}); },
        [&, is_whole](std::exception_ptr e, ToolResult r) {
          if (e || r.is_error) ++errors;
          if (!e && !is_whole) {
            std::lock_guard guard(reclaimed_mutex);
            reclaimed_dirs.push_back("/maf-sandbox/work/" + r.joined_text() + "/f");
          }
          ++done;
        });
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&] { io.run(); });
  for (auto& t : threads) t.join();
  CHECK(done == kCalls);
  CHECK(errors == 0);
  CHECK(backend->disposed_under_a_call == 0);
  CHECK(backend->disposals >= 1);
  CHECK(backend->disposals <= kCalls / 10);  // owed records merge while the pair drains
  CHECK(f.router->unclean().empty());
  // Every RECLAIM call's file is gone (the double's disposal records and deletes nothing, so
  // the DISPOSE calls' files are the only ones left).
  const auto left = backend->sandbox()->contents();
  CHECK(reclaimed_dirs.size() == kCalls - kCalls / 10);
  for (const auto& path : reclaimed_dirs) CHECK(left.count(path) == 0);
  CHECK(left.size() == kCalls / 10);
}
