// EXEC_STDIN (docs/conformance.md "EXEC_STDIN"; docs/exec-input.md STDIN-1…STDIN-5): one-shot
// stdin, attacked through the public surface. What a backend must show before it may declare
// EXEC_STDIN: a shell reads its program from stdin (SI-1); bytes pass a filter exactly, also
// more than a pipe holds (SI-2); without stdin a reader sees end of file at once, never a
// terminal and never the host's stdin (SI-3); stdin past the cap is refused before anything
// runs (SI-4); and a program that never reads its stdin is not failed for it (SI-5).
// Streamed stdin (EXEC_STDIN_STREAM, STDIN-6…STDIN-10): a held-open program answers each line
// before the next is written (SI-6), bytes streamed in pieces pass exactly and the stream's
// cap refuses before writing (SI-7), and a stream outlives neither its program nor an abort
// (SI-8).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <memory>

#include "maf/sandbox/stdin_stream.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

constexpr CapabilitySet kStdin{Capability::ExecStdin};

void a_shell_reads_its_program(ProbeContext& c) {
  // Three lines, the last without a newline: each must be run, in order, and nothing else.
  const auto r = exec_with(c, Command({"sh", "-s"}),
                           ExecInput{.stdin_bytes = "x=from-stdin\nprintf '%s|' \"$x\"\nprintf 'last line'"});
  if (r.exit_code != 0 || r.stdout_text() != "from-stdin|last line")
    fail("`sh -s` did not run the program it read from stdin: " + describe(r));
}

void bytes_pass_a_filter_exactly(ProbeContext& c) {
  const std::string payload = fidelity_payload();
  const auto r = exec_with(c, Command({"cat"}), ExecInput{.stdin_bytes = payload});
  if (r.exit_code != 0 || r.stdout_bytes != payload) fail("`cat` did not return its stdin byte for byte: " + describe(r));
  // More than any pipe or socket buffer holds: the input must be written while the output is
  // read, or both sides wait on each other until the deadline.
  std::string large(2 * 1024 * 1024, '\0');
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>((i * 131) % 251);
  const auto big = exec_with(c, Command({"cat"}), ExecInput{.stdin_bytes = large});
  if (big.exit_code != 0 || big.stdout_bytes != large)
    fail("2 MiB through `cat` came back as " + std::to_string(big.stdout_bytes.size()) + " bytes" +
         (big.stdout_bytes == large.substr(0, big.stdout_bytes.size()) ? "" : ", changed") + " (exit " +
         std::to_string(big.exit_code) + ")");
}

void closed_by_default(ProbeContext& c) {
  // `cat` on an open, silent stdin waits until the deadline: it must see end of file at once.
  const auto r = exec(c, Command({"sh", "-c", "if [ -t 0 ]; then echo tty; fi; cat; echo eof"}));
  if (r.exit_code != 0 || r.stdout_text() != "eof\n")
    fail("without stdin, a reader must see end of file at once (no terminal): " + describe(r));
  const auto empty = exec_with(c, Command({"sh", "-c", "cat; echo eof"}), ExecInput{.stdin_bytes = std::string()});
  if (empty.exit_code != 0 || empty.stdout_text() != "eof\n")
    fail("empty stdin must read as end of file: " + describe(empty));
}

void past_the_cap_refused(ProbeContext& c) {
  const std::string marker = c.paths.in_work("si4-ran");
  expect_refusal<SandboxTransferCapExceeded>(
      "stdin of kMaxExecStdinBytes + 1 bytes", "SandboxTransferCapExceeded", [&] {
        exec_with(c, Command({"touch", marker}), ExecInput{.stdin_bytes = std::string(kMaxExecStdinBytes + 1, 'x')});
      });
  if (present(c, marker)) fail("a command whose stdin was refused ran anyway (it made " + marker + ")");
}

void a_program_that_never_reads(ProbeContext& c) {
  const auto r = exec_with(c, Command({"sh", "-c", "echo done"}), ExecInput{.stdin_bytes = std::string(4 << 20, 'z')});
  if (r.exit_code != 0 || r.stdout_text() != "done\n")
    fail("a program that ignores 4 MiB of stdin must end as it would without it: " + describe(r));
}

constexpr CapabilitySet kStdinStream{Capability::ExecStdinStream};
using std::chrono::milliseconds;
using std::chrono::seconds;

/// One streamed exec running beside the probe's own coroutine: what it printed and how it ended.
struct Running {
  std::string out, err;
  bool ended = false;
  StreamedExit exit{};
  std::exception_ptr failure;
};

/// Start `argv` with `in` as its stdin; the exec goes on while the caller writes.
boost::asio::awaitable<std::shared_ptr<Running>> start(ProbeContext& c, std::vector<std::string> argv,
                                                       std::shared_ptr<StdinStream> in) {
  auto running = std::make_shared<Running>();
  Sandbox& sb = c.subject.sandbox();
  const std::string wd = c.paths.work;
  const auto executor = co_await boost::asio::this_coro::executor;
  boost::asio::co_spawn(
      executor,
      [&sb, running, wd, argv = std::move(argv), in]() -> boost::asio::awaitable<void> {
        try {
          ExecStreamOptions o{wd, seconds(60), seconds(45)};
          o.stdin_stream = in;
          OutputHandler h = [running](OutputStream s, std::string_view bytes) {
            (s == OutputStream::Stdout ? running->out : running->err).append(bytes);
          };
          const Command command(argv);
          running->exit = co_await sb.exec_stream(command, h, o);
        } catch (...) {
          running->failure = std::current_exception();
        }
        running->ended = true;
      },
      boost::asio::detached);
  co_return running;
}

/// Until `done()` or about 20 s: a bound on a hang, not a measure of speed.
boost::asio::awaitable<bool> until(std::function<bool()> done) {
  for (int i = 0; i < 4000; ++i) {
    if (done()) co_return true;
    co_await support::sleep_for(milliseconds(5));
  }
  co_return done();
}

void a_held_open_program_answers_each_line(ProbeContext& c) {
  // Each answer is awaited before the next line is written: a backend that holds the stream
  // back until close (or until exit) never lets the first answer arrive.
  std::string problem;
  std::shared_ptr<Running> r;
  c.subject.runner()([&]() -> boost::asio::awaitable<void> {
    auto in = StdinStream::create();
    const std::vector<std::string> argv{"sh", "-c", "while read -r l; do echo \"got:$l\"; done; echo bye"};
    r = co_await start(c, argv, in);
    const std::vector<std::string> lines{"one", "two", "three"};
    for (const std::string& line : lines) {
      const std::string sent = line + "\n";
      co_await in->write(sent);
      const std::string want = "got:" + line + "\n";
      const std::function<bool()> answered = [&] { return r->out.find(want) != std::string::npos || r->ended; };
      if (!co_await until(answered)) {
        problem = "no answer to `" + line + "` while stdin stayed open (stdout so far " + quoted(r->out) + ")";
        in->abort();
        break;
      }
    }
    in->close();
    const std::function<bool()> ended = [&] { return r->ended; };
    co_await until(ended);
  });
  if (!problem.empty()) fail(problem);
  if (!r->ended) fail("the program did not end after its stdin was closed");
  if (r->failure) std::rethrow_exception(r->failure);
  if (r->out != "got:one\ngot:two\ngot:three\nbye\n" || r->exit.exit_code != 0)
    fail("a held-open `read` loop printed " + quoted(r->out) + " and exited " + std::to_string(r->exit.exit_code));
}

void streamed_bytes_pass_exactly_and_the_cap_holds(ProbeContext& c) {
  std::string large(2 * 1024 * 1024 + 17, '\0');
  for (std::size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>((i * 131) % 251);
  std::shared_ptr<Running> r;
  std::string cap_problem;
  c.subject.runner()([&]() -> boost::asio::awaitable<void> {
    auto in = StdinStream::create();
    const std::vector<std::string> argv{"cat"};
    r = co_await start(c, argv, in);
    for (std::size_t at = 0; at < large.size(); at += 65'521) {
      const std::string piece = large.substr(at, 65'521);
      co_await in->write(piece);
    }
    in->close();
    const std::function<bool()> ended = [&] { return r->ended; };
    co_await until(ended);
    // The stream's own cap: refused before a byte of the write is taken.
    auto small = StdinStream::create(8);
    bool refused = false;
    try {
      const std::string nine = "123456789";
      co_await small->write(nine);
    } catch (const SandboxTransferCapExceeded&) {
      refused = true;
    }
    if (!refused || small->written() != 0)
      cap_problem = "9 bytes into a stream of max_total_bytes=8 were not refused before writing";
  });
  if (!r->ended) fail("`cat` did not end after its streamed stdin was closed");
  if (r->failure) std::rethrow_exception(r->failure);
  if (r->out != large)
    fail("2 MiB streamed through `cat` in pieces came back as " + std::to_string(r->out.size()) + " bytes" +
         (r->out == large.substr(0, r->out.size()) ? "" : ", changed"));
  if (!cap_problem.empty()) fail(cap_problem);
}

void a_stream_outlives_neither_program_nor_abort(ProbeContext& c) {
  std::string problem;
  c.subject.runner()([&]() -> boost::asio::awaitable<void> {
    // `head -c 1` takes one byte and ends: the next write must fail, not wait forever.
    auto in = StdinStream::create();
    const std::vector<std::string> head{"head", "-c", "1"};
    auto r = co_await start(c, head, in);
    const std::string x = "x";
    co_await in->write(x);
    const std::function<bool()> ended = [&] { return r->ended; };
    co_await until(ended);
    bool closed = false;
    try {
      const std::string piece(64 * 1024, 'y');
      for (int i = 0; i < 64 && !closed; ++i) co_await in->write(piece);
    } catch (const SandboxStdinClosed&) {
      closed = true;
    }
    if (!r->ended || r->out != "x") problem = "`head -c 1` did not end with `x` (stdout " + quoted(r->out) + ")";
    else if (!closed) problem = "writes after the program ended were taken (4 MiB), not SandboxStdinClosed";
    if (!problem.empty()) {
      in->abort();  // a program that escaped the stream's end is not left to its deadline
      co_return;
    }
    // A program that never reads and never ends: abort stops it, and exec_stream says Cancelled.
    auto held = StdinStream::create();
    const std::vector<std::string> sleeper{"sleep", "600"};
    auto s = co_await start(c, sleeper, held);
    co_await support::sleep_for(milliseconds(200));
    held->abort();
    const std::function<bool()> stopped = [&] { return s->ended; };
    if (!co_await until(stopped)) problem = "an aborted stream did not end `sleep 600`";
    else {
      try {
        if (s->failure) std::rethrow_exception(s->failure);
        problem = "exec_stream returned after an abort instead of raising Cancelled";
      } catch (const Cancelled&) {
      } catch (const std::exception& e) {
        problem = "an abort raised " + type_name(e) + " (" + e.what() + "), not Cancelled";
      }
    }
  });
  if (!problem.empty()) fail(problem);
}

constexpr std::array<Probe, 8> kProbes{{
    {Suite::ExecStdin, "SI-1", "a-shell-reads-its-program",
     "`python -` and `sh -s` take their program on stdin: the agent's way to run code without a file", kStdin,
     a_shell_reads_its_program},
    {Suite::ExecStdin, "SI-2", "bytes-pass-a-filter-exactly",
     "a filter's input changed, cut, or deadlocked against its output is wrong data or a hang", kStdin,
     bytes_pass_a_filter_exactly},
    {Suite::ExecStdin, "SI-3", "closed-by-default",
     "a program left waiting on an open stdin hangs until its deadline: the commonest agent bug in the field",
     kStdin, closed_by_default},
    {Suite::ExecStdin, "SI-4", "past-the-cap-refused",
     "stdin is a transfer into the sandbox: unbounded, it is memory the host spends on the guest's behalf", kStdin,
     past_the_cap_refused},
    {Suite::ExecStdin, "SI-5", "a-program-that-never-reads",
     "input the program did not want (a closed pipe) is not the program's failure", kStdin,
     a_program_that_never_reads},
    {Suite::ExecStdin, "SI-6", "a-held-open-program-answers-each-line",
     "a REPL or a context held open between questions: stdin held back until close is a deadlock", kStdinStream,
     a_held_open_program_answers_each_line},
    {Suite::ExecStdin, "SI-7", "streamed-bytes-pass-exactly-and-the-cap-holds",
     "pieces written while output is read must arrive whole and in order; the stream is a bounded transfer",
     kStdinStream, streamed_bytes_pass_exactly_and_the_cap_holds},
    {Suite::ExecStdin, "SI-8", "a-stream-outlives-neither-program-nor-abort",
     "a writer blocked on a program that is gone, or a program the host cannot end, wedges the agent",
     kStdinStream, a_stream_outlives_neither_program_nor_abort},
}};

}  // namespace

std::span<const Probe> exec_stdin_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
