// Streaming exec on a real engine (docs/streaming.md STR-1…STR-7; docker.md "Streaming
// exec"), once per transport (MAF_DOCKER_TRANSPORT): the CLI's `docker exec` read through
// its pipes, the Engine API's attach stream demultiplexed as it arrives. Every ending but the
// program's own exit must leave nothing of it running in the guest — checked from the guest
// by a /proc scan for a marker only that program's argv carries (zombies have no cmdline,
// and the container's init never reaps, so they are not "running").
#include <utility>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>

#include <optional>
#include <type_traits>

#include <maf/sandbox/conformance/conformance.hpp>

#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/sleep.hpp"

using namespace maf::sandbox;

namespace {

const CapabilitySet kStreamCaps{Capability::Exec, Capability::ExecStream, Capability::FilesIn};

struct Chunks {
  std::string out, err;
  std::size_t count = 0;
};

OutputHandler collect(Chunks& c) {
  return [&c](OutputStream s, std::string_view b) {
    ++c.count;
    (s == OutputStream::Stdout ? c.out : c.err).append(b);
  };
}

/// A number only this test's program carries in its argv (`sleep <n>`, `: mark<n>`).
std::string unique_number() { return std::to_string(100000 + std::random_device{}() % 800000); }

/// PIDs of live processes whose argv holds "sleep<n>" or "mark<n>" (argv joined without
/// separators). The scan's own argv never does: the word and the number are apart in it.
std::string running_with(docker_test::Scope& scope, Sandbox& sb, const std::string& n) {
  const std::string scan =
      "for d in /proc/[0-9]*; do [ \"${d#/proc/}\" = \"$$\" ] && continue; "
      "case \"$(cat \"$d/cmdline\" 2>/dev/null)\" in *sleep\"$1\"*|*mark\"$1\"*) echo \"${d#/proc/}\";; esac; done";
  std::vector<std::string> argv{"sh", "-c", scan, "sh", n};
  const auto r = scope.run([&] { return sb.exec(Command(argv)); });
  REQUIRE(r.exit_code == 0);
  return r.stdout_bytes;
}

/// The sandbox still answers, in the same container (issue 25: no ending removes it).
void still_answers(docker_test::Scope& scope, Sandbox& sb, const std::string& container_id) {
  const auto r = scope.sh(sb, "echo alive");
  CHECK(r.stdout_bytes == "alive\n");
  CHECK(docker_test::docker_cli({"inspect", "-f", "{{.State.Running}}", container_id}) == "true");
}

}  // namespace

TEST_CASE("STR-1 STR-7 on Docker: chunks arrive before the program exits — by causality: it sees a marker the "
          "handler's reaction created") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kStreamCaps));
  // The program waits (bounded) for a marker that only exists once the handler has seen
  // `first`: an implementation that hands output over at exit prints `no-marker`.
  const std::string program =
      "echo first; i=0; while [ ! -e stream-marker ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
      "if [ -e stream-marker ]; then echo saw-marker; else echo no-marker; fi";
  Chunks got;
  bool marker_spawned = false;
  bool marker_done = false;
  std::exception_ptr marker_error;
  const StreamedExit exit = scope.run([&]() -> boost::asio::awaitable<StreamedExit> {
    auto executor = co_await boost::asio::this_coro::executor;
    OutputHandler on_output = [&](OutputStream s, std::string_view b) {
      (s == OutputStream::Stdout ? got.out : got.err).append(b);
      if (!marker_spawned && got.out.find("first\n") != std::string::npos) {
        marker_spawned = true;
        // A second exec on the same sandbox, concurrent with the stream (the handler must not block).
        boost::asio::co_spawn(executor, sb->exec("touch stream-marker"), [&](std::exception_ptr e, ExecResult) {
          marker_error = e;
          marker_done = true;
        });
      }
    };
    // Named locals, not temporaries, in the co_await (GCC 12 destroys those twice).
    Command command(program);
    ExecStreamOptions options;
    StreamedExit ended = co_await sb->exec_stream(std::move(command), std::move(on_output), options);
    // The marker exec is this coroutine's to finish (an implementation that delivers at exit
    // spawns it only now): it must not outlive the runner.
    while (marker_spawned && !marker_done) co_await support::sleep_for(std::chrono::milliseconds(10));
    co_return ended;
  });
  CHECK(marker_spawned);
  CHECK(marker_done);
  CHECK_FALSE(marker_error);
  CHECK(got.out == "first\nsaw-marker\n");
  CHECK(got.err.empty());
  CHECK(exit.exit_code == 0);
  CHECK(exit.stdout_bytes == got.out.size());
}

namespace {

/// One acquired sandbox, a number for the program's marker, the chunks it wrote.
struct StreamCase {
  docker_test::Scope scope;
  std::shared_ptr<Sandbox> sb;
  std::string n = unique_number();
  Chunks got;
  explicit StreamCase(docker::DockerConfig config = docker_test::test_config())
      : scope(std::move(config)), sb(scope.acquire(docker_test::spec_for(docker_test::kImage, kStreamCaps))) {}

  /// The message of the `E` the stream ended with (absent if it ended otherwise); whether
  /// that error was in fact the read timeout's.
  template <class E>
  std::optional<std::string> ended_by(const std::string& program, ExecStreamOptions options = {}) {
    try {
      scope.run([&] { return sb->exec_stream(program, collect(got), options); });
    } catch (const E& e) {
      if constexpr (std::is_base_of_v<SandboxStreamIdle, E>)
        was_idle = true;
      else
        was_idle = dynamic_cast<const SandboxStreamIdle*>(&e) != nullptr;
      return std::string(e.what());
    }
    return std::nullopt;
  }
  bool was_idle = false;

  /// STR-2 and issue 25 afterwards: nothing with the marker runs, and the same container
  /// still answers.
  void check_gone_and_alive() {
    CHECK(running_with(scope, *sb, n).empty());
    still_answers(scope, *sb, sb->instance_id());
  }
};

}  // namespace

TEST_CASE("STR-4 STR-2 on Docker: a silent program ends at its read timeout (SandboxStreamIdle) and nothing of it "
          "keeps running") {
  StreamCase c;
  ExecStreamOptions options;
  options.read_timeout = std::chrono::seconds(1);
  options.timeout = std::chrono::seconds(60);
  // A child it started and its own sleep: the whole group must go.
  const auto what = c.ended_by<SandboxStreamIdle>("sleep " + c.n + " & printf x; sleep " + c.n, options);
  REQUIRE(what);
  CHECK(what->find("read_timeout=1000") != std::string::npos);
  CHECK(c.got.out == "x");
  c.check_gone_and_alive();
}

TEST_CASE("STR-3 STR-2 on Docker: a program that never stops printing ends at its deadline (TimeoutError, not "
          "SandboxStreamIdle) and is gone") {
  StreamCase c;
  ExecStreamOptions options;
  options.timeout = std::chrono::seconds(2);
  options.read_timeout = std::chrono::seconds(30);
  const auto what = c.ended_by<TimeoutError>("while :; do : mark" + c.n + "; echo tick; sleep 0.1; done", options);
  REQUIRE(what);
  CHECK_FALSE(c.was_idle);
  CHECK(what->find("2000 ms") != std::string::npos);
  CHECK(c.got.out.find("tick\n") == 0);
  c.check_gone_and_alive();
}

TEST_CASE("STR-5 STR-2 on Docker: past max_exec_output_bytes the program is stopped, at most the cap was delivered "
          "(SandboxTransferCapExceeded)") {
  auto config = docker_test::test_config();
  config.max_exec_output_bytes = 4096;
  StreamCase c(config);
  const auto what =
      c.ended_by<SandboxTransferCapExceeded>("while :; do : mark" + c.n + "; echo 0123456789abcdef; done");
  REQUIRE(what);
  CHECK(what->find("max_exec_output_bytes=4096") != std::string::npos);
  CHECK(c.got.out.size() <= 4096);
  CHECK(c.got.out.size() >= 4096 - 16);  // it did write that much: the cap, not an early stop
  c.check_gone_and_alive();
}

namespace {
struct HandlerRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace

TEST_CASE("STR-6 STR-2 on Docker: a handler that throws on the first chunk ends the program; its exception "
          "propagates and the sandbox still answers") {
  StreamCase c;
  std::size_t calls = 0;
  OutputHandler throwing = [&calls](OutputStream, std::string_view) {
    ++calls;
    throw HandlerRefused("enough");
  };
  const std::string program = "echo hello; sleep " + c.n + " & sleep " + c.n;
  CHECK_THROWS_AS(c.scope.run([&] { return c.sb->exec_stream(program, throwing); }), HandlerRefused);
  CHECK(calls == 1);
  c.check_gone_and_alive();
}

TEST_CASE("STR-7 on Docker: binary bytes arrive exact, stdout and stderr apart, the exit status kept") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kStreamCaps));
  std::string out_bytes, err_bytes;
  for (int round = 0; round < 4; ++round)
    for (int b = 0; b < 256; ++b) out_bytes.push_back(static_cast<char>(b));
  for (int round = 0; round < 3; ++round)
    for (int b = 255; b >= 0; --b) err_bytes.push_back(static_cast<char>(b));
  scope.run([&] { return sb->write_file("payload.out", out_bytes); });
  scope.run([&] { return sb->write_file("payload.err", err_bytes); });
  Chunks got;
  const auto exit = scope.run([&] { return sb->exec_stream("cat payload.out; cat payload.err >&2; exit 7", collect(got)); });
  CHECK(got.out == out_bytes);
  CHECK(got.err == err_bytes);
  CHECK(exit.exit_code == 7);
  CHECK(exit.stdout_bytes == out_bytes.size());
  CHECK(exit.stderr_bytes == err_bytes.size());
  // An argv runs verbatim, no shell: the `;` is an argument.
  Chunks argv_got;
  const auto argv_exit = scope.run([&] {
    return sb->exec_stream(Command(std::vector<std::string>{"echo", "a;b", "$HOME"}), collect(argv_got));
  });
  CHECK(argv_got.out == "a;b $HOME\n");
  CHECK(argv_exit.exit_code == 0);
}

TEST_CASE("STR-7 on Docker: a command that cannot start reports the engine's words as stderr and its status, as exec "
          "does") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kStreamCaps));
  Chunks got;
  const auto exit = scope.run([&] {
    return sb->exec_stream(Command(std::vector<std::string>{"no-such-program-here"}), collect(got));
  });
  const auto plain = scope.run([&] { return sb->exec(Command(std::vector<std::string>{"no-such-program-here"})); });
  CHECK(exit.exit_code == 127);
  CHECK(plain.exit_code != 0);
  CHECK(got.out.empty());
  CHECK(got.err.find("no-such-program-here") != std::string::npos);
}

TEST_CASE("STREAM on Docker: the shared suite's ST-n pass with no skips, on this transport") {
  docker_test::Scope scope;
  auto sb = scope.acquire(docker_test::spec_for(docker_test::kImage, kStreamCaps, "conformance"));
  conformance::PosixGuestSubject subject(scope.run, sb, scope.backend->declarations().capabilities, Egress::Closed);
  const auto results = conformance::run_stream(subject);
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
  REQUIRE_FALSE(results.empty());
  for (const auto& r : results) CHECK(r.outcome == conformance::Outcome::Pass);
}
