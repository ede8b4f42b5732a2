// sandboxed_tool (docs/tools.md, issue 26 items 2–4): attach checks (C-118), the
// session's refusals (C-119), guest_call_path (C-120) and the cleanup rung after each call.
// Admission and the owed cleanup are the router's (admit_call / release_call); this file
// decides which rung a call owes, in one place: finish_call. It also reports each call to
// the router's observers (docs/observability.md "Where the tool layer emits"): admitted when
// the body starts, released after finish_call — so the cleanup's events fall inside the
// call's span — and the admission's queued event through AdmitOptions.
#include "maf/sandbox/sandboxed_tool.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <random>

#include "argument_schema.hpp"
#include "random_name.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/sync.hpp"

namespace maf::sandbox {

namespace detail {

struct ToolBinding {
  ToolDefinition definition;
  ToolBody body;
  std::shared_ptr<SandboxRouter> router;
  CallerContext context;
  std::string agent_id;
  SandboxSpec spec;
  SandboxedToolOptions options;
  Cleanup rung = Cleanup::Dispose;
  std::unique_ptr<ArgumentSchema> schema;
  std::string backend;  // the serving backend's name at attach, for the events (may be empty)
};

/// One key the call was admitted for, and what it acquired there (null if acquire refused).
struct AdmittedKey {
  SandboxKey key;
  CallTicket ticket;
  std::shared_ptr<Sandbox> sandbox;
};

/// Everything one call did that its end has to undo. Never on the shared binding: concurrent
/// calls of one tool each have their own.
struct ToolCallRecord {
  std::mutex mutex;
  std::string call_id;
  std::string key_call_id;            // IsolationScope::Call only: a host-made name
  std::optional<std::string> name;    // the 12-hex directory name, once asked for
  std::vector<AdmittedKey> admitted;  // guarded by mutex
  bool closed = false;                // guarded by mutex
  bool refused = false;               // an acquire() of this call was refused; guarded by mutex
  Integrity read_floor = Integrity::Trusted;  // lowered by a weak or unknown read; guarded by mutex
  bool input_refused = false;  // record_file_read refused: its sentence quotes a path; guarded by mutex
  std::stop_token stop;
  // Background processes this call started (BG-10): its RECLAIM stops them. Guarded by mutex.
  std::vector<BackgroundProcess> background;
};

}  // namespace detail

namespace {

constexpr std::chrono::milliseconds kCancelledCallGrace{2000};

/// Guest output is untrusted data; the library's validation message may quote names the
/// model chose, so it is public but not trusted.
constexpr ContentLabels kValidationLabels{Integrity::Untrusted, Confidentiality::Public};

using detail::random_hex;

/// One ToolCallEvent of the tool layer to the router's observers. The key is the call's
/// (under CALL scope its call_id is the host-made name the sandbox's own events carry, which
/// is how the exporter links those to this call); call_id is the model's id.
void observe_call(const detail::ToolBinding& b, ToolCallPhase phase, const std::string& call_id,
                  const std::optional<SandboxKey>& key, std::string error_type = {}, std::string traceparent = {},
                  std::optional<std::string> arguments = {}, std::optional<std::string> result = {}) noexcept {
  const auto& observers = b.router->observers();
  if (!observers) return;
  try {
    ToolCallEvent event;
    if (key) event.context.key = *key;
    event.context.call_id = call_id;
    event.context.backend = b.backend;
    event.context.kind = b.spec.kind();
    event.phase = phase;
    event.tool = b.definition.name;
    event.error_type = std::move(error_type);
    event.traceparent = std::move(traceparent);
    event.arguments = std::move(arguments);
    event.result = std::move(result);
    emit(observers.get(), std::move(event));
  } catch (...) {
    // Only building the event can throw (allocation); observation never changes the result.
  }
}

/// The text items of a result, for a host that opted into payloads.
std::string result_text(const ToolResult& result) {
  std::string text;
  for (const auto& item : result.content)
    if (const auto* t = std::get_if<TextContent>(&item.value)) text += t->text;
  return text;
}

/// What ended a call, as ToolCallEvent::error_type: empty on success; "refused" for an
/// is_error result after a refused acquire (the C-119 idiom returns the sentence) or a
/// thrown SandboxToolRefused; "tool_error" for the body's own error result.
std::string call_error_type(const ToolResult& result, const std::exception_ptr& raised, bool refused) {
  if (raised) return error_type_name(raised);
  if (!result.is_error) return "";
  return refused ? "refused" : "tool_error";
}

/// One read of stored text (PROV-2, PROV-3, PROV-4): lowers `floor` when the text is untrusted
/// or unknown, and returns the refusal sentence when it is weaker than the kind accepts.
std::optional<std::string> judge_read(const detail::ToolBinding& b, std::string_view path, Integrity& floor) {
  const std::string& tool = b.definition.name;
  std::optional<Integrity> integrity;
  std::string key;
  try {
    key = FileStoreProvenance::normalize(path);
    if (b.options.file_provenance) integrity = b.options.file_provenance->integrity(key);
  } catch (const ValueError& e) {
    floor = Integrity::Untrusted;
    return "Error: tool '" + tool + "' refuses input: " + e.what();
  }
  if (integrity != Integrity::Trusted) floor = Integrity::Untrusted;
  const auto& required = b.options.requires_file_integrity;
  if (!required) return std::nullopt;
  const bool weak = !integrity || (*required == Integrity::Trusted && *integrity == Integrity::Untrusted);
  if (!weak) return std::nullopt;
  return "Error: tool '" + tool + "' refuses input '" + key + "': its integrity is " +
         (integrity ? std::string(to_string(*integrity)) : std::string("unknown")) + ", and the tool requires " +
         std::string(to_string(*required)) + " input";
}

/// The labels of a finished call (PROV-1, PROV-3): the verified standing guidance is
/// trusted/public; every other item keeps the body's labels or takes the kind's claim, and a
/// weak read lowers its integrity — never raises it.
void stamp_labels(const detail::ToolBinding& b, ToolResult& result, Integrity read_floor, bool library_made) {
  const ContentLabels claim = b.options.labels.value_or(ContentLabels{});
  std::size_t guidance = result.content.size();
  const auto& fixed = b.options.standing_guidance;
  if (fixed && !result.is_error) {
    const auto* last = result.content.empty() ? nullptr : &result.content.back();
    const auto* text = last ? std::get_if<TextContent>(&last->value) : nullptr;
    if (text && !last->labels && text->text == *fixed)
      guidance = result.content.size() - 1;
    else
      logger()->warn("tool '{}': the result does not end with the kind's standing guidance (unlabelled, unaltered); "
                     "nothing in it is stamped trusted",
                     b.definition.name);
  }
  for (std::size_t i = 0; i < result.content.size(); ++i) {
    auto& item = result.content[i];
    if (i == guidance) {
      item.labels = kLibraryAuthoredLabels;
      continue;
    }
    if (!item.labels) item.labels = claim;
    if (read_floor == Integrity::Untrusted && !library_made) item.labels->integrity = Integrity::Untrusted;
  }
}

const detail::ToolBinding& bound(const std::shared_ptr<const detail::ToolBinding>& binding) {
  if (!binding) throw RuntimeError("SandboxToolSession: this session belongs to no tool call");
  return *binding;
}

/// Runs the host's callback bounded by `timeout` (C-120: separately from the removal). A late
/// callback keeps running detached; its failure is logged, never raised into the call.
boost::asio::awaitable<void> report_bounded(const std::function<boost::asio::awaitable<void>(ReclaimFailure)>& callback,
                                            ReclaimFailure failure, std::chrono::milliseconds timeout) {
  auto executor = co_await boost::asio::this_coro::executor;
  struct State {
    boost::asio::steady_timer timer;
    bool done = false;
  };
  auto state = std::make_shared<State>(State{boost::asio::steady_timer(executor, timeout)});
  const std::string tool = failure.tool;
  boost::asio::co_spawn(
      executor, [callback, failure = std::move(failure)]() -> boost::asio::awaitable<void> { co_await callback(failure); },
      [state, tool](std::exception_ptr e) {
        state->done = true;
        if (e) {
          try {
            std::rethrow_exception(e);
          } catch (const std::exception& ex) {
            logger()->warn("tool '{}': on_reclaim_failure raised: {}", tool, ex.what());
          }
        }
        state->timer.cancel();
      });
  boost::system::error_code ec;
  co_await state->timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  if (!state->done) logger()->warn("tool '{}': on_reclaim_failure did not finish within {} ms", tool, timeout.count());
}

/// Stop and forget each of `background`; the sandboxes where one of them did not stop.
boost::asio::awaitable<std::vector<const Sandbox*>> stop_background(const detail::ToolBinding& b,
                                                                   const std::vector<BackgroundProcess>& background,
                                                                   std::chrono::milliseconds timeout) {
  std::vector<const Sandbox*> unstopped;
  for (const auto& process : background) {
    std::optional<std::string> problem;
    try {
      const auto status = co_await process.stop(timeout);
      if (status.running) problem = "it still runs after SIGKILL to its group";
    } catch (const std::exception& e) {
      problem = e.what();
    }
    if (!problem) {
      try {
        // Named first: GCC 12 miscompiles a braced temporary inside a co_await's arguments.
        std::vector<std::string> argv{"rm", "-rf", "--", process.directory()};
        auto removing = process.sandbox().exec(Command(std::move(argv)), ".", timeout);
        co_await std::move(removing);
      } catch (const std::exception& e) {
        logger()->warn("tool '{}': background process '{}' stopped, but its state was not removed: {}",
                       b.definition.name, process.id(), e.what());
      }
      continue;
    }
    logger()->warn("tool '{}': background process '{}' of the call was not stopped ({}); the rung becomes DISPOSE",
                   b.definition.name, process.id(), *problem);
    unstopped.push_back(&process.sandbox());
  }
  co_return unstopped;
}

/// The end of every call (result, refusal, exception, cancellation): close the record, then
/// for every key it was admitted for, release with the rung owed — RECLAIM removes the call's
/// directory now; RESET and DISPOSE remove it with everything else when the pair drains — and
/// report what did not happen.
boost::asio::awaitable<void> finish_call(const detail::ToolBinding& b, detail::ToolCallRecord& call,
                                         std::chrono::milliseconds timeout) {
  std::vector<detail::AdmittedKey> admitted;
  std::optional<std::string> name;
  std::vector<BackgroundProcess> background;
  {
    std::lock_guard guard(call.mutex);
    call.closed = true;  // from here guest_call_path() raises and acquire() records nothing
    admitted = std::move(call.admitted);
    name = call.name;
    background = std::move(call.background);
  }
  // BG-10: RECLAIM leaves the sandbox's other processes alone, so it stops the call's own
  // background processes first; RESET and DISPOSE end every process of the sandbox anyway.
  std::vector<const Sandbox*> unstopped;
  if (b.rung == Cleanup::Reclaim) unstopped = co_await stop_background(b, background, timeout);
  for (auto& entry : admitted) {
    std::vector<OwedCleanup> owed;
    std::string path;
    if (entry.sandbox) {
      // The backend's declaration decided the rung at attach; an instance whose reset is
      // refused anyway (NotImplementedError) is escalated to a disposal by release_call.
      // A background process RECLAIM could not stop escalates it to DISPOSE, which ends it.
      const bool escalate = std::find(unstopped.begin(), unstopped.end(), entry.sandbox.get()) != unstopped.end();
      const Cleanup rung = escalate ? Cleanup::Dispose : b.rung;
      if (name) path = join_guest_path(entry.sandbox->storage_base(), *name);
      // RECLAIM with no name allocated: nothing was named, so nothing is there to remove.
      if (rung != Cleanup::Reclaim || name)
        owed.push_back({rung, entry.sandbox, path, b.options.failed_reclaim});
    }
    const auto failures = co_await b.router->release_call(std::move(entry.ticket), std::move(owed), timeout);
    for (const auto& failure : failures) {
      logger()->warn("tool '{}': {} of {} ({} '{}') did not happen: {}", b.definition.name, to_string(failure.rung),
                     to_string(failure.key), failure.backend, failure.instance_id, failure.reason);
      // C-120: reported only when a name was allocated (else the call wrote nothing).
      if (!name || !b.options.on_reclaim_failure) continue;
      // Named first: GCC 12 miscompiles a braced temporary inside a co_await's arguments.
      ReclaimFailure report{b.definition.name, entry.key, path, failure.reason};
      co_await report_bounded(b.options.on_reclaim_failure, std::move(report), timeout);
    }
  }
}

}  // namespace

std::string no_thread_refusal(const std::string& tool_name) {
  return "Error: no active thread context — " + tool_name + " must be called from within a thread";
}

// --- SandboxToolSession ---

const std::string& SandboxToolSession::name() const { return bound(binding_).definition.name; }
const SandboxSpec& SandboxToolSession::spec() const { return bound(binding_).spec; }
std::shared_ptr<OutputSink> SandboxToolSession::output_sink() const { return bound(binding_).options.output_sink; }

const std::string& SandboxToolSession::call_id() const {
  static const std::string kNone;
  return call_ ? call_->call_id : kNone;
}

std::stop_token SandboxToolSession::stop_token() const { return call_ ? call_->stop : std::stop_token{}; }

Refusable<SandboxKey> SandboxToolSession::key() const {
  const auto& b = bound(binding_);
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
  const auto& b = bound(binding_);
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
    const AdmitOptions admit{b.options.exclusive, b.options.admission_timeout, tool, call_->call_id};
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
                                                                              Command command,
                                                                              BackgroundOptions options) const {
  auto open = [this] {
    std::lock_guard guard(call_->mutex);
    return !call_->closed;
  };
  if (!call_ || !open())
    throw RuntimeError("start_background() was called outside a running tool call, so no rung would stop it; call it "
                       "from the tool body, or maf::sandbox::start_background for a process of the host's own");
  // The awaitable made first, then awaited: GCC 12 destroys by-value arguments made inside a
  // co_await expression twice.
  auto starting = maf::sandbox::start_background(std::move(sandbox), std::move(command), std::move(options));
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
    co_await process.stop(bound(binding_).options.reclaim_timeout);
    throw RuntimeError("start_background(): the tool call returned while background process '" + process.id() +
                       "' started; it was stopped");
  }
  co_return process;
}

void SandboxToolSession::record_file_read(std::string_view path) const {
  const auto& b = bound(binding_);
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

// --- SandboxedTool ---

const ToolDefinition& SandboxedTool::definition() const { return binding_->definition; }
Cleanup SandboxedTool::cleanup() const { return binding_->rung; }

boost::asio::awaitable<ToolResult> SandboxedTool::invoke(ToolCall call, std::stop_token stop) const {
  const auto& b = *binding_;
  std::optional<std::string> arguments;
  if (b.options.observe_payloads)
    arguments = call.arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // A bad call runs nothing, so it is one released event: an errored execute_tool of its own.
  auto invalid = [&](std::string text, const char* error_type = "invalid_arguments") {
    observe_call(b, ToolCallPhase::Released, call.id, std::nullopt, error_type, {}, arguments);
    return ToolResult::error(std::move(text), kValidationLabels);
  };
  if (call.name != b.definition.name)
    co_return invalid("Error: tool '" + b.definition.name + "' cannot serve a call to '" + call.name + "'");
  if (auto problem = b.schema->problem(call.arguments))
    co_return invalid("Error: invalid arguments for tool '" + b.definition.name + "': " + *problem);
  // PROV-2, PROV-4: the inputs the call names are judged before anything runs.
  Integrity read_floor = Integrity::Trusted;
  if (b.options.file_inputs) {
    std::vector<std::string> inputs;
    try {
      inputs = b.options.file_inputs(call.arguments);
    } catch (const std::exception& e) {
      logger()->warn("tool '{}': file_inputs raised: {}", b.definition.name, e.what());
      co_return invalid("Error: tool '" + b.definition.name + "' could not name the inputs of this call",
                        "refused_input");
    }
    for (const auto& path : inputs)
      if (auto refusal = judge_read(b, path, read_floor)) co_return invalid(std::move(*refusal), "refused_input");
  }

  auto record = std::make_shared<detail::ToolCallRecord>();
  record->call_id = call.id;
  record->stop = stop;
  record->read_floor = read_floor;
  if (b.spec.isolation_scope() == IsolationScope::Call) record->key_call_id = "call-" + random_hex(16);
  SandboxToolSession session(binding_, record);
  // Read once, and only when observed: the key names the holder whose sandbox events belong
  // to this call. A host callback that throws here costs the event its key or parent, never
  // the call (the body meets the same callback itself).
  std::optional<SandboxKey> key;
  std::string traceparent;
  if (b.router->observers()) {
    try {
      if (auto k = session.key()) key = std::move(*k);
      if (b.options.current_traceparent) traceparent = b.options.current_traceparent();
    } catch (...) {
      logger()->warn("tool '{}': a host callback raised while observing the call; its event goes without it",
                     b.definition.name);
    }
  }
  observe_call(b, ToolCallPhase::Admitted, record->call_id, key, {}, std::move(traceparent), arguments);

  ToolResult result;
  std::exception_ptr raised;
  bool cancelled = false;
  bool thrown_refusal = false;
  try {
    result = co_await b.body(session, std::move(call.arguments));
  } catch (const SandboxToolRefused& refusal) {
    thrown_refusal = true;
    std::lock_guard guard(record->mutex);
    // A refused read quotes a store path the model may have chosen: public, not trusted.
    result = ToolResult::error(refusal.what(), record->input_refused ? kValidationLabels : kLibraryAuthoredLabels);
  } catch (const Cancelled&) {
    cancelled = true;
    raised = std::current_exception();
  } catch (...) {
    raised = std::current_exception();
  }
  // A cancelled caller is owed promptness, not nothing: a grace rather than a skip (C-120).
  const auto timeout = cancelled ? std::min(b.options.reclaim_timeout, kCancelledCallGrace) : b.options.reclaim_timeout;
  co_await finish_call(b, *record, timeout);
  std::optional<std::string> result_payload;
  if (b.options.observe_payloads && !raised) result_payload = result_text(result);
  bool refused = thrown_refusal;
  {
    std::lock_guard guard(record->mutex);
    refused = refused || record->refused;
  }
  observe_call(b, ToolCallPhase::Released, record->call_id, key, call_error_type(result, raised, refused), {},
               std::move(arguments), std::move(result_payload));
  if (raised) std::rethrow_exception(raised);
  {
    std::lock_guard guard(record->mutex);
    read_floor = record->read_floor;
  }
  stamp_labels(b, result, read_floor, thrown_refusal);
  co_return result;
}

ToolResult SandboxedTool::invoke_blocking(ToolCall call) const {
  thread_local BlockingRunner runner;
  return runner([&] { return invoke(std::move(call)); });
}

// --- attach (C-118) ---

std::vector<SandboxedTool> sandboxed_tool(ToolBody body, std::shared_ptr<SandboxRouter> router, CallerContext context,
                                          std::string agent_id, SandboxSpec spec, std::string name,
                                          SandboxedToolOptions options) {
  if (!router || !router->enabled()) return {};  // no tool, no error
  if (name.empty()) throw ValueError("sandboxed_tool: the tool name is empty");
  if (!body) throw ValueError("sandboxed_tool '" + name + "': the body is empty");
  if (options.standing_guidance && options.standing_guidance->empty())
    throw ValueError("sandboxed_tool '" + name + "': standing_guidance is empty; leave it unset for a kind without one");
  if (options.requires_file_integrity && !options.file_provenance)
    throw ValueError("sandboxed_tool '" + name + "': requires_file_integrity '" +
                     std::string(to_string(*options.requires_file_integrity)) +
                     "' needs the host's file_provenance record; without it every input is unknown");
  if (options.output_sink && options.labels)
    throw ValueError("sandboxed_tool '" + name +
                     "': an output sink and explicit labels were both given; the sink decides what lands, so give one");
  const auto& outputs = spec.declared_outputs();
  const bool lands = spec.outputs_named_at_call_time() ||
                     std::any_of(outputs.begin(), outputs.end(),
                                 [](const DeclaredOutput& o) { return o.disposition == OutputDisposition::Land; });
  if (lands && !options.output_sink)
    throw SandboxOutputSinkRequired("sandboxed_tool '" + name + "': workload kind '" + spec.kind() +
                                    "' lands artifacts, so it needs an output sink");
  if ((!outputs.empty() || spec.outputs_named_at_call_time()) &&
      !spec.requires_capabilities().contains(Capability::FilesOut))
    throw ValueError("sandboxed_tool '" + name + "': workload kind '" + spec.kind() +
                     "' declares outputs but does not require files_out");
  if (options.reclaim_timeout.count() <= 0)
    throw ValueError("sandboxed_tool '" + name + "': reclaim_timeout must be finite and positive, got " +
                     std::to_string(options.reclaim_timeout.count()) + " ms");
  router->ensure_can_serve(spec);
  if (spec.work_dir() && normalize_guest_path(*spec.work_dir()) == "/")
    throw ValueError("sandboxed_tool '" + name + "': work_dir '" + *spec.work_dir() +
                     "' normalises to '/', and a call directory under the root would be reclaimed from it");
  if (options.admission_timeout.count() <= 0)
    throw ValueError("sandboxed_tool '" + name + "': admission_timeout must be positive, got " +
                     std::to_string(options.admission_timeout.count()) + " ms");

  // docs/tools.md "The cleanup ladder": IsolationScope::Call always disposes; otherwise the
  // stronger of the host's rung and the kind's floor, and a rung the backend does not declare
  // is refused, never downgraded.
  Cleanup rung = spec.isolation_scope() == IsolationScope::Call ? Cleanup::Dispose
                                                                : stronger(options.cleanup, options.workload_floor);
  if (rung != Cleanup::Dispose) {
    const auto backend = router->select(spec);
    const Capability needed = rung == Cleanup::Reclaim ? Capability::Reclaim : Capability::Snapshot;
    if (!backend->declarations().capabilities.contains(needed))
      throw SandboxCapabilityNotSupported("sandboxed_tool '" + name + "': cleanup '" + std::string(to_string(rung)) +
                                          "' needs backend '" + backend->name() + "' to declare capability '" +
                                          std::string(to_string(needed)) + "', which it does not (workload kind '" +
                                          spec.kind() + "')");
  }
  auto schema = std::make_unique<detail::ArgumentSchema>(options.input_schema, name);
  std::string backend_name;
  if (router->observers()) backend_name = router->select(spec)->name();  // ensure_can_serve passed

  auto binding = std::make_shared<detail::ToolBinding>(detail::ToolBinding{
      ToolDefinition{name, options.description, options.input_schema, options.annotations}, std::move(body),
      std::move(router), std::move(context), std::move(agent_id), std::move(spec), std::move(options), rung,
      std::move(schema), std::move(backend_name)});
  std::vector<SandboxedTool> tools;
  tools.push_back(SandboxedTool(std::move(binding)));
  return tools;
}

}  // namespace maf::sandbox
