#pragma once
/// @file interpreter_context.hpp
/// Interpreter contexts (docs/contexts.md, CTX-1…CTX-9): a Python interpreter that lives on in
/// the sandbox between calls, so variables, imports and the working directory persist — an
/// agent that loads a 200 MB dataframe pays the load once, not per question.
///
/// Built on what every backend with BACKGROUND and EXEC_STDIN already proves: the interpreter
/// is a background program (its driver script, sent into the guest), and each call is one exec
/// whose stdin carries the code and whose stdout carries the answer (the protocol:
/// docs/contexts.md "The driver protocol"). No backend implements anything of its own.
///
///   auto ctx = co_await InterpreterContext::create(sandbox, "python");
///   co_await ctx.run("import pandas as pd; df = pd.read_csv('big.csv')");
///   auto r = co_await ctx.run("df.shape");   // r.value == "(1000000, 12)"

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "maf/sandbox/call_defaults.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/fwd.hpp"

namespace maf::sandbox {

/// The context's interpreter is gone (it exited, was killed by a bound, or its sandbox was
/// reset): calls are refused until `restart()` (CTX-5). Names the context.
class SandboxContextDead : public RuntimeError {
public:
  explicit SandboxContextDead(const std::string& message) : RuntimeError(message) {}
};

/// One rich output of a call, keyed by MIME type (CTX-4): `image/png`, `image/svg+xml`,
/// `text/html`, `application/json`. `bytes` are the output's own bytes (a PNG's, decoded).
struct ContextOutput {
  std::string mime_type;
  std::string bytes;
};

/// An exception the code raised (CTX-3): its type name, its message, the formatted traceback.
struct ContextError {
  std::string name;
  std::string value;
  std::string traceback;
};

/// What one call did. A raised exception is a result (with `error`), not a C++ exception: the
/// context is fine and the model reads the traceback.
struct ContextRunResult {
  std::string stdout_text;  ///< what the code printed (at most 1 MiB; `stdout_truncated` past it)
  std::string stderr_text;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  /// `repr()` of the last statement when it is an expression whose value is not None.
  std::optional<std::string> value{};
  std::optional<ContextError> error{};
  /// Rich outputs: the last value's (`_repr_png_`, `_repr_svg_`, `_repr_html_`, `_repr_json_`)
  /// and every open matplotlib figure as `image/png`, in that order, under the caps (CTX-4).
  std::vector<ContextOutput> outputs{};
  /// Outputs past the caps (count or bytes) were dropped; never silently.
  bool outputs_truncated = false;
};

/// A handle on one context: its sandbox, language and state directory. Cheap to move; calls
/// on one handle must not overlap (a context runs one call at a time, like a REPL).
class InterpreterContext {
public:
  /// CTX-1: start an interpreter for `language` ("python"; anything else is ValueError naming
  /// it). NotImplementedError naming the capability when the sandbox lacks BACKGROUND or
  /// EXEC_STDIN; OSError with the guest's words when the interpreter cannot start (no python3).
  static boost::asio::awaitable<InterpreterContext> create(std::shared_ptr<Sandbox> sandbox,
                                                           std::string language = "python");

  const std::string& id() const noexcept { return id_; }
  const std::string& language() const noexcept { return language_; }

  /// CTX-2…CTX-4: run `code` in the context; its variables, imports and working directory
  /// are those the previous calls left. CTX-6: past `timeout` the call is interrupted
  /// (KeyboardInterrupt in the code); TimeoutError follows, and the context stays usable —
  /// or, when the interrupt did not take within a grace, it is killed and reported dead.
  /// SandboxContextDead when the interpreter is gone (CTX-5).
  boost::asio::awaitable<ContextRunResult> run(std::string code,
                                               std::chrono::milliseconds timeout = kDefaultExecTimeout);
  /// Whether the interpreter is still running (one exec).
  boost::asio::awaitable<bool> alive();
  /// CTX-7: a fresh interpreter in place of this one (killed first if it still runs); the
  /// state is gone, the handle and its id stay.
  boost::asio::awaitable<void> restart();
  /// CTX-8: kill the interpreter and remove its state directory; the handle is then closed
  /// (every call ValueError). Idempotent.
  boost::asio::awaitable<void> close();

  InterpreterContext(InterpreterContext&&) noexcept;
  InterpreterContext& operator=(InterpreterContext&&) noexcept;
  ~InterpreterContext();

private:
  struct State;
  InterpreterContext(std::shared_ptr<Sandbox> sandbox, std::string language, std::string id);
  boost::asio::awaitable<void> start();
  boost::asio::awaitable<ContextRunResult> run_streamed(std::string code, std::chrono::milliseconds timeout);
  bool streamed() const;
  boost::asio::awaitable<bool> first_call_runs();
  std::shared_ptr<Sandbox> sandbox_;
  std::string language_;
  std::string id_;
  std::unique_ptr<State> state_;
};

}  // namespace maf::sandbox
