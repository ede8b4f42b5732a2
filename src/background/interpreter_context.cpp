// Interpreter contexts over background programs and exec's stdin (docs/contexts.md,
// CTX-1…CTX-9): the interpreter is a background program running the driver the host sent in;
// each call is one exec whose stdin carries the code and whose stdout carries the answer.
#include "maf/sandbox/interpreter_context.hpp"

#include <openssl/evp.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "background/context_channel.hpp"
#include "background/context_driver.hpp"
#include "maf/sandbox/background.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/stdin_stream.hpp"
#include "support/random_name.hpp"

namespace maf::sandbox {

using boost::asio::awaitable;
using nlohmann::json;

namespace {

/// The guest's poll interval of a call's wait (kContextCall).
constexpr std::chrono::milliseconds kCallPoll{5};
/// A call's exec outlives its guest-side wait by this much, so the exec's own deadline (which
/// on Docker takes the sandbox, D-13) never fires first.
constexpr std::chrono::milliseconds kExecMargin{15'000};
/// How long an interrupted call may take to answer before its interpreter is killed (CTX-6).
constexpr std::chrono::milliseconds kInterruptGrace{5'000};
/// The most of an answer a call reads: the driver's caps (2 MiB of text, 8 MiB of outputs,
/// base64) with room for the JSON around them.
constexpr std::size_t kMaxAnswerBytes = std::size_t{16} << 20;

std::string decode_base64(const std::string& text) {
  if (text.size() % 4 != 0) throw OSError("interpreter context: an output's base64 has a length not a multiple of 4");
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) throw OSError("interpreter context: an output's base64 is malformed");
  std::size_t padding = 0;
  for (auto it = text.rbegin(); it != text.rend() && *it == '=' && padding < 2; ++it) ++padding;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

const std::string& text_at(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    throw OSError(std::string("interpreter context: the driver's answer has no text '") + key + "'");
  return it->get_ref<const std::string&>();
}

}  // namespace

namespace detail {
ContextRunResult parse_context_answer(const std::string& bytes, bool* timed_out) {
  json j;
  try {
    j = json::parse(bytes);
  } catch (const json::exception& e) {
    throw OSError(std::string("interpreter context: the driver's answer is not JSON: ") + e.what());
  }
  if (!j.is_object()) throw OSError("interpreter context: the driver's answer is not a JSON object");
  ContextRunResult r;
  r.stdout_text = text_at(j, "stdout");
  r.stderr_text = text_at(j, "stderr");
  r.stdout_truncated = j.value("stdout_truncated", false);
  r.stderr_truncated = j.value("stderr_truncated", false);
  if (j.contains("value")) r.value = text_at(j, "value");
  if (const auto e = j.find("error"); e != j.end()) {
    if (!e->is_object()) throw OSError("interpreter context: the driver's error is not an object");
    r.error = ContextError{text_at(*e, "name"), text_at(*e, "value"), text_at(*e, "traceback")};
  }
  const auto outputs = j.find("outputs");
  if (outputs == j.end() || !outputs->is_array())
    throw OSError("interpreter context: the driver's answer has no list 'outputs'");
  for (const auto& o : *outputs) {
    if (!o.is_object()) throw OSError("interpreter context: an output is not an object");
    r.outputs.push_back(ContextOutput{text_at(o, "mime"), decode_base64(text_at(o, "base64"))});
  }
  r.outputs_truncated = j.value("outputs_truncated", false);
  if (timed_out) *timed_out = j.value("timed_out", false);
  return r;
}
}  // namespace detail

struct InterpreterContext::State {
  std::optional<BackgroundProcess> program;
  /// The stream channel (CTX-11), where the sandbox declares it; else `program` and one exec per call.
  std::shared_ptr<detail::ContextChannel> channel;
  std::uint64_t next_call = 0;
  bool dead = false;
  bool closed = false;
};

InterpreterContext::InterpreterContext(std::shared_ptr<Sandbox> sandbox, std::string language, std::string id)
    : sandbox_(std::move(sandbox)),
      language_(std::move(language)),
      id_(std::move(id)),
      state_(std::make_unique<State>()) {}
InterpreterContext::InterpreterContext(InterpreterContext&&) noexcept = default;
InterpreterContext& InterpreterContext::operator=(InterpreterContext&&) noexcept = default;
InterpreterContext::~InterpreterContext() = default;

namespace {

std::string where(const Sandbox& s) {
  return "backend '" + s.backend_name() + "' sandbox (kind '" + s.kind() + "')";
}

std::string directory_of(const Sandbox& s, const std::string& id) {
  return join_guest_path(join_guest_path(s.storage_base(), ".maf-contexts"), id);
}

/// The awaitable is made first, then awaited (GCC 12 and by-value arguments in a co_await).
awaitable<ExecResult> exec_in(Sandbox& s, const Command& command, const ExecInput& input,
                              std::chrono::milliseconds timeout) {
  auto running = s.exec(command, input, "/", timeout);
  co_return co_await std::move(running);
}

}  // namespace

awaitable<InterpreterContext> InterpreterContext::create(std::shared_ptr<Sandbox> sandbox, std::string language) {
  if (!sandbox) throw ValueError("InterpreterContext::create: sandbox must not be null");
  if (language != "python")
    throw ValueError("interpreter context language '" + language + "' is not offered; offered: python");
  const CapabilitySet declared = sandbox->capabilities();
  if (!(declared.contains(Capability::ExecStream) && declared.contains(Capability::ExecStdinStream)))
    for (const Capability c : {Capability::Exec, Capability::ExecStdin, Capability::Background})
    if (!sandbox->capabilities().contains(c))
      throw NotImplementedError("backend '" + sandbox->backend_name() + "' does not declare capability '" +
                                std::string(to_string(c)) + "', so interpreter contexts are not available to kind '" +
                                sandbox->kind() + "' (docs/contexts.md CTX-1)");
  InterpreterContext context(std::move(sandbox), std::move(language), detail::random_hex(16));
  auto starting = context.start();
  co_await std::move(starting);
  co_return context;
}

awaitable<bool> InterpreterContext::first_call_runs() {
  // The first call proves the interpreter runs (CTX-1): a guest without python3 ends here.
  bool started = true;
  try {
    auto first = run(std::string("None"), std::chrono::seconds(30));
    const ContextRunResult ignored = co_await std::move(first);  // named: GCC 12 (see exec_in)
    (void)ignored;
  } catch (const SandboxContextDead&) {
    started = false;  // the caller says why: no co_await in a handler
  }
  co_return started;
}

bool InterpreterContext::streamed() const {
  const CapabilitySet declared = sandbox_->capabilities();
  return declared.contains(Capability::ExecStream) && declared.contains(Capability::ExecStdinStream);
}

awaitable<void> InterpreterContext::start() {
  Sandbox& s = *sandbox_;
  if (streamed()) {
    auto opening = detail::ContextChannel::open(sandbox_);
    state_->channel = co_await std::move(opening);
    state_->dead = false;
    auto probing = first_call_runs();
    if (!co_await std::move(probing))
      throw OSError("interpreter context " + id_ + " in " + where(s) + ": the interpreter did not start: " +
                    state_->channel->ending());
    co_return;
  }
  const std::string dir = directory_of(s, id_);
  // The driver goes in on stdin, so a context needs no FILES_IN; a restart starts from an
  // empty directory (a call file left by the killed interpreter is not run by the next).
  const Command install({"sh", "-c", "rm -rf \"$1\" && mkdir -p \"$1\" && mkfifo \"$1/wake\" && cat > \"$1/driver.py\"",
                         "maf-context", dir});
  const ExecInput driver{.stdin_bytes = std::string(detail::kPythonContextDriver)};
  auto installing = exec_in(s, install, driver, std::chrono::seconds(30));
  const ExecResult installed = co_await std::move(installing);
  if (installed.exit_code != 0)
    throw OSError("interpreter context " + id_ + " in " + where(s) + ": cannot write its driver into '" + dir +
                  "': " + installed.stderr_text().substr(0, 300));
  const Command program({"exec", "python3", "-u", dir + "/driver.py", dir});
  const BackgroundOptions options{};
  auto starting = start_background(sandbox_, program, options);  // made first: GCC 12 (see exec_in)
  state_->program = co_await std::move(starting);
  state_->next_call = 0;
  state_->dead = false;
  auto probing = first_call_runs();
  if (!co_await std::move(probing)) {
    BackgroundOutput out = co_await state_->program->output(2048);
    throw OSError("interpreter context " + id_ + " in " + where(s) + ": the interpreter did not start: " +
                  (out.stderr_bytes.empty() ? std::string("(it wrote nothing)") : out.stderr_bytes));
  }
}

awaitable<ContextRunResult> InterpreterContext::run(std::string code, std::chrono::milliseconds timeout) {
  if (!state_ || state_->closed) throw ValueError("interpreter context " + id_ + " is closed");
  if (timeout.count() <= 0)
    throw ValueError("interpreter context run timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  if (state_->channel && !state_->dead) {
    auto running = run_streamed(std::move(code), timeout);
    co_return co_await std::move(running);
  }
  if (state_->dead || !state_->program)
    throw SandboxContextDead("interpreter context " + id_ + " in " + where(*sandbox_) +
                             " is dead (its interpreter ended); restart it");
  Sandbox& s = *sandbox_;
  const std::string dir = directory_of(s, id_);
  const std::string n = std::to_string(state_->next_call++);
  const auto call = [&](const char* mode, std::chrono::milliseconds bound,
                        std::optional<std::string> stdin_bytes) -> awaitable<ExecResult> {
    const Command command({"sh", "-c", detail::kContextCall, "maf-context", dir, n, state_->program->directory(),
                           std::to_string(std::max<std::int64_t>(1, bound.count() / kCallPoll.count())), mode});
    const ExecInput input{.stdin_bytes = std::move(stdin_bytes)};
    co_return co_await exec_in(s, command, input, bound + kExecMargin);
  };
  const auto dead = [&]() -> awaitable<SandboxContextDead> {
    state_->dead = true;
    const BackgroundStatus status = co_await state_->program->poll();
    co_return SandboxContextDead("interpreter context " + id_ + " in " + where(s) +
                                 " died during the call (its interpreter ended" +
                                 (status.exit_code ? " with " + std::to_string(*status.exit_code) : std::string()) +
                                 "); restart it");
  };
  std::optional<std::string> sent(std::move(code));
  auto sending = call("send", timeout, std::move(sent));
  ExecResult r = co_await std::move(sending);
  if (r.exit_code == 92) {
    // CTX-6: interrupt the code, then give it a grace to answer; past it, the interpreter is
    // killed — a context is never left wedged on a call nobody waits for.
    const bool delivered = co_await state_->program->signal(SIGINT);
    int answered = 91;
    if (delivered) {
      auto waiting = call("wait", kInterruptGrace, std::nullopt);
      const ExecResult after = co_await std::move(waiting);  // named: GCC 12 and co_await temporaries
      answered = after.exit_code;
    }
    if (answered == 0)
      throw TimeoutError("interpreter context " + id_ + " in " + where(s) + ": the call did not finish within " +
                         std::to_string(timeout.count()) + " ms and was interrupted; the context is kept");
    co_await state_->program->stop(std::chrono::seconds(10));
    state_->dead = true;
    throw TimeoutError("interpreter context " + id_ + " in " + where(s) + ": the call did not finish within " +
                       std::to_string(timeout.count()) + " ms and did not stop at the interrupt; the context was " +
                       "killed and is dead (restart it)");
  }
  if (r.exit_code == 91) {
    const SandboxContextDead died = co_await dead();
    throw died;
  }
  if (r.exit_code != 0)
    throw OSError("interpreter context " + id_ + " in " + where(s) + ": the call could not be made (exit " +
                  std::to_string(r.exit_code) + "): " + r.stderr_text().substr(0, 300));
  if (r.stdout_bytes.size() > kMaxAnswerBytes)
    throw SandboxTransferCapExceeded("interpreter context " + id_ + ": an answer of " +
                                     std::to_string(r.stdout_bytes.size()) + " bytes is past " +
                                     std::to_string(kMaxAnswerBytes));
  co_return detail::parse_context_answer(r.stdout_bytes);
}

awaitable<ContextRunResult> InterpreterContext::run_streamed(std::string code, std::chrono::milliseconds timeout) {
  const std::string what = "interpreter context " + id_ + " in " + where(*sandbox_);
  detail::ContextChannel& channel = *state_->channel;
  std::optional<std::string> answer;
  try {
    auto calling = channel.call(code, timeout, kInterruptGrace);
    answer = co_await std::move(calling);
  } catch (const SandboxStdinClosed&) {
    // The interpreter is gone: said below as dead.
  }
  if (!answer && !channel.ended()) {
    // CTX-6: the driver's own interrupt did not bring an answer within the grace: the code
    // ignores it or is stuck below Python. The interpreter is stopped; never left wedged.
    channel.abort();
    auto closing = channel.close(std::chrono::seconds(10));
    co_await std::move(closing);
    state_->dead = true;
    throw TimeoutError(what + ": the call did not finish within " + std::to_string(timeout.count()) +
                       " ms and did not stop at the interrupt; the context was killed and is dead (restart it)");
  }
  if (!answer) {
    state_->dead = true;
    throw SandboxContextDead(what + " died during the call (" + channel.ending() + "); restart it");
  }
  bool timed_out = false;
  ContextRunResult result = detail::parse_context_answer(*answer, &timed_out);
  if (timed_out)
    throw TimeoutError(what + ": the call did not finish within " + std::to_string(timeout.count()) +
                       " ms and was interrupted; the context is kept");
  co_return result;
}

awaitable<bool> InterpreterContext::alive() {
  if (state_ && state_->channel && !state_->closed && !state_->dead) co_return !state_->channel->ended();
  if (!state_ || state_->closed || state_->dead || !state_->program) co_return false;
  const BackgroundStatus status = co_await state_->program->poll();
  if (!status.running) state_->dead = true;
  co_return status.running;
}

awaitable<void> InterpreterContext::restart() {
  if (!state_ || state_->closed) throw ValueError("interpreter context " + id_ + " is closed");
  if (state_->channel) {
    auto closing = state_->channel->close(std::chrono::seconds(10));
    co_await std::move(closing);
    state_->channel.reset();
  }
  if (state_->program) co_await state_->program->stop(std::chrono::seconds(10));
  state_->program.reset();
  auto starting = start();
  co_await std::move(starting);
}

awaitable<void> InterpreterContext::close() {
  if (!state_ || state_->closed) co_return;
  state_->closed = true;
  if (state_->channel) {
    // CTX-11: nothing of a stream context is in the guest's files; its end is its exec's.
    auto closing = state_->channel->close(std::chrono::seconds(10));
    co_await std::move(closing);
    state_->channel.reset();
    co_return;
  }
  if (state_->program) co_await state_->program->stop(std::chrono::seconds(10));
  state_->program.reset();
  const Command remove({"rm", "-rf", "--", directory_of(*sandbox_, id_)});
  const ExecInput none{};
  auto removing = exec_in(*sandbox_, remove, none, std::chrono::seconds(30));
  const ExecResult removed = co_await std::move(removing);  // best effort: the interpreter is gone already
  (void)removed;
}

}  // namespace maf::sandbox
