// SandboxToolSession (docs/tools.md): what a tool body reaches its sandboxes through — the
// call's key, acquire with the session's refusals (C-119), guest_call_path (C-120), the
// call's background programs and the reads that weaken its labels.
#include "tools/call_record.hpp"

#include <spdlog/spdlog.h>

#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "support/random_name.hpp"

namespace maf::sandbox {

namespace detail {
const ToolBinding& binding_of(const std::shared_ptr<const detail::ToolBinding>& binding) {
  if (!binding) throw RuntimeError("SandboxToolSession: this session belongs to no tool call");
  return *binding;
}
}  // namespace detail

using detail::binding_of;
using detail::judge_read;
using detail::kValidationLabels;
using detail::observe_call;
using detail::random_hex;

std::string no_thread_refusal(const std::string& tool_name) {
  return "Error: no active thread context — " + tool_name + " must be called from within a thread";
}

// --- SandboxToolSession ---

const std::string& SandboxToolSession::name() const { return binding_of(binding_).definition.name; }
const SandboxSpec& SandboxToolSession::spec() const { return binding_of(binding_).spec; }
std::shared_ptr<OutputSink> SandboxToolSession::output_sink() const { return binding_of(binding_).options.output_sink; }

const std::string& SandboxToolSession::call_id() const {
  static const std::string kNone;
  return call_ ? call_->call_id : kNone;
}

std::stop_token SandboxToolSession::stop_token() const { return call_ ? call_->stop : std::stop_token{}; }

Refusable<SandboxKey> SandboxToolSession::key() const {
  const auto& b = binding_of(binding_);
  std::optional<std::string> thread;
  if (b.context.current_thread_id) thread = b.context.current_thread_id();
  if (!thread) return Refusable<SandboxKey>::refused(no_thread_refusal(b.definition.name));  // C-17
  SandboxKey key{b.context.current_scope ? b.context.current_scope() : std::string{}, std::move(*thread), b.agent_id, {}};
  if (b.spec.isolation_scope() == IsolationScope::Call && call_) key.call_id = call_->key_call_id;
  return key;
}

boost::asio::awaitable<Refusable<std::shared_ptr<Sandbox>>> SandboxToolSession::acquire() const {
  auto key = this->key();
  if (!key) {
    if (call_) {
      std::lock_guard guard(call_->mutex);
      call_->refused = true;
    }
    co_return Refusable<std::shared_ptr<Sandbox>>::refused(key.refusal());
  }
  co_return co_await acquire(std::move(*key));
}

boost::asio::awaitable<Refusable<std::shared_ptr<Sandbox>>> SandboxToolSession::acquire(SandboxKey key) const {
  using Result = Refusable<std::shared_ptr<Sandbox>>;
  const auto& b = binding_of(binding_);
  const std::string& tool = b.definition.name;
  auto open = [this] {
    std::lock_guard guard(call_->mutex);
    return !call_->closed;
  };
  if (!call_ || !open()) {
    // Nothing would admit or clean up after it: a task outliving its call needs its own.
    logger()->warn("tool '{}': acquire() outside a running call refused", tool);
    co_return Result::refused(kRefusalSandboxUnavailable);
  }
  bool admitted = false;
  {
    std::lock_guard guard(call_->mutex);
    for (const auto& entry : call_->admitted) admitted = admitted || entry.key == key;
  }
  auto refuse = [this](std::string sentence) {
    std::lock_guard guard(call_->mutex);
    call_->refused = true;  // the call's released event says "refused" (docs/observability.md)
    return Result::refused(std::move(sentence));
  };
  if (!admitted) {
    const AdmitOptions admit{b.options.admission.exclusive, b.options.admission.timeout, tool, call_->call_id};
    CallTicket ticket;
    try {
      ticket = co_await b.router->admit_call(key, b.spec.kind(), admit);
    } catch (const std::exception& e) {
      logger()->warn("tool '{}': sandbox unavailable: {}", tool, e.what());
      co_return refuse(kRefusalSandboxUnavailable);
    }
    std::lock_guard guard(call_->mutex);
    call_->admitted.push_back({key, std::move(ticket), nullptr});
  }
  std::shared_ptr<Sandbox> sandbox;
  try {
    sandbox = co_await b.router->acquire(key, b.spec);
  } catch (const NoSandboxBackend& e) {
    logger()->warn("tool '{}': {}", tool, e.what());
    co_return refuse(kRefusalNoBackend);
  } catch (const ValueError& e) {
    // A message this library authored (configuration, image resolution): safe and actionable.
    logger()->warn("tool '{}': {}", tool, e.what());
    co_return refuse(std::string("Error: ") + e.what());
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception& e) {
    // A provider or transport failure (or an unclean key): its text can carry endpoints and
    // account ids, so it goes to the log and the model gets the fixed sentence.
    logger()->warn("tool '{}': sandbox unavailable: {}", tool, e.what());
    co_return refuse(kRefusalSandboxUnavailable);
  }
  {
    std::lock_guard guard(call_->mutex);
    for (auto& entry : call_->admitted)
      if (entry.key == key && !entry.sandbox) entry.sandbox = sandbox;
  }
  co_return sandbox;
}

std::string SandboxToolSession::guest_call_path() const {
  if (!call_)
    throw RuntimeError("guest_call_path() was called outside a tool call, so nothing would reclaim what it names; "
                       "call it from the tool body");
  std::lock_guard guard(call_->mutex);
  if (call_->closed)
    throw RuntimeError("guest_call_path() was called after its tool call returned; that path is already reclaimed "
                       "and anything written to it now would stay in the sandbox");
  if (!call_->name) call_->name = random_hex(12);
  return *call_->name;
}

boost::asio::awaitable<BackgroundProcess> SandboxToolSession::start_background(std::shared_ptr<Sandbox> sandbox,
                                                                              Command command) const {
  // Not a coroutine: the default options are made outside any co_await expression (GCC 12).
  return start_background_in_call(std::move(sandbox), std::move(command), BackgroundOptions{});
}

boost::asio::awaitable<BackgroundProcess> SandboxToolSession::start_background(std::shared_ptr<Sandbox> sandbox,
                                                                              Command command,
                                                                              const BackgroundOptions& options) const {
  return start_background_in_call(std::move(sandbox), std::move(command), options);
}

boost::asio::awaitable<BackgroundProcess> SandboxToolSession::start_background_in_call(std::shared_ptr<Sandbox> sandbox,
                                                                                      Command command,
                                                                                      BackgroundOptions options) const {
  auto open = [this] {
    std::lock_guard guard(call_->mutex);
    return !call_->closed;
  };
  if (!call_ || !open())
    throw RuntimeError("start_background() was called outside a running tool call, so no rung would stop it; call it "
                       "from the tool body, or maf::sandbox::start_background for a process of the host's own");
  // The awaitable made first, then awaited: GCC 12 destroys a temporary made inside a co_await
  // expression twice; `options` is this frame's own, alive until it completes.
  auto starting = maf::sandbox::start_background(std::move(sandbox), std::move(command), options);
  auto process = co_await std::move(starting);
  bool recorded = false;
  {
    std::lock_guard guard(call_->mutex);
    if (!call_->closed) {
      call_->background.push_back(process);
      recorded = true;
    }
  }
  if (!recorded) {
    // The call ended while it started (a cancellation): nothing else will stop it.
    co_await process.stop(binding_of(binding_).options.cleanup.reclaim_timeout);
    throw RuntimeError("start_background(): the tool call returned while background process '" + process.id() +
                       "' started; it was stopped");
  }
  co_return process;
}

void SandboxToolSession::record_file_read(std::string_view path) const {
  const auto& b = binding_of(binding_);
  if (!call_) throw RuntimeError("record_file_read() was called outside a tool call; there is no result for it to label");
  Integrity floor = Integrity::Trusted;
  const auto refusal = judge_read(b, path, floor);
  {
    std::lock_guard guard(call_->mutex);
    if (floor == Integrity::Untrusted) call_->read_floor = Integrity::Untrusted;
    if (refusal) call_->input_refused = true;
  }
  if (refusal) throw SandboxToolRefused(*refusal);
}

}  // namespace maf::sandbox
