// Issue 48 item 7 on the process backend (docs/contexts.md, docs/exec-input.md): each row's
// "ours" and its floor alternate in one process (bench/common/harness.hpp).
//   - a trivial call in a warm context vs a one-shot run_code of the same code (goal <= 0.2x),
//     and vs one bare exec (what a call costs beyond the exec that carries it);
//   - the second of two calls reusing a ~100 MB object vs one-shot code rebuilding it
//     (goal <= 0.05x);
//   - 16 MiB through `cat > /dev/null` on exec stdin vs a bare host `cat` fed the same bytes
//     (throughput, goal >= 100 MiB/s), and the same 16 MiB written into a StdinStream in 1 MiB
//     pieces while the program runs (STDIN-6).
// The context rows run over the stream channel (CTX-11): the process backend declares
// exec_stdin_stream, so a call is a frame on a held-open exec, not an exec of its own.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <iostream>

#include "common/harness.hpp"
#include "maf/sandbox/interpreter_context.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/stdin_stream.hpp"
#include "maf/sandbox/sync.hpp"

using namespace maf::sandbox;
using maf_bench::Table;
using maf_bench::timed;

int main() {
  const int runs = std::getenv("MAF_BENCH_RUNS") ? std::atoi(std::getenv("MAF_BENCH_RUNS")) : 10;
  const auto root = std::filesystem::temp_directory_path() / ("maf-bench-contexts-" + std::to_string(::getpid()));
  process::ProcessBackendConfig config;
  config.root = root;
  config.run_code_interpreter = {"python3", "-"};
  auto backend = process::make_process_backend(config);
  BlockingRunner run;
  const SandboxKey key{"bench", "contexts", "agent", ""};
  const SandboxSpec spec({.kind = "contexts",
                          .requires_capabilities = {Capability::Exec, Capability::ExecStdin, Capability::Background,
                                                    Capability::RunCode}});
  auto sb = run([&] { return backend->acquire(key, spec); });
  auto ctx = run([&] { return InterpreterContext::create(sb, "python"); });
  Table table;
  const std::string trivial = "1 + 1";
  table.measure("context call `1 + 1`", "one-shot run_code `print(1 + 1)`", runs,
                [&] { return timed([&] { maf_bench::require(run([&] { return ctx.run(trivial); }).value == "2", "2"); }); },
                [&] {
                  return timed([&] {
                    maf_bench::require(run([&] { return sb->run_code("print(1 + 1)"); }).stdout_bytes == "2\n", "2");
                  });
                });
  // Where a call's time goes: one exec (a bubblewrap launch) is most of it.
  const Command nothing({"true"});
  table.measure("context call `1 + 1` (same)", "one bare exec `true`", runs,
                [&] { return timed([&] { run([&] { return ctx.run(trivial); }); }); },
                [&] { return timed([&] { run([&] { return sb->exec(nothing); }); }); });
  const std::string build = "big = list(range(3_000_000))\nlen(big)";
  run([&] { return ctx.run(build); });
  const std::string reuse = "sum(big[::1000])";
  const std::string rebuild = "big = list(range(3_000_000))\nprint(sum(big[::1000]))";
  table.measure("reuse a ~100 MB list (2nd call)", "one-shot run_code rebuilding it", runs,
                [&] { return timed([&] { run([&] { return ctx.run(reuse); }); }); },
                [&] { return timed([&] { run([&] { return sb->run_code(rebuild); }); }); });
  const std::string payload(16 << 20, 'x');
  const Command sink({"sh", "-c", "cat > /dev/null"});
  const ExecInput fed{.stdin_bytes = payload};  // named: GCC 12 and braced temporaries
  auto& stdin_row = table.measure(
      "16 MiB on exec stdin to `cat`", "bare host `cat` fed the same bytes", runs,
      [&] {
        return timed([&] { run([&] { return sb->exec(sink, fed); }); });
      },
      [&] { return timed([&] { maf_bench::spawn_and_wait("cat", {}, payload); }); });
  const std::string piece(1 << 20, 'x');
  const auto streamed = [&]() -> boost::asio::awaitable<void> {
    ExecStreamOptions o;
    o.stdin_stream = StdinStream::create();
    const OutputHandler ignore = [](OutputStream, std::string_view) {};
    // The writer beside the exec (co_spawn with use_awaitable would start the exec only when
    // awaited, after the writes: a deadlock on a full pipe).
    const auto executor = co_await boost::asio::this_coro::executor;  // apart: GCC 12 and co_await in arguments
    boost::asio::co_spawn(
        executor,
        [in = o.stdin_stream, &piece]() -> boost::asio::awaitable<void> {
          for (int i = 0; i < 16; ++i) co_await in->write(piece);
          in->close();
        },
        boost::asio::detached);
    const StreamedExit exit = co_await sb->exec_stream(sink, ignore, o);
    maf_bench::require(exit.exit_code == 0, "cat exits 0");
  };
  auto& stream_row = table.measure(
      "16 MiB on a StdinStream to `cat` (1 MiB writes)", "bare host `cat` fed the same bytes", runs,
      [&] { return timed([&] { run(streamed); }); },
      [&] { return timed([&] { maf_bench::spawn_and_wait("cat", {}, payload); }); });
  table.print(runs);
  std::printf("\nstdin throughput: %.0f MiB/s (floor %.0f MiB/s)\n", 16.0 / stdin_row.ours_ms * 1e3,
              16.0 / stdin_row.floor_ms * 1e3);
  std::printf("streamed stdin throughput: %.0f MiB/s (floor %.0f MiB/s)\n", 16.0 / stream_row.ours_ms * 1e3,
              16.0 / stream_row.floor_ms * 1e3);
  run([&] { return ctx.close(); });
  run([&] { return backend->dispose(key, std::nullopt, std::nullopt); });
  std::filesystem::remove_all(root);
  return 0;
}
