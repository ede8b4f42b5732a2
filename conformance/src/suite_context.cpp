// CONTEXT (docs/conformance.md "CONTEXT"; docs/contexts.md CTX-1…CTX-8): interpreter contexts
// attacked through the public surface, on a guest with python3. Not in kAllSuites — a guest
// without python3 has nothing to attack (every probe is then a skip, saying so): run it with
// run_context on a subject whose image has python3. What a backend must show before a host
// relies on contexts: state persists across calls (CX-1), an exception is a result with its
// traceback (CX-2), rich outputs come back by MIME type and a plot bomb is cut, flagged (CX-3),
// a dead interpreter is reported dead and restarts empty (CX-4), a hung call is interrupted
// and the context kept (CX-5), and one that ignores the interrupt is killed, never wedged (CX-6).
#include "maf/sandbox/interpreter_context.hpp"
#include "probe_support.hpp"
#include "suite_tables.hpp"

namespace maf::sandbox::conformance::detail {
namespace {

using std::chrono::seconds;

constexpr CapabilitySet kContext{Capability::Background};

InterpreterContext create(ProbeContext& c) {
  // Not owned: the subject holds the sandbox for longer than any probe (aliasing, no owner).
  const std::shared_ptr<Sandbox> sb(std::shared_ptr<Sandbox>(), &c.subject.sandbox());
  try {
    return c.subject.runner()([&] { return InterpreterContext::create(sb, "python"); });
  } catch (const OSError& e) {
    if (std::string(e.what()).find("the interpreter did not start") != std::string::npos)
      throw ProbeNotApplicable(std::string("the guest cannot run python3: ") + e.what());
    throw;
  }
}

ContextRunResult run_in(ProbeContext& c, InterpreterContext& ctx, const std::string& code,
                        std::chrono::milliseconds timeout = seconds(30)) {
  return c.subject.runner()([&] { return ctx.run(code, timeout); });
}

/// Closes the context when the probe ends, whichever way (best effort).
struct Closing {
  ProbeContext& c;
  InterpreterContext& ctx;
  ~Closing() {
    try {
      c.subject.runner()([&] { return ctx.close(); });
    } catch (...) {
    }
  }
};

void expect_value(const ContextRunResult& r, const std::string& want, const std::string& what) {
  if (r.error) fail(what + " raised " + r.error->name + ": " + r.error->value);
  if (r.value != want) fail(what + " returned " + (r.value ? quoted(*r.value) : std::string("no value")) + ", not " +
                            quoted(want));
}

void state_persists(ProbeContext& c) {
  auto ctx = create(c);
  Closing closing{c, ctx};
  expect_value(run_in(c, ctx, "import os\ndata = [i * i for i in range(1000)]\nos.makedirs('cx1', exist_ok=True)\n"
                              "os.chdir('cx1')\nlen(data)"),
               "1000", "the first call");
  const auto second = run_in(c, ctx, "print('sum', sum(data))\nos.path.basename(os.getcwd())");
  expect_value(second, "'cx1'", "the second call (the working directory)");
  if (second.stdout_text != "sum 332833500\n") fail("the second call printed " + quoted(second.stdout_text));
  for (int i = 3; i <= 5; ++i)
    expect_value(run_in(c, ctx, "data.append(" + std::to_string(i) + ")\nlen(data)"), std::to_string(998 + i),
                 "call " + std::to_string(i));
}

void an_error_is_a_result(ProbeContext& c) {
  auto ctx = create(c);
  Closing closing{c, ctx};
  const auto r = run_in(c, ctx, "x = 1\nundefined_name + x");
  if (!r.error || r.error->name != "NameError" || r.error->traceback.find("undefined_name") == std::string::npos ||
      r.error->traceback.find("line 2") == std::string::npos)
    fail("a NameError on line 2 came back as " + (r.error ? r.error->name + ": " + quoted(r.error->traceback)
                                                          : std::string("no error")));
  expect_value(run_in(c, ctx, "x + 1"), "2", "the call after the error");
}

void rich_outputs(ProbeContext& c) {
  auto ctx = create(c);
  Closing closing{c, ctx};
  // A real 2x2 PNG, made with zlib and struct (no matplotlib needed), and an HTML form.
  const auto r = run_in(
      c, ctx,
      "import struct, zlib\n"
      "class Plot:\n"
      "    def _repr_png_(self):\n"
      "        def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))\n"
      "        raw = b''.join(b'\\x00' + b'\\xff\\x00\\x00' * 2 for _ in range(2))\n"
      "        return (b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 2, 2, 8, 2, 0, 0, 0))\n"
      "                + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))\n"
      "    def _repr_html_(self): return '<b>plot</b>'\n"
      "Plot()");
  if (r.error) fail("the plot raised " + r.error->name + ": " + r.error->value);
  if (r.outputs.size() != 2 || r.outputs[0].mime_type != "image/png" ||
      r.outputs[0].bytes.rfind("\x89PNG\r\n\x1a\n", 0) != 0 || r.outputs[1].mime_type != "text/html" ||
      r.outputs[1].bytes != "<b>plot</b>" || r.outputs_truncated)
    fail("expected an image/png and a text/html output, got " + std::to_string(r.outputs.size()) + " outputs" +
         (r.outputs.empty() ? std::string() : " starting with " + r.outputs[0].mime_type));
  const auto bomb = run_in(c, ctx, "class Bomb:\n    def _repr_png_(self): return b'\\0' * (9 << 20)\nBomb()");
  if (!bomb.outputs.empty() || !bomb.outputs_truncated)
    fail("a 9 MiB image must be dropped and flagged, got " + std::to_string(bomb.outputs.size()) + " outputs" +
         (bomb.outputs_truncated ? " (flagged)" : " (not flagged)"));
}

void death_is_reported(ProbeContext& c) {
  auto ctx = create(c);
  Closing closing{c, ctx};
  run_in(c, ctx, "kept = 'yes'");
  expect_refusal<SandboxContextDead>("a call that ends its interpreter", "SandboxContextDead",
                                     [&] { run_in(c, ctx, "import os\nos._exit(3)"); });
  expect_refusal<SandboxContextDead>("a call after the death", "SandboxContextDead", [&] { run_in(c, ctx, "1"); });
  c.subject.runner()([&] { return ctx.restart(); });
  expect_value(run_in(c, ctx, "'kept' in globals()"), "False", "the first call after the restart");
}

void a_hang_is_interrupted(ProbeContext& c) {
  auto ctx = create(c);
  Closing closing{c, ctx};
  run_in(c, ctx, "kept = 'yes'");
  expect_refusal<TimeoutError>("a call looping past its 1 s timeout", "TimeoutError",
                               [&] { run_in(c, ctx, "while True: pass", seconds(1)); });
  expect_value(run_in(c, ctx, "kept"), "'yes'", "the call after the interrupt");
}

void a_stubborn_hang_is_killed(ProbeContext& c) {
  auto ctx = create(c);
  Closing closing{c, ctx};
  // Ignores the interrupt however it comes (SIGINT, or the stream driver's own alarm): the
  // same code defeats either channel's first step (CTX-6, CTX-11).
  expect_refusal<TimeoutError>("a call that ignores its interrupt and loops past its 1 s timeout", "TimeoutError",
                               [&] {
                                 run_in(c, ctx,
                                        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True: pass",
                                        seconds(1));
                               });
  if (c.subject.runner()([&] { return ctx.alive(); })) fail("a context whose call ignored the interrupt still runs");
  expect_refusal<SandboxContextDead>("a call on the killed context", "SandboxContextDead",
                                     [&] { run_in(c, ctx, "1"); });
  c.subject.runner()([&] { return ctx.restart(); });
  expect_value(run_in(c, ctx, "6 * 7"), "42", "the first call after the restart");
}

constexpr std::array<Probe, 6> kProbes{{
    {Suite::Context, "CX-1", "state-persists-across-calls",
     "an agent that loaded its data once must not pay the load on every question", kContext, state_persists},
    {Suite::Context, "CX-2", "an-error-is-a-result-with-its-traceback",
     "the model fixes its code from the traceback; a context an exception broke loses the session", kContext,
     an_error_is_a_result},
    {Suite::Context, "CX-3", "rich-outputs-by-mime-type-under-caps",
     "a plot is the answer the model asked for; a plot bomb is memory the host spends", kContext, rich_outputs},
    {Suite::Context, "CX-4", "a-dead-interpreter-is-reported-and-restarts",
     "a context that died silently answers with state that is gone", kContext, death_is_reported},
    {Suite::Context, "CX-5", "a-hung-call-is-interrupted-and-the-context-kept",
     "one slow call must not cost the session's state", kContext, a_hang_is_interrupted},
    {Suite::Context, "CX-6", "an-interrupt-ignoring-call-is-killed-never-wedged",
     "a context stuck behind a call nobody waits for serves no one again", kContext, a_stubborn_hang_is_killed},
}};

}  // namespace

std::span<const Probe> context_probes() { return kProbes; }

}  // namespace maf::sandbox::conformance::detail
