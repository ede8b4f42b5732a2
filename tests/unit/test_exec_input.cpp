// A command's own environment and stdin as the NVI checks them, once, for every backend
// (docs/exec-input.md ENV-1…ENV-6, STDIN-1, STDIN-2) — on the in-process double, whose exec
// hook records what reached it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "maf/sandbox/background.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/stdin_stream.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;
using namespace std::chrono_literals;

namespace {

class Recording : public InProcessSandbox {
public:
  using InProcessSandbox::InProcessSandbox;
  std::vector<ExecRequest> seen;

protected:
  boost::asio::awaitable<ExecReport> do_exec(const ExecRequest& request) override {
    seen.push_back(request);
    co_return ExecResult{"out", "", 0, {}};
  }
  boost::asio::awaitable<StreamOutcome> do_exec_stream(const ExecRequest& request, ExecOutputSink&) override {
    seen.push_back(request);
    co_return StreamOutcome::exited(0);
  }
};

constexpr CapabilitySet kAll{Capability::Exec, Capability::ExecStream, Capability::ExecEnv, Capability::ExecStdin};

std::shared_ptr<Recording> make(CapabilitySet caps = kAll) {
  return std::make_shared<Recording>(InProcessSandboxOptions{.capabilities = caps});
}

class ExecRecorder final : public SandboxObserver {
public:
  void on_event(const SandboxEvent& event) override {
    if (const auto* e = std::get_if<ExecEvent>(&event)) events.push_back(*e);
  }
  std::vector<ExecEvent> events;
};

template <class E>
std::string refusal(BlockingRunner& run, Recording& sb, ExecInput input) {
  try {
    run(sb.exec(Command({"true"}), input));
  } catch (const E& e) {
    return e.what();
  }
  FAIL("no exception of the expected type");
  return {};
}

}  // namespace

TEST_CASE("ENV-1 STDIN-1: the environment and stdin reach the hook as given; none given changes nothing") {
  auto sb = make();
  BlockingRunner run;
  const ExecInput input{.environment = {{"A", "1"}, {"B_2", "x y"}}, .stdin_bytes = "in"};  // named (AGENT-1)
  run(sb->exec(Command({"env"}), input));
  run(sb->exec(Command({"env"})));
  ExecStreamOptions o;
  o.input.environment = {{"S", "v"}};
  o.input.stdin_bytes = std::string("\0bytes", 6);
  run(sb->exec_stream(Command({"env"}), [](OutputStream, std::string_view) {}, o));
  REQUIRE(sb->seen.size() == 3);
  CHECK(sb->seen[0].environment == std::map<std::string, std::string>{{"A", "1"}, {"B_2", "x y"}});
  CHECK(sb->seen[0].stdin_bytes == std::optional<std::string>("in"));
  CHECK(sb->seen[0].shell_line == "env");  // never on the command line
  CHECK(sb->seen[1].environment.empty());
  CHECK_FALSE(sb->seen[1].stdin_bytes.has_value());  // closed, not empty
  CHECK(sb->seen[2].environment.at("S") == "v");
  CHECK(sb->seen[2].stdin_bytes == std::optional<std::string>(std::string("\0bytes", 6)));
}

TEST_CASE("ENV-1 STDIN-1: without exec_env / exec_stdin the call is refused naming the capability; plain exec still runs") {
  auto sb = make({Capability::Exec, Capability::ExecStream});
  BlockingRunner run;
  const ExecInput env{.environment = {{"A", "1"}}}, stdin_only{.stdin_bytes = "x"}, none{};
  CHECK_THROWS_WITH(run(sb->exec(Command({"true"}), env)),
                    Catch::Contains("does not declare capability 'exec_env'"));
  CHECK_THROWS_WITH(run(sb->exec(Command({"true"}), stdin_only)),
                    Catch::Contains("does not declare capability 'exec_stdin'"));
  ExecStreamOptions o;
  o.input.environment = {{"A", "1"}};
  CHECK_THROWS_AS(run(sb->exec_stream(Command({"true"}), [](OutputStream, std::string_view) {}, o)),
                  NotImplementedError);
  CHECK(sb->seen.empty());
  CHECK(run(sb->exec(Command({"true"}), none)).exit_code == 0);  // an empty input needs nothing
  CHECK(parse_capability("exec_env") == Capability::ExecEnv);
  CHECK(parse_capability("exec_stdin") == Capability::ExecStdin);
  CHECK(parse_capability("exec_stdin_stream") == Capability::ExecStdinStream);
}

TEST_CASE("ENV-2 ENV-3: hostile names and values are SandboxEnvironmentRefused naming the variable, never its value") {
  auto sb = make();
  BlockingRunner run;
  CHECK_THAT(refusal<SandboxEnvironmentRefused>(run, *sb, {.environment = {{"A=B", "x"}}}), Catch::Contains("'A=B'"));
  CHECK_THAT(refusal<SandboxEnvironmentRefused>(run, *sb, {.environment = {{"", "x"}}}), Catch::Contains("''"));
  CHECK_THAT(refusal<SandboxEnvironmentRefused>(run, *sb, {.environment = {{"9LIVES", "x"}}}),
             Catch::Contains("'9LIVES'"));
  CHECK_THAT(refusal<SandboxEnvironmentRefused>(run, *sb, {.environment = {{std::string("A\0\n", 3), "x"}}}),
             Catch::Contains("'A\\x00\\x0a'"));
  const std::string secret = "hunter2-secret";
  const auto nul = refusal<SandboxEnvironmentRefused>(run, *sb, {.environment = {{"TOKEN", secret + '\0' + "x"}}});
  CHECK_THAT(nul, Catch::Contains("'TOKEN'") && Catch::Contains("NUL"));
  CHECK(nul.find(secret) == std::string::npos);
  const auto big = refusal<SandboxEnvironmentRefused>(
      run, *sb, {.environment = {{"BIG", secret + std::string(kMaxExecEnvValueBytes, 'x')}}});
  CHECK_THAT(big, Catch::Contains("'BIG'") && Catch::Contains("32768"));
  CHECK(big.find(secret) == std::string::npos);
  ExecInput many;
  for (std::size_t i = 0; i <= kMaxExecEnvVariables; ++i) many.environment.emplace("V" + std::to_string(i), "");
  CHECK_THAT(refusal<SandboxEnvironmentRefused>(run, *sb, many), Catch::Contains("257 variables"));
  ExecInput huge;
  for (int i = 0; i < 9; ++i) huge.environment.emplace("H" + std::to_string(i), std::string(kMaxExecEnvValueBytes, 'y'));
  CHECK_THAT(refusal<SandboxEnvironmentRefused>(run, *sb, huge), Catch::Contains("more than the 262144"));
  CHECK_THAT(refusal<ValueError>(run, *sb, {.environment = {{"A", "1"}}, .public_names = {"B"}}),
             Catch::Contains("public_names names 'B'"));
  // A refused input is a ValueError too (the family a host already catches for bad input).
  const ExecInput bad_name{.environment = {{"A B", ""}}};
  CHECK_THROWS_AS(run(sb->exec(Command({"true"}), bad_name)), ValueError);
  CHECK(sb->seen.empty());  // nothing ran
  // At the bounds exactly: served.
  ExecInput edge;
  edge.environment.emplace(std::string(kMaxExecEnvNameBytes, 'N'), std::string(kMaxExecEnvValueBytes, 'v'));
  CHECK(run(sb->exec(Command({"true"}), edge)).exit_code == 0);
}

TEST_CASE("STDIN-2: stdin past kMaxExecStdinBytes is SandboxTransferCapExceeded before anything runs; at the cap it runs") {
  auto sb = make();
  BlockingRunner run;
  CHECK_THAT(refusal<SandboxTransferCapExceeded>(run, *sb, {.stdin_bytes = std::string(kMaxExecStdinBytes + 1, 'x')}),
             Catch::Contains("max_stdin_bytes=16777216"));
  CHECK(sb->seen.empty());
  const ExecInput at_cap{.stdin_bytes = std::string(kMaxExecStdinBytes, 'x')};
  CHECK(run(sb->exec(Command({"cat"}), at_cap)).exit_code == 0);
}

TEST_CASE("ENV-5: events carry the names and the public values only; the JSON log line never holds a secret") {
  auto sb = make();
  auto recorder = std::make_shared<ExecRecorder>();
  sb->attach_observers(std::make_shared<const ObserverSet>(std::vector<std::shared_ptr<SandboxObserver>>{recorder}),
                       SandboxKey{"s", "t", "a", ""});
  BlockingRunner run;
  const std::string secret = "s3cr3t-value-48";
  const ExecInput input{.environment = {{"TOKEN", secret}, {"LANG", "C.UTF-8"}},
                        .public_names = {"LANG"},
                        .stdin_bytes = "12345"};
  run(sb->exec(Command({"env"}), input));
  ExecStreamOptions o;
  o.input.environment = {{"TOKEN", secret}};
  run(sb->exec_stream(Command({"env"}), [](OutputStream, std::string_view) {}, o));
  REQUIRE(recorder->events.size() == 2);
  const auto& e = recorder->events[0];
  CHECK(e.env_names == std::vector<std::string>{"LANG", "TOKEN"});
  CHECK(e.env_public == std::map<std::string, std::string>{{"LANG", "C.UTF-8"}});
  CHECK(e.stdin_bytes == 5);
  CHECK(recorder->events[1].env_names == std::vector<std::string>{"TOKEN"});
  CHECK(recorder->events[1].env_public.empty());
  for (const auto& ev : recorder->events) {
    const std::string line = event_to_json(SandboxEvent{ev});
    CHECK(line.find(secret) == std::string::npos);
    CHECK(line.find("TOKEN") != std::string::npos);
  }
  CHECK(event_to_json(SandboxEvent{e}).find("C.UTF-8") != std::string::npos);
}

TEST_CASE("ENV-6: a background program's environment needs exec_env, and its stdin stays closed") {
  auto sb = make({Capability::Exec, Capability::Background});
  BlockingRunner run;
  BackgroundOptions with_env;
  with_env.input.environment = {{"A", "1"}};
  CHECK_THROWS_WITH(run(start_background(sb, Command("sleep 1"), with_env)),
                    Catch::Contains("does not declare capability 'exec_env'"));
  BackgroundOptions with_stdin;
  with_stdin.input.stdin_bytes = "x";
  CHECK_THROWS_WITH(run(start_background(sb, Command("sleep 1"), with_stdin)),
                    Catch::Contains("stdin stays closed"));
  CHECK(sb->seen.empty());
}

TEST_CASE("STDIN-6 STDIN-8: a stdin_stream needs exec_stdin_stream, excludes stdin_bytes, and is closed when the "
          "exec ends unserved") {
  BlockingRunner run;
  const OutputHandler ignore = [](OutputStream, std::string_view) {};
  {
    auto sb = make();  // no ExecStdinStream declared
    ExecStreamOptions o;
    o.stdin_stream = StdinStream::create();
    CHECK_THROWS_WITH(run(sb->exec_stream(Command({"true"}), ignore, o)),
                      Catch::Contains("does not declare capability 'exec_stdin_stream'"));
    CHECK(sb->seen.empty());
    // Refused before any program: the stream was closed, so a writer is not left waiting.
    CHECK_THROWS_AS(run(o.stdin_stream->write("x")), SandboxStdinClosed);
  }
  CapabilitySet with_stream = kAll;
  with_stream.insert(Capability::ExecStdinStream);
  auto sb = make(with_stream);
  ExecStreamOptions both;
  both.stdin_stream = StdinStream::create();
  both.input.stdin_bytes = "x";
  CHECK_THROWS_AS(run(sb->exec_stream(Command({"true"}), ignore, both)), ValueError);
  ExecStreamOptions o;
  o.stdin_stream = StdinStream::create();
  CHECK(run(sb->exec_stream(Command({"true"}), ignore, o)).exit_code == 0);
  REQUIRE(sb->seen.size() == 1);
  CHECK(sb->seen[0].stdin_stream == o.stdin_stream);
  // The double took nothing: the core's finish closed the read end, and the stream served once.
  CHECK_THROWS_AS(run(o.stdin_stream->write("x")), SandboxStdinClosed);
  CHECK_THROWS_AS(o.stdin_stream->take_read_end(), ValueError);
}

TEST_CASE("STDIN-7: a stream's write past one write's cap or past its total is refused before a byte is taken") {
  BlockingRunner run;
  auto in = StdinStream::create(10);
  CHECK_THROWS_AS(StdinStream::create(0), ValueError);
  CHECK_THROWS_AS(run(in->write(std::string(kMaxExecStdinBytes + 1, 'x'))), SandboxTransferCapExceeded);
  run(in->write("12345"));
  CHECK_THROWS_WITH(run(in->write("123456")), Catch::Contains("max_total_bytes=10"));
  CHECK(in->written() == 5);
  const int fd = in->take_read_end();
  char got[8] = {};
  CHECK(::read(fd, got, sizeof got) == 5);
  CHECK(std::string(got, 5) == "12345");
  in->close();
  CHECK(::read(fd, got, sizeof got) == 0);  // end of file once closed (STDIN-6)
  ::close(fd);
  CHECK_THROWS_AS(run(in->write("x")), SandboxStdinClosed);
}
