#include "tools.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <optional>
#include <stop_token>

#include "maf/sandbox/caller_context.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sink.hpp"

namespace maf::sandbox::mcp {

namespace {

using boost::asio::awaitable;
using nlohmann::json;

constexpr int kMaxTimeoutSeconds = 3600;

/// Awaits `op`, or throws Cancelled as soon as `stop` is requested. Sandbox::exec takes no
/// stop token (Boost 1.74 has no per-operation cancellation), so a stopped call returns at
/// once and the program it started is ended by the call's cleanup rung (DISPOSE kills it) or
/// by its own deadline. `sandbox` is kept alive until `op` has finished: the operation runs
/// on inside it after the call has returned.
template <class T>
awaitable<T> until_stopped(std::stop_token stop, std::shared_ptr<Sandbox> sandbox, awaitable<T> op) {
  auto executor = co_await boost::asio::this_coro::executor;
  struct State {
    explicit State(boost::asio::any_io_executor ex) : wake(ex, boost::asio::steady_timer::time_point::max()) {}
    boost::asio::steady_timer wake;
    std::optional<T> value;
    std::exception_ptr error;
    bool done = false;
  };
  auto state = std::make_shared<State>(executor);
  // expires_at(min) both wakes a waiter and makes a later wait complete at once: no lost wake-up.
  auto wake = [state] { state->wake.expires_at(boost::asio::steady_timer::time_point::min()); };
  boost::asio::co_spawn(
      executor,
      [state, wake, sandbox, op = std::move(op)]() mutable -> awaitable<void> {
        try {
          state->value.emplace(co_await std::move(op));
        } catch (...) {
          state->error = std::current_exception();
        }
        state->done = true;
        wake();
      },
      boost::asio::detached);
  std::stop_callback on_stop(stop, [executor, wake] { boost::asio::post(executor, wake); });
  boost::system::error_code ignored;
  while (!state->done && !stop.stop_requested())
    co_await state->wake.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ignored));
  if (!state->done) throw Cancelled();
  if (state->error) std::rethrow_exception(state->error);
  co_return std::move(*state->value);
}

/// Errors that answer the model's own input (a missing file, a path outside the work
/// directory, a program over its time): shown to it so it can correct the call. Anything else
/// is the framework's fixed "sandbox unavailable" sentence, the detail in the logs (C-119).
ToolResult shown(const std::exception& e) {
  return ToolResult::error(std::string("Error: ") + e.what(), kLibraryAuthoredLabels);
}

template <class F>
awaitable<ToolResult> answering_input_errors(F body) {
  std::optional<ToolResult> refused;
  try {
    co_return co_await body();
  } catch (const TimeoutError& e) {
    refused = ToolResult::error(std::string("Error: the program ran past its timeout: ") + e.what(),
                                kLibraryAuthoredLabels);
  } catch (const ValueError& e) {  // a path outside the work directory, a link on the way
    refused = shown(e);
  } catch (const FileNotFoundError& e) {
    refused = shown(e);
  } catch (const IsADirectoryError& e) {
    refused = shown(e);
  } catch (const NotADirectoryError& e) {
    refused = shown(e);
  } catch (const SandboxOutputError& e) {  // an output missing, over a cap, not a regular file
    refused = shown(e);
  }
  co_return std::move(*refused);
}

std::chrono::milliseconds timeout_of(const json& args) {
  return std::chrono::seconds(args.value("timeout_seconds", 60));
}

ToolResult exec_result(const ExecResult& r) {
  ToolResult out;
  std::string text = "exit code " + std::to_string(r.exit_code);
  if (!r.stdout_bytes.empty()) text += "\n--- stdout ---\n" + r.stdout_text();
  if (!r.stderr_bytes.empty()) text += "\n--- stderr ---\n" + r.stderr_text();
  out.content.push_back(ContentItem::text(std::move(text)));  // guest output: untrusted, stamped
  out.structured = json{{"exit_code", r.exit_code}, {"stdout", r.stdout_text()}, {"stderr", r.stderr_text()}};
  out.is_error = r.exit_code != 0;
  return out;
}

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    i += n;
  }
  return true;
}

json timeout_schema() {
  return {{"type", "integer"},
          {"minimum", 1},
          {"maximum", kMaxTimeoutSeconds},
          {"description", "Seconds before the program is stopped (default 60)"}};
}

}  // namespace

std::vector<SandboxedTool> make_toolset(std::shared_ptr<SandboxRouter> router, const SandboxSpec& spec,
                                        const ToolsetOptions& options) {
  CallerContext context;
  context.current_scope = [scope = options.scope] { return scope; };
  context.current_thread_id = [thread = options.thread] { return std::optional<std::string>(thread); };

  auto attach = [&](std::string name, SandboxedToolOptions tool_options, ToolBody body, bool with_sink) {
    tool_options.cleanup = options.cleanup;
    if (with_sink) tool_options.output_sink = options.sink;
    // Every tool of the session shares the spec, so every tool must be attachable with the
    // sink the spec needs (C-118): the sink goes to all of them.
    if (!tool_options.output_sink && spec_lands_artifacts(spec)) tool_options.output_sink = options.sink;
    return sandboxed_tool(std::move(body), router, context, options.agent, spec, std::move(name),
                          std::move(tool_options));
  };

  std::vector<SandboxedTool> tools;
  auto add = [&](std::vector<SandboxedTool> attached) {
    for (auto& t : attached) tools.push_back(std::move(t));
  };

  {
    SandboxedToolOptions o;
    o.description =
        "Run a program in the sandbox: `command` is a shell line run by sh -c, or `argv` a program and its "
        "arguments run without a shell. Runs in the sandbox's work directory (or `working_directory`, relative "
        "to it). Returns the exit code, stdout and stderr.";
    o.input_schema = {{"type", "object"},
                      {"properties",
                       {{"command", {{"type", "string"}, {"minLength", 1}, {"description", "A shell command line"}}},
                        {"argv",
                         {{"type", "array"},
                          {"items", {{"type", "string"}}},
                          {"minItems", 1},
                          {"description", "A program and its arguments, run without a shell"}}},
                        {"working_directory",
                         {{"type", "string"}, {"description", "Relative to the work directory (default \".\")"}}},
                        {"timeout_seconds", timeout_schema()}}},
                      {"oneOf", json::array({json{{"required", {"command"}}}, json{{"required", {"argv"}}}})},
                      {"additionalProperties", false}};
    o.annotations = {.title = "Run a command", .read_only_hint = false, .destructive_hint = true,
                     .idempotent_hint = false, .open_world_hint = false};
    add(attach("run_command", std::move(o),
               [](SandboxToolSession session, json args) -> awaitable<ToolResult> {
                 co_return co_await answering_input_errors([&]() -> awaitable<ToolResult> {
                   auto sandbox = co_await session.acquire();
                   if (!sandbox) co_return ToolResult::error(sandbox.refusal());
                   Command command = args.contains("argv") ? Command(args["argv"].get<std::vector<std::string>>())
                                                           : Command(args["command"].get<std::string>());
                   const std::string wd = args.value("working_directory", std::string("."));
                   const auto timeout = timeout_of(args);
                   auto result = co_await until_stopped(session.stop_token(), *sandbox,
                                                        (*sandbox)->exec(std::move(command), wd, timeout));
                   co_return exec_result(result);
                 });
               },
               false));
  }
  {
    SandboxedToolOptions o;
    o.description =
        "Write a file in the sandbox, relative to its work directory (parents are created; an existing file is "
        "replaced). `content` is the file's text.";
    o.input_schema = {{"type", "object"},
                      {"properties",
                       {{"path", {{"type", "string"}, {"minLength", 1}}},
                        {"content", {{"type", "string"}}}}},
                      {"required", {"path", "content"}},
                      {"additionalProperties", false}};
    o.annotations = {.title = "Write a file", .read_only_hint = false, .destructive_hint = true,
                     .idempotent_hint = true, .open_world_hint = false};
    add(attach("write_file", std::move(o),
               [](SandboxToolSession session, json args) -> awaitable<ToolResult> {
                 co_return co_await answering_input_errors([&]() -> awaitable<ToolResult> {
                   auto sandbox = co_await session.acquire();
                   if (!sandbox) co_return ToolResult::error(sandbox.refusal());
                   const std::string path = args["path"].get<std::string>();
                   std::string content = args["content"].get<std::string>();
                   const std::size_t bytes = content.size();
                   co_await (*sandbox)->write_file(path, std::move(content), ".");
                   co_return ToolResult::text("wrote " + std::to_string(bytes) + " bytes to " + path,
                                              kLibraryAuthoredLabels);
                 });
               },
               false));
  }
  {
    SandboxedToolOptions o;
    o.description =
        "Read a file from the sandbox, relative to its work directory. Text comes back as text, other bytes as a "
        "base64 resource. Refused, never cut, over `max_bytes` (default 1 MiB).";
    o.input_schema = {{"type", "object"},
                      {"properties",
                       {{"path", {{"type", "string"}, {"minLength", 1}}},
                        {"max_bytes", {{"type", "integer"}, {"minimum", 0}, {"maximum", 16 << 20}}}}},
                      {"required", {"path"}},
                      {"additionalProperties", false}};
    o.annotations = {.title = "Read a file", .read_only_hint = true, .destructive_hint = false,
                     .idempotent_hint = true, .open_world_hint = false};
    add(attach("read_file", std::move(o),
               [](SandboxToolSession session, json args) -> awaitable<ToolResult> {
                 co_return co_await answering_input_errors([&]() -> awaitable<ToolResult> {
                   auto sandbox = co_await session.acquire();
                   if (!sandbox) co_return ToolResult::error(sandbox.refusal());
                   const std::int64_t cap = args.value("max_bytes", std::int64_t{1} << 20);
                   std::string content = co_await (*sandbox)->read_file(args["path"].get<std::string>(), ".", cap);
                   ToolResult r;
                   if (valid_utf8(content)) r.content.push_back(ContentItem::text(std::move(content)));
                   else r.content.push_back(ContentItem::bytes(std::move(content), "application/octet-stream"));
                   co_return r;
                 });
               },
               false));
  }
  if (!spec.declared_outputs().empty()) {
    SandboxedToolOptions o;
    o.description = "Collect the workload's declared outputs from the sandbox onto the host (--out) and link them.";
    o.input_schema = {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}};
    o.annotations = {.title = "Collect outputs", .read_only_hint = true, .destructive_hint = false,
                     .idempotent_hint = true, .open_world_hint = false};
    add(attach("collect_outputs", std::move(o),
               [](SandboxToolSession session, json) -> awaitable<ToolResult> {
                 co_return co_await answering_input_errors([&]() -> awaitable<ToolResult> {
                   auto sandbox = co_await session.acquire();
                   if (!sandbox) co_return ToolResult::error(sandbox.refusal());
                   const auto landed = co_await collect_outputs(**sandbox, session.spec(), session.output_sink());
                   ToolResult r;
                   for (const auto& a : landed) r.content.push_back(ContentItem::link(a));
                   if (landed.empty()) r = ToolResult::text("no outputs were collected", kLibraryAuthoredLabels);
                   co_return r;
                 });
               },
               true));
  }
  if (options.run_code) {
    SandboxedToolOptions o;
    o.description = "Run a program in the backend's runtime (e.g. Python source) and return its output.";
    o.input_schema = {{"type", "object"},
                      {"properties", {{"code", {{"type", "string"}, {"minLength", 1}}}, {"timeout_seconds", timeout_schema()}}},
                      {"required", {"code"}},
                      {"additionalProperties", false}};
    o.annotations = {.title = "Run code", .read_only_hint = false, .destructive_hint = true,
                     .idempotent_hint = false, .open_world_hint = false};
    add(attach("run_code", std::move(o),
               [](SandboxToolSession session, json args) -> awaitable<ToolResult> {
                 co_return co_await answering_input_errors([&]() -> awaitable<ToolResult> {
                   auto sandbox = co_await session.acquire();
                   if (!sandbox) co_return ToolResult::error(sandbox.refusal());
                   auto result = co_await until_stopped(
                       session.stop_token(), *sandbox,
                       (*sandbox)->run_code(args["code"].get<std::string>(), timeout_of(args)));
                   co_return exec_result(result);
                 });
               },
               false));
  }
  return tools;
}

}  // namespace maf::sandbox::mcp
