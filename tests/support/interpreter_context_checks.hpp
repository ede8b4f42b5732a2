#pragma once
// The interpreter-context checks (docs/contexts.md CTX-2…CTX-8) every backend offering
// contexts is held to on a real guest with python3: the process backend's tests and Docker's
// (each transport) run these same functions.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/interpreter_context.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sync.hpp"

namespace maf::sandbox::test {

inline ContextRunResult run_in(BlockingRunner& run, InterpreterContext& ctx, const std::string& code,
                               std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  return run([&] { return ctx.run(code, timeout); });
}

/// CTX-2, CTX-3: variables, imports and the working directory persist across five calls; a
/// raised exception is a result with its traceback, and the context goes on.
inline void check_context_keeps_state(BlockingRunner& run, const std::shared_ptr<Sandbox>& sb) {
  auto ctx = run([&] { return InterpreterContext::create(sb, "python"); });
  CHECK(ctx.language() == "python");
  CHECK(run_in(run, ctx, "import os, json\ndata = [i * i for i in range(1000)]\nos.makedirs('ctx-cwd', exist_ok=True)\n"
                         "os.chdir('ctx-cwd')")
            .error == std::nullopt);
  const auto second = run_in(run, ctx, "print('sum is', sum(data))\nlen(data)");
  CHECK(second.stdout_text == "sum is 332833500\n");
  CHECK(second.value == std::optional<std::string>("1000"));
  const auto third = run_in(run, ctx, "os.path.basename(os.getcwd())");
  CHECK(third.value == std::optional<std::string>("'ctx-cwd'"));
  const auto fourth = run_in(run, ctx, "x = 1\nundefined_name + x");
  REQUIRE(fourth.error);
  CHECK(fourth.error->name == "NameError");
  CHECK_THAT(fourth.error->traceback, Catch::Contains("line 2") && Catch::Contains("undefined_name"));
  CHECK_FALSE(fourth.value);
  const auto fifth = run_in(run, ctx, "import sys\nprint('to stderr', file=sys.stderr)\njson.dumps({'x': x})");
  CHECK(fifth.stderr_text == "to stderr\n");
  CHECK(fifth.value == std::optional<std::string>("'{\"x\": 1}'"));
  run([&] { return ctx.close(); });
  CHECK_THROWS_AS(run_in(run, ctx, "1"), ValueError);
}

/// CTX-4: rich outputs keyed by MIME type, decoded; a plot bomb is cut and flagged.
inline void check_context_rich_outputs(BlockingRunner& run, const std::shared_ptr<Sandbox>& sb) {
  auto ctx = run([&] { return InterpreterContext::create(sb, "python"); });
  // A real 2x2 PNG, made without matplotlib (zlib and struct are in every Python).
  const std::string plot =
      "import struct, zlib\n"
      "class Plot:\n"
      "    def _repr_png_(self):\n"
      "        def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))\n"
      "        raw = b''.join(b'\\x00' + b'\\xff\\x00\\x00' * 2 for _ in range(2))\n"
      "        return (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 2, 2, 8, 2, 0, 0, 0))\n"
      "                + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))\n"
      "    def _repr_html_(self): return '<b>plot</b>'\n"
      "Plot()";
  const auto r = run_in(run, ctx, plot);
  REQUIRE_FALSE(r.error);
  REQUIRE(r.outputs.size() == 2);
  CHECK(r.outputs[0].mime_type == "image/png");
  CHECK(r.outputs[0].bytes.rfind("\x89PNG\r\n\x1a\n", 0) == 0);
  CHECK(r.outputs[0].bytes.substr(r.outputs[0].bytes.size() - 8, 4) == "IEND");
  CHECK(r.outputs[1].mime_type == "text/html");
  CHECK(r.outputs[1].bytes == "<b>plot</b>");
  CHECK_FALSE(r.outputs_truncated);
  const auto bomb = run_in(run, ctx, "class Bomb:\n    def _repr_png_(self): return b'\\0' * (9 << 20)\nBomb()");
  CHECK(bomb.outputs.empty());
  CHECK(bomb.outputs_truncated);
  run([&] { return ctx.close(); });
}

/// CTX-5, CTX-6, CTX-7: a dead interpreter is reported dead and restarts empty; a hung call is
/// interrupted and the context kept; one that ignores the interrupt is killed, never wedged.
inline void check_context_death_and_hangs(BlockingRunner& run, const std::shared_ptr<Sandbox>& sb) {
  auto ctx = run([&] { return InterpreterContext::create(sb, "python"); });
  run_in(run, ctx, "kept = 'yes'");
  CHECK_THROWS_WITH(run_in(run, ctx, "while True: pass", std::chrono::seconds(1)),
                    Catch::Contains("was interrupted; the context is kept"));
  CHECK(run_in(run, ctx, "kept").value == std::optional<std::string>("'yes'"));
  CHECK_THROWS_AS(run_in(run, ctx, "import os\nos._exit(3)"), SandboxContextDead);
  CHECK_FALSE(run([&] { return ctx.alive(); }));
  CHECK_THROWS_AS(run_in(run, ctx, "1"), SandboxContextDead);
  run([&] { return ctx.restart(); });
  CHECK(run([&] { return ctx.alive(); }));
  const auto fresh = run_in(run, ctx, "'kept' in globals()");
  CHECK(fresh.value == std::optional<std::string>("False"));
  CHECK_THROWS_WITH(run_in(run, ctx, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
                           std::chrono::seconds(1)),
                    Catch::Contains("did not stop at the interrupt"));
  CHECK_FALSE(run([&] { return ctx.alive(); }));
  run([&] { return ctx.restart(); });
  CHECK(run_in(run, ctx, "6 * 7").value == std::optional<std::string>("42"));
  run([&] { return ctx.close(); });
}

}  // namespace maf::sandbox::test
