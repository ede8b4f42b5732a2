// Streaming exec through the shim (docs/streaming.md STR-1…STR-7; wslc.md "Streaming exec"):
// `wslc container exec`'s pipes read as they fill; killing wslc leaves the guest program
// running (W-28), so every ending but its own exit must stop its group in the guest — checked
// from the guest by a /proc scan for a marker only that program's argv carries.
#include <utility>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>

#include <optional>

#include <maf/sandbox/conformance/conformance.hpp>

#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/sleep.hpp"

using namespace maf::sandbox;

namespace {

const CapabilitySet kStreamCaps{Capability::Exec, Capability::ExecStream, Capability::FilesIn};

/// One acquired sandbox, a marker number only its program carries, what it wrote.
struct Streamed {
  wslc_test::Engine engine;
  std::shared_ptr<Sandbox> sb = engine.acquire(wslc_test::spec_for(kStreamCaps));
  std::string n = std::to_string(100000 + std::random_device{}() % 800000);
  std::string out, err;

  OutputHandler handler() {
    return [this](OutputStream s, std::string_view b) { (s == OutputStream::Stdout ? out : err).append(b); };
  }
  /// Live processes whose argv (joined) holds sleep<n> or mark<n>; the scan's own never does.
  std::string running() {
    const std::string scan =
        "for d in /proc/[0-9]*; do [ \"${d#/proc/}\" = \"$$\" ] && continue; case \"$(cat \"$d/cmdline\" "
        "2>/dev/null)\" in *sleep\"$1\"*|*mark\"$1\"*) echo \"${d#/proc/}\";; esac; done";
    std::vector<std::string> argv{"sh", "-c", scan, "sh", n};
    const auto r = engine.run([&] { return sb->exec(Command(argv)); });
    REQUIRE(r.exit_code == 0);
    return r.stdout_bytes;
  }
  /// STR-2 and the container kept: nothing of the program runs, the sandbox still answers.
  void check_gone_and_alive() {
    CHECK(running().empty());
    CHECK(engine.sh(*sb, "echo alive").stdout_bytes == "alive\n");
  }
};

}  // namespace

TEST_CASE("STR-1 on WSLC: chunks arrive before the program exits — it sees a marker the handler's reaction made") {
  Streamed s;
  const std::string program =
      "echo first; i=0; while [ ! -e stream-marker ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
      "if [ -e stream-marker ]; then echo saw-marker; else echo no-marker; fi";
  bool spawned = false, done = false;
  const StreamedExit exit = s.engine.run([&]() -> boost::asio::awaitable<StreamedExit> {
    auto executor = co_await boost::asio::this_coro::executor;
    OutputHandler on_output = [&](OutputStream stream, std::string_view b) {
      (stream == OutputStream::Stdout ? s.out : s.err).append(b);
      if (spawned || s.out.find("first\n") == std::string::npos) return;
      spawned = true;
      boost::asio::co_spawn(executor, s.sb->exec("touch stream-marker"),
                            [&](std::exception_ptr, ExecResult) { done = true; });
    };
    Command command(program);  // named locals in the co_await (GCC 12)
    ExecStreamOptions options;
    StreamedExit ended = co_await s.sb->exec_stream(std::move(command), std::move(on_output), options);
    while (spawned && !done) co_await support::sleep_for(std::chrono::milliseconds(10));
    co_return ended;
  });
  CHECK(s.out == "first\nsaw-marker\n");
  CHECK(exit.exit_code == 0);
}

TEST_CASE("STR-4 STR-2 on WSLC: a silent program ends at its read timeout and nothing of it keeps running") {
  Streamed s;
  ExecStreamOptions options;
  options.read_timeout = std::chrono::seconds(1);
  const std::string program = "sleep " + s.n + " & printf x; sleep " + s.n;
  CHECK_THROWS_AS(s.engine.run([&] { return s.sb->exec_stream(program, s.handler(), options); }), SandboxStreamIdle);
  CHECK(s.out == "x");
  s.check_gone_and_alive();
}

TEST_CASE("STR-3 STR-2 on WSLC: a program printing forever ends at its deadline (TimeoutError, not idle) and is gone") {
  Streamed s;
  ExecStreamOptions options;
  options.timeout = std::chrono::seconds(2);
  options.read_timeout = std::chrono::seconds(30);
  const std::string program = "while :; do : mark" + s.n + "; echo tick; sleep 0.1; done";
  bool deadline = false, idle = false;
  try {
    s.engine.run([&] { return s.sb->exec_stream(program, s.handler(), options); });
  } catch (const SandboxStreamIdle&) {
    idle = true;
  } catch (const TimeoutError&) {
    deadline = true;
  }
  CHECK(deadline);
  CHECK_FALSE(idle);
  s.check_gone_and_alive();
}

TEST_CASE("STR-5 STR-2 on WSLC: past the W-7 budget the program is stopped and at most the budget was delivered") {
  Streamed s;
  const std::string program = "while :; do : mark" + s.n + "; echo 0123456789abcdef; done";
  CHECK_THROWS_AS(s.engine.run([&] { return s.sb->exec_stream(program, s.handler()); }), SandboxTransferCapExceeded);
  CHECK(s.out.size() + s.err.size() <= (std::size_t{8} << 20));
  CHECK(s.out.size() > (std::size_t{8} << 20) - 64);
  s.check_gone_and_alive();
}

namespace {
struct HandlerRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace

TEST_CASE("STR-6 STR-2 on WSLC: a handler that throws ends the program; its exception propagates") {
  Streamed s;
  OutputHandler throwing = [](OutputStream, std::string_view) { throw HandlerRefused("enough"); };
  const std::string program = "echo hello; sleep " + s.n + " & sleep " + s.n;
  CHECK_THROWS_AS(s.engine.run([&] { return s.sb->exec_stream(program, throwing); }), HandlerRefused);
  s.check_gone_and_alive();
}

TEST_CASE("STR-7 on WSLC: binary bytes arrive exact, stdout and stderr apart, the exit status kept") {
  Streamed s;
  std::string out_bytes, err_bytes;
  for (int b = 0; b < 256; ++b) out_bytes.push_back(static_cast<char>(b));
  for (int b = 255; b >= 0; --b) err_bytes += std::string(2, static_cast<char>(b));
  s.engine.run([&] { return s.sb->write_file("payload.out", out_bytes); });
  s.engine.run([&] { return s.sb->write_file("payload.err", err_bytes); });
  const auto exit =
      s.engine.run([&] { return s.sb->exec_stream("cat payload.out; cat payload.err >&2; exit 7", s.handler()); });
  CHECK(s.out == out_bytes);
  CHECK(s.err == err_bytes);
  CHECK(exit.exit_code == 7);
}

TEST_CASE("STREAM on WSLC: the shared suite's ST-n pass with no skips, through the shim") {
  wslc_test::Engine engine;
  auto sb = engine.acquire(wslc_test::spec_for(kStreamCaps, "conformance"));
  conformance::PosixGuestSubject subject(engine.run, sb, engine.backend->declarations().capabilities, Egress::Closed);
  const auto results = conformance::run_stream(subject);
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
  REQUIRE_FALSE(results.empty());
  for (const auto& r : results) CHECK(r.outcome == conformance::Outcome::Pass);
}
