// Sandbox::exec_stream as the NVI checks and settles it, once, for every backend
// (docs/streaming.md STR-2…STR-9) — on the in-process double, whose stream hook is scripted.
#include <catch2/catch.hpp>

#include <deque>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;
using namespace std::chrono_literals;

namespace {

struct Chunk {
  OutputStream stream;
  std::string bytes;
};

/// Delivers `chunks` in order (stopping when the sink says so), then reports `outcome`.
class ScriptedStream : public InProcessSandbox {
public:
  using InProcessSandbox::InProcessSandbox;
  std::vector<Chunk> chunks;
  StreamOutcome outcome = StreamOutcome::exited(0);
  std::vector<ExecRequest> seen;
  std::size_t delivered_before_stop = 0;

protected:
  boost::asio::awaitable<StreamOutcome> do_exec_stream(const ExecRequest& request, ExecOutputSink& sink) override {
    seen.push_back(request);
    for (const auto& c : chunks) {
      if (!sink.deliver(c.stream, c.bytes)) co_return StreamOutcome::ended(StreamOutcome::End::Stopped);
      ++delivered_before_stop;
    }
    co_return outcome;
  }
};

std::shared_ptr<ScriptedStream> make(CapabilitySet caps = {Capability::Exec, Capability::ExecStream}) {
  return std::make_shared<ScriptedStream>(InProcessSandboxOptions{.capabilities = caps});
}

/// The exec events it saw.
class ExecRecorder final : public SandboxObserver {
public:
  void on_event(const SandboxEvent& event) override {
    if (const auto* e = std::get_if<ExecEvent>(&event)) events.push_back(*e);
  }
  std::vector<ExecEvent> events;
};

struct Got {
  std::string out, err;
};
OutputHandler into(Got& g) {
  return [&g](OutputStream s, std::string_view b) { (s == OutputStream::Stdout ? g.out : g.err).append(b); };
}

template <class E>
std::string message_of(BlockingRunner& run, ScriptedStream& sb, ExecStreamOptions o = {}) {
  Got g;
  try {
    run(sb.exec_stream("prog", into(g), o));
  } catch (const E& e) {
    return e.what();
  }
  FAIL("no exception of the expected type");
  return {};
}

}  // namespace

TEST_CASE("STR-9 exec_stream: bad input is a ValueError naming the value, and nothing runs") {
  auto sb = make();
  BlockingRunner run;
  Got g;
  const ExecStreamOptions no_time{.timeout = 0ms}, negative_silence{.read_timeout = -5ms};
  CHECK_THROWS_WITH(run(sb->exec_stream("x", into(g), no_time)), Catch::Contains("timeout must be positive, got 0 ms"));
  CHECK_THROWS_WITH(run(sb->exec_stream("x", into(g), negative_silence)),
                    Catch::Contains("read_timeout must be positive, got -5 ms"));
  CHECK_THROWS_AS(run(sb->exec_stream("x", OutputHandler{})), ValueError);
  CHECK(sb->seen.empty());
}

TEST_CASE("STR-9 C-35 exec_stream: a sandbox that does not declare exec_stream raises NotImplementedError naming it") {
  auto sb = make({Capability::Exec});
  BlockingRunner run;
  Got g;
  CHECK_THROWS_WITH(run(sb->exec_stream("x", into(g))), Catch::Contains("does not declare capability 'exec_stream'"));
  CHECK(sb->seen.empty());
}

TEST_CASE("STR-1 STR-7 STR-9 exec_stream: chunks reach the handler in order, apart; the result counts them, keeps the exit") {
  auto sb = make();
  sb->chunks = {{OutputStream::Stdout, "a"}, {OutputStream::Stderr, "E"}, {OutputStream::Stdout, ""},
                {OutputStream::Stdout, std::string("b\0c", 3)}};
  sb->outcome = StreamOutcome::exited(7, {ResourceBound::Memory});
  BlockingRunner run;
  Got g;
  const ExecStreamOptions options{.working_directory = "sub", .read_timeout = 1500ms};
  const StreamedExit e = run(sb->exec_stream("prog", into(g), options));
  CHECK(g.out == std::string("ab\0c", 4));
  CHECK(g.err == "E");
  CHECK(e == StreamedExit{7, {ResourceBound::Memory}, 4, 1});
  REQUIRE(sb->seen.size() == 1);
  CHECK(sb->seen[0].read_timeout == 1500ms);
  CHECK(sb->seen[0].working_directory == sb->storage_base() + "/sub");
}

TEST_CASE("STR-3 STR-4 STR-5 exec_stream: each reported ending is one error type, named, whatever the backend") {
  auto sb = make();
  BlockingRunner run;
  sb->outcome = StreamOutcome::ended(StreamOutcome::End::DeadlineExpired);
  const std::string deadline = message_of<TimeoutError>(run, *sb, {.timeout = 1234ms});
  CHECK_THAT(deadline, Catch::Contains("timeout of 1234 ms"));
  CHECK_THROWS_AS(run(sb->exec_stream("p", [](OutputStream, std::string_view) {})), TimeoutError);
  try {
    run(sb->exec_stream("p", [](OutputStream, std::string_view) {}));
  } catch (const SandboxStreamIdle&) {
    FAIL("the deadline was reported as silence");
  } catch (const TimeoutError&) {
  }

  sb->outcome = StreamOutcome::ended(StreamOutcome::End::ReadTimedOut);
  CHECK_THAT(message_of<SandboxStreamIdle>(run, *sb, {.read_timeout = 250ms}), Catch::Contains("read_timeout=250 ms"));

  sb->outcome = StreamOutcome::over_cap(OutputStream::Stderr, "max_stderr_bytes", 4096);
  CHECK_THAT(message_of<SandboxTransferCapExceeded>(run, *sb),
             Catch::Contains("max_stderr_bytes=4096") && Catch::Contains("to stderr"));
}

TEST_CASE("STR-6 exec_stream: a throwing handler stops delivery and its exception propagates, over the program's exit") {
  struct Mine : std::runtime_error {
    Mine() : std::runtime_error("mine") {}
  };
  auto sb = make();
  sb->chunks = {{OutputStream::Stdout, "1"}, {OutputStream::Stdout, "2"}, {OutputStream::Stdout, "3"}};
  BlockingRunner run;
  int calls = 0;
  OutputHandler h = [&calls](OutputStream, std::string_view) {
    if (++calls == 2) throw Mine();
  };
  CHECK_THROWS_AS(run(sb->exec_stream("p", h)), Mine);
  CHECK(calls == 2);
  CHECK(sb->delivered_before_stop == 1);  // the backend was told to stop at the throwing chunk

  // A backend that ignores the stop and reports the program's own exit still loses to it.
  class Deaf : public ScriptedStream {
  public:
    using ScriptedStream::ScriptedStream;

  protected:
    boost::asio::awaitable<StreamOutcome> do_exec_stream(const ExecRequest&, ExecOutputSink& sink) override {
      sink.deliver(OutputStream::Stdout, "x");
      CHECK_FALSE(sink.deliver(OutputStream::Stdout, "y"));
      co_return StreamOutcome::exited(0);
    }
  };
  auto deaf = std::make_shared<Deaf>(InProcessSandboxOptions{.capabilities = {Capability::Exec, Capability::ExecStream}});
  calls = 0;
  OutputHandler first_throws = [&calls](OutputStream, std::string_view) {
    ++calls;
    throw Mine();
  };
  CHECK_THROWS_AS(run(deaf->exec_stream("p", first_throws)), Mine);
  CHECK(calls == 1);
}

TEST_CASE("STR-2 exec_stream: a backend reporting Stopped with no handler failure is a RuntimeError, not success") {
  auto sb = make();
  sb->outcome = StreamOutcome::ended(StreamOutcome::End::Stopped);
  BlockingRunner run;
  CHECK_THROWS_AS(run(sb->exec_stream("p", [](OutputStream, std::string_view) {})), RuntimeError);
}

TEST_CASE("STR-8 OBS-5 exec_stream: observers see one exec event, streamed, with what reached the handler") {
  auto sb = make();
  sb->chunks = {{OutputStream::Stdout, "hello"}, {OutputStream::Stderr, "!!"}};
  sb->outcome = StreamOutcome::exited(3);
  auto recorder = std::make_shared<ExecRecorder>();
  sb->attach_observers(std::make_shared<const ObserverSet>(std::vector<std::shared_ptr<SandboxObserver>>{recorder}),
                       SandboxKey{"s", "t", "a", ""});
  BlockingRunner run;
  run(sb->exec_stream("prog", [](OutputStream, std::string_view) {}));
  sb->outcome = StreamOutcome::ended(StreamOutcome::End::ReadTimedOut);
  CHECK_THROWS_AS(run(sb->exec_stream("prog", [](OutputStream, std::string_view) {})), SandboxStreamIdle);
  const auto& execs = recorder->events;
  REQUIRE(execs.size() == 2);
  CHECK(execs[0].streamed);
  CHECK(execs[0].exit_code == 3);
  CHECK(execs[0].stdout_bytes == 5);
  CHECK(execs[0].stderr_bytes == 2);
  CHECK(execs[0].error_type.empty());
  CHECK(execs[1].streamed);
  CHECK(execs[1].error_type == "SandboxStreamIdle");
  CHECK(execs[1].timed_out);
  CHECK_FALSE(execs[1].exit_code.has_value());
}
