// STREAM (docs/conformance.md "STREAM", docs/streaming.md): Sandbox::exec_stream attacked
// through the public surface. What a backend must show before it may declare EXEC_STREAM:
// output reaches the caller while the program still runs (ST-1 — proven by causality: the
// program waits for something the caller does only after it got the first chunk), a silent
// program ends at its read timeout and not at its deadline, and is gone (ST-2), the deadline
// is not the read timeout (ST-3), a handler that throws ends the program (ST-4), the bytes
// are exact and the streams apart (ST-5), the output cap still ends a program (ST-6), and a
// caller's stop ends a silent program's whole group, leaving the sandbox usable (ST-7).

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <stop_token>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include "maf/sandbox/support/sleep.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// The gate alone (R7): a backend streams only what it can exec.
constexpr CapabilitySet kStream{Capability::ExecStream};

/// What one streamed run delivered, chunk by chunk.
struct Received {
  std::string out, err;
  std::size_t chunks = 0;
};

OutputHandler recording(Received& r) {
  return [&r](OutputStream s, std::string_view bytes) {
    (s == OutputStream::Stdout ? r.out : r.err).append(bytes);
    ++r.chunks;
  };
}

StreamedExit stream(ProbeContext& c, const std::string& shell, OutputHandler handler, milliseconds timeout,
                    milliseconds read_timeout) {
  Sandbox& sb = c.subject.sandbox();
  ExecStreamOptions o{c.paths.work, timeout, read_timeout};
  return c.subject.runner()([&] { return sb.exec_stream(Command(shell), handler, o); });
}

/// A command line unique to this probe run, so the host-side scan finds only its process
/// (and not one an earlier, failed run left behind). `sleep 283.<pid><n>` — a valid number.
std::string sleeper() {
  static std::atomic<unsigned> runs{0};
  return "sleep 283." + process_tag() + std::to_string(++runs);
}

void chunks_arrive_before_the_program_exits(ProbeContext& c) {
  // The program prints `first`, then waits up to 15 s for a marker that the caller makes only
  // after it received `first`. Output held back until exit never lets the marker be made,
  // and the program says so (STR-1). No clock is read: the order of events is the proof.
  const std::string marker = c.paths.in_work(".st1-marker");
  const std::string script = "rm -f '" + marker + "'; printf first; i=0; while [ $i -lt 150 ]; do "
                             "[ -e '" + marker + "' ] && { printf saw-marker; exit 0; }; sleep 0.1; "
                             "i=$((i+1)); done; printf no-marker; exit 3";
  Sandbox& sb = c.subject.sandbox();
  Received got;
  struct Shared {
    bool spawned = false, made = false;
    std::string problem;
  };
  auto shared = std::make_shared<Shared>();
  StreamedExit exit;
  c.subject.runner()([&]() -> boost::asio::awaitable<void> {
    const auto executor = co_await boost::asio::this_coro::executor;
    OutputHandler handler = [&, executor](OutputStream s, std::string_view bytes) {
      recording(got)(s, bytes);
      if (shared->spawned || got.out.find("first") == std::string::npos) return;
      shared->spawned = true;
      // The marker is made by a second exec in the same sandbox, started from inside the
      // handler: only a chunk delivered before exit can start it.
      boost::asio::co_spawn(
          executor,
          [&sb, shared, marker]() -> boost::asio::awaitable<void> {
            try {
              const Command touch(std::vector<std::string>{"touch", marker});
              const ExecResult r = co_await sb.exec(touch, ".", seconds(30));
              if (r.exit_code != 0) shared->problem = "touch of the marker exited " + std::to_string(r.exit_code);
            } catch (const std::exception& e) {
              shared->problem = std::string("touch of the marker raised: ") + e.what();
            }
            shared->made = true;
          },
          boost::asio::detached);
    };
    ExecStreamOptions o{c.paths.work, seconds(60), seconds(45)};
    exit = co_await sb.exec_stream(Command(script), handler, o);
    for (int i = 0; i < 300 && shared->spawned && !shared->made; ++i) co_await support::sleep_for(milliseconds(100));
  });
  if (!shared->problem.empty()) fail(shared->problem);
  if (!shared->spawned)
    fail("`first` never reached the handler (stdout " + quoted(got.out) + ", stderr " + quoted(got.err) + ")");
  if (got.out != "firstsaw-marker" || exit.exit_code != 0)
    fail("the program never saw the marker the caller made on receiving `first`, so `first` arrived only at exit: "
         "stdout " + quoted(got.out) + ", exit " + std::to_string(exit.exit_code));
  if (exit.stdout_bytes != got.out.size())
    fail("StreamedExit counts " + std::to_string(exit.stdout_bytes) + " stdout bytes, the handler got " +
         std::to_string(got.out.size()));
}

/// Run `shell` expecting exactly `Expected` (and not `Unwanted`); what else came is the failure.
template <class Expected, class Unwanted>
void expect_ending(ProbeContext& c, const std::string& shell, OutputHandler handler, milliseconds timeout,
                   milliseconds read_timeout, const char* expected, const char* unwanted) {
  try {
    const StreamedExit e = stream(c, shell, std::move(handler), timeout, read_timeout);
    fail("the program returned (exit " + std::to_string(e.exit_code) + ") instead of raising " + expected);
  } catch (const Unwanted& e) {
    fail(std::string("raised ") + unwanted + " (" + e.what() + "), not " + expected);
  } catch (const Expected&) {
  } catch (const ProbeFailed&) {
    throw;
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    fail("raised " + type_name(e) + " (" + e.what() + "), not " + expected);
  }
}

/// `inner`, after the first chunk has waited until `sighting` saw its marker: the program
/// printed that chunk after it started the marked process, so it is seen now or never (a
/// skip, ProcessSighting) — however soon the stop comes after.
OutputHandler sighted(ProcessSighting& sighting, OutputHandler inner) {
  return [&sighting, inner = std::move(inner), first = true](OutputStream s, std::string_view bytes) mutable {
    if (std::exchange(first, false)) sighting.await_seen();
    inner(s, bytes);
  };
}

/// Never raised: for endings where no other error is specifically wrong.
struct Nothing : std::exception {};

void silence_ends_at_the_read_timeout(ProbeContext& c) {
  const std::string marker = sleeper();
  ProcessSighting sighting(marker);
  Received got;
  // The sleeper starts before `started` is printed, so the first chunk finds it running.
  expect_ending<SandboxStreamIdle, Nothing>(c, marker + " & printf started; wait; printf late",
                                            sighted(sighting, recording(got)), seconds(60), seconds(1),
                                            "SandboxStreamIdle", "");
  if (got.out != "started") fail("the handler got " + quoted(got.out) + ", not 'started'");
  sighting.expect_gone("the silent program's sleeper, after the read timeout ended it");
}

void the_deadline_is_not_the_read_timeout(ProbeContext& c) {
  const std::string marker = sleeper();
  ProcessSighting sighting(marker);
  // Prints every 0.2 s, so the 30 s read timeout never fires; the 2 s deadline must.
  Received got;
  expect_ending<TimeoutError, SandboxStreamIdle>(
      c, "(" + marker + " &); while :; do printf tick; sleep 0.2; done", sighted(sighting, recording(got)), seconds(2),
      seconds(30), "TimeoutError (the deadline)", "SandboxStreamIdle");
  if (got.out.find("tick") == std::string::npos) fail("no tick reached the handler before the deadline");
  sighting.expect_gone("started by the program, after its deadline");
}

struct HandlerRefused : std::runtime_error {
  HandlerRefused() : std::runtime_error("the handler refuses this chunk") {}
};

void a_throwing_handler_ends_the_program(ProbeContext& c) {
  const std::string marker = sleeper();
  ProcessSighting sighting(marker);
  std::size_t calls = 0;
  OutputHandler thrower = [&calls](OutputStream, std::string_view) {
    ++calls;
    throw HandlerRefused();
  };
  // Both sleepers start before `first`, so the handler's throw comes after they are seen.
  expect_ending<HandlerRefused, Nothing>(c, "(" + marker + " &); " + marker + " & printf first; wait; printf second",
                                         sighted(sighting, thrower), seconds(15), seconds(10),
                                         "the handler's own exception", "");
  if (calls != 1) fail("the handler was called " + std::to_string(calls) + " times after it threw on the first");
  sighting.expect_gone("the program and its background copy, after the handler threw");
  const ExecResult after = exec(c, Command("echo after"));
  if (after.stdout_bytes != "after\n") fail("the sandbox did not answer after the handler threw: " + describe(after));
}

void stream_bytes_are_exact_and_apart(ProbeContext& c) {
  const auto p = fidelity_payload();
  const std::string out = "OUT:" + p;
  const std::string err = "ERR:" + std::string(p.rbegin(), p.rend());
  Received got;
  const StreamedExit e = stream(c, "printf '" + printf_octal(out) + "'; printf '" + printf_octal(err) + "' >&2; exit 7",
                                recording(got), seconds(60), seconds(45));
  std::vector<std::string> problems;
  if (e.exit_code != 7) problems.push_back("exit " + std::to_string(e.exit_code) + ", not 7");
  if (got.out != out)
    problems.push_back("stdout differs (" + std::to_string(got.out.size()) + " bytes, " +
                       std::to_string(out.size()) + " expected)");
  if (got.err != err)
    problems.push_back("stderr differs (" + std::to_string(got.err.size()) + " bytes, " +
                       std::to_string(err.size()) + " expected)");
  if (e.stdout_bytes != got.out.size() || e.stderr_bytes != got.err.size())
    problems.push_back("StreamedExit counts differ from what the handler got");
  if (!problems.empty()) fail(join(problems));
}

void the_output_cap_still_ends_the_program(ProbeContext& c) {
  // 256 MiB is past every backend's default cap (16 MiB); nothing keeps it but the handler's
  // count. The program would sleep after it, so "gone" is checkable.
  // The sleeper starts before the flood (one after it would never run: the cap ends the
  // program first), so "gone" is checkable.
  const std::string marker = sleeper();
  ProcessSighting sighting(marker);
  std::uint64_t delivered = 0;
  OutputHandler counting = [&delivered](OutputStream, std::string_view bytes) { delivered += bytes.size(); };
  expect_ending<SandboxTransferCapExceeded, Nothing>(c, "(" + marker + " &); head -c 268435456 /dev/zero; " + marker,
                                                     sighted(sighting, counting), seconds(60), seconds(10),
                                                     "SandboxTransferCapExceeded", "");
  if (delivered >= (std::uint64_t{256} << 20)) fail("all of 256 MiB was delivered: no cap applied");
  sighting.expect_gone("started by the program, after the cap ended it");
}

void a_stop_ends_the_program(ProbeContext& c) {
  // STR-10. A stop already requested runs nothing; a stop requested while the program sits
  // silent in `wait` (posted from the first chunk's handler, so it arrives outside the read
  // loop) ends the program and the sleeper it started, raises Cancelled, and the sandbox
  // answers the next exec. The 20 s deadline only bounds a backend that ignores the stop.
  Sandbox& sb = c.subject.sandbox();
  const std::string touched = c.paths.in_work(".st7-touched");
  std::string early;
  c.subject.runner()([&]() -> boost::asio::awaitable<void> {
    std::stop_source stopped;
    stopped.request_stop();
    ExecStreamOptions o{c.paths.work, seconds(30), seconds(30)};
    o.stop = stopped.get_token();
    const OutputHandler ignore = [](OutputStream, std::string_view) {};
    try {
      co_await sb.exec_stream(Command("touch '" + touched + "'"), ignore, o);
      early = "returned";
    } catch (const Cancelled&) {
    } catch (const std::exception& e) {
      early = "raised " + type_name(e) + " (" + e.what() + ")";
    }
  });
  if (!early.empty()) fail("with its stop already requested, exec_stream " + early + " instead of raising Cancelled");
  if (exec(c, Command("test -e '" + touched + "'")).exit_code == 0)
    fail("with its stop already requested, exec_stream still ran the command (its file exists)");

  const std::string marker = sleeper();
  ProcessSighting sighting(marker);
  Received got;
  std::string ending;
  c.subject.runner()([&]() -> boost::asio::awaitable<void> {
    const auto executor = co_await boost::asio::this_coro::executor;
    std::stop_source stop;
    OutputHandler handler = [&, executor](OutputStream s, std::string_view bytes) {
      const bool first = got.chunks == 0;
      recording(got)(s, bytes);
      if (!first) return;
      sighting.await_seen();
      boost::asio::post(executor, [&stop] { stop.request_stop(); });
    };
    ExecStreamOptions o{c.paths.work, seconds(20), seconds(20)};
    o.stop = stop.get_token();
    try {
      const StreamedExit e = co_await sb.exec_stream(Command(marker + " & printf started; wait; printf late"), handler, o);
      ending = "returned (exit " + std::to_string(e.exit_code) + ")";
    } catch (const Cancelled&) {
    } catch (const std::exception& e) {
      ending = "raised " + type_name(e) + " (" + e.what() + ")";
    }
  });
  if (!ending.empty()) fail("the stopped program " + ending + " instead of raising Cancelled");
  if (got.out != "started") fail("the handler got " + quoted(got.out) + ", not 'started'");
  sighting.expect_gone("the program's sleeper, after the caller's stop");
  const ExecResult after = exec(c, Command("echo after"));
  if (after.stdout_bytes != "after\n") fail("the sandbox did not answer after the stop: " + describe(after));
}

constexpr std::array<Probe, 7> kProbes{{
    {Suite::Stream, "ST-1", "chunks-arrive-before-the-program-exits",
     "a host shows progress and reacts to output while the program runs; output held until exit is not a stream",
     kStream, chunks_arrive_before_the_program_exits},
    {Suite::Stream, "ST-2", "silence-ends-at-the-read-timeout",
     "a program that stops talking must not hang the host past its read timeout, nor keep running after it",
     kStream, silence_ends_at_the_read_timeout},
    {Suite::Stream, "ST-3", "the-deadline-is-not-the-read-timeout",
     "a program that keeps talking still ends at its deadline, as TimeoutError, with what it started", kStream,
     the_deadline_is_not_the_read_timeout},
    {Suite::Stream, "ST-4", "a-throwing-handler-ends-the-program",
     "a host that stops listening must not leave the program running or swallow its own exception", kStream,
     a_throwing_handler_ends_the_program},
    {Suite::Stream, "ST-5", "stream-bytes-are-exact-and-apart",
     "chunks are bytes: no decoding, no folding of stderr into stdout, the exit code kept", kStream,
     stream_bytes_are_exact_and_apart},
    {Suite::Stream, "ST-6", "the-output-cap-still-ends-the-program",
     "streaming moves the bytes to the caller, not the limit: a flood still ends at the backend's cap", kStream,
     the_output_cap_still_ends_the_program},
    {Suite::Stream, "ST-7", "a-stop-ends-the-program",
     "a cancelled caller must not leave its program running in a sandbox it keeps: the stop reaches the whole group",
     kStream, a_stop_ends_the_program},
}};

}  // namespace

std::span<const Probe> stream_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
