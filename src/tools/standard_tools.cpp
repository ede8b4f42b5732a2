// The standard tools (standard_tools.hpp, docs/tools.md "The standard tools"): run_command,
// write_file, read_file, list_files, collect_outputs and run_code, each a sandboxed_tool. The
// MCP server (src/cli/mcp/tools.cpp) serves these same tools.
#include "maf/sandbox/standard_tools.hpp"

#include <optional>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/host.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sink.hpp"

namespace maf::sandbox {

namespace {

using boost::asio::awaitable;
using nlohmann::json;

constexpr int kMaxTimeoutSeconds = 3600;

std::chrono::milliseconds timeout_of(const json& args) { return std::chrono::seconds(args.value("timeout_seconds", 60)); }

/// A program's result: a non-zero exit is an is_error result the model reads (it answers the
/// model's command), with the exit code, stdout and stderr.
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

/// A program past its timeout answers the model's own call: say so in words it can act on
/// (every other input error is ToolErrors::AsResults' "Error: <message>").
template <class F>
awaitable<ToolResult> explaining_timeouts(F body) {
  std::optional<ToolResult> timed_out;
  try {
    co_return co_await body();
  } catch (const TimeoutError& e) {
    timed_out = ToolResult::error(std::string("Error: the program ran past its timeout: ") + e.what(),
                                  kLibraryAuthoredLabels);
  }
  co_return std::move(*timed_out);
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

ToolAnnotations annotations(const char* title, bool read_only, bool idempotent) {
  return {.title = title, .read_only_hint = read_only, .destructive_hint = !read_only, .idempotent_hint = idempotent,
          .open_world_hint = false};
}

awaitable<ToolResult> run_command(SandboxToolSession session, json args) {
  co_return co_await explaining_timeouts([&]() -> awaitable<ToolResult> {
    auto sandbox = co_await session.acquire();
    if (!sandbox) co_return ToolResult::error(sandbox.refusal());
    Command command = args.contains("argv") ? Command(args["argv"].get<std::vector<std::string>>())
                                            : Command(args["command"].get<std::string>());
    std::string wd = args.value("working_directory", std::string("."));
    const auto timeout = timeout_of(args);
    // AGENT-7: a stopped call kills the program's group (or escalates the rung) and throws
    // Cancelled from here, so the rung runs after the program is gone.
    auto result = co_await session.exec(**sandbox, std::move(command), std::move(wd), timeout);
    co_return exec_result(result);
  });
}

awaitable<ToolResult> write_file(SandboxToolSession session, json args) {
  auto sandbox = co_await session.acquire();
  if (!sandbox) co_return ToolResult::error(sandbox.refusal());
  const std::string path = args["path"].get<std::string>();
  std::string content = args["content"].get<std::string>();
  const std::size_t bytes = content.size();
  co_await (*sandbox)->write_file(path, std::move(content), ".");
  co_return ToolResult::text("wrote " + std::to_string(bytes) + " bytes to " + path, kLibraryAuthoredLabels);
}

awaitable<ToolResult> read_file(SandboxToolSession session, json args) {
  auto sandbox = co_await session.acquire();
  if (!sandbox) co_return ToolResult::error(sandbox.refusal());
  const std::int64_t cap = args.value("max_bytes", std::int64_t{1} << 20);
  std::string content = co_await (*sandbox)->read_file(args["path"].get<std::string>(), ".", cap);
  ToolResult r;
  if (valid_utf8(content)) r.content.push_back(ContentItem::text(std::move(content)));
  else r.content.push_back(ContentItem::bytes(std::move(content), "application/octet-stream"));
  co_return r;
}

awaitable<ToolResult> list_files(SandboxToolSession session, json args) {
  auto sandbox = co_await session.acquire();
  if (!sandbox) co_return ToolResult::error(sandbox.refusal());
  const auto entries = co_await (*sandbox)->list_dir(args.value("path", std::string(".")), ".");
  std::string text;
  json listed = json::array();
  for (const auto& e : entries) {
    if (e.path.empty()) continue;
    const bool dir = e.kind == EntryKind::Directory;
    text += e.path + (dir ? "/" : "") + "\n";
    json item{{"path", e.path}, {"kind", std::string(to_string(e.kind))}};
    if (e.size_bytes) item["size_bytes"] = *e.size_bytes;
    listed.push_back(std::move(item));
  }
  ToolResult r = ToolResult::text(text.empty() ? std::string("(empty)") : std::move(text));
  r.structured = json{{"entries", std::move(listed)}};
  co_return r;
}

awaitable<ToolResult> collect(SandboxToolSession session, json) {
  auto sandbox = co_await session.acquire();
  if (!sandbox) co_return ToolResult::error(sandbox.refusal());
  const auto landed = co_await collect_outputs(**sandbox, session.spec(), session.output_sink());
  ToolResult r;
  for (const auto& a : landed) r.content.push_back(ContentItem::link(a));
  if (landed.empty()) r = ToolResult::text("no outputs were collected", kLibraryAuthoredLabels);
  co_return r;
}

awaitable<ToolResult> run_code(SandboxToolSession session, json args) {
  co_return co_await explaining_timeouts([&]() -> awaitable<ToolResult> {
    auto sandbox = co_await session.acquire();
    if (!sandbox) co_return ToolResult::error(sandbox.refusal());
    std::string code = args["code"].get<std::string>();
    auto result = co_await session.run_code(**sandbox, std::move(code), timeout_of(args));
    co_return exec_result(result);
  });
}

}  // namespace

std::vector<SandboxedTool> standard_tools(std::shared_ptr<SandboxRouter> router, CallerContext context,
                                          const SandboxSpec& spec, StandardToolsOptions options) {
  if (!router || !router->enabled())
    throw NoSandboxBackend(std::string("standard_tools: ") + (router ? "the router is disabled" : "no router was given") +
                           ", so there is no sandbox to offer the tools over");
  const auto declared = router->select(spec)->declarations().capabilities;
  std::vector<SandboxedTool> tools;
  auto attach = [&](std::string name, SandboxedToolOptions o, ToolBody body) {
    o.cleanup.rung = options.cleanup;
    o.errors = options.errors;
    // Every tool shares the spec, so every tool is attached with the sink it needs (C-118).
    o.output_sink = options.output_sink;
    if (name == "run_command") o.host_tools = options.host_tools;
    tools.push_back(sandboxed_tool(std::move(body), router, context, options.agent, spec, std::move(name), std::move(o)));
  };

  attach("run_command",
         {.description =
              "Run a program in the sandbox: `command` is a shell line run by sh -c, or `argv` a program and its "
              "arguments run without a shell. Runs in the sandbox's work directory (or `working_directory`, relative "
              "to it). Returns the exit code, stdout and stderr.",
          .input_schema = {{"type", "object"},
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
                           {"additionalProperties", false}},
          .annotations = annotations("Run a command", false, false)},
         run_command);
  attach("write_file",
         {.description = "Write a file in the sandbox, relative to its work directory (parents are created; an existing "
                         "file is replaced). `content` is the file's text.",
          .input_schema = {{"type", "object"},
                           {"properties", {{"path", {{"type", "string"}, {"minLength", 1}}}, {"content", {{"type", "string"}}}}},
                           {"required", {"path", "content"}},
                           {"additionalProperties", false}},
          .annotations = annotations("Write a file", false, true)},
         write_file);
  attach("read_file",
         {.description = "Read a file from the sandbox, relative to its work directory. Text comes back as text, other "
                         "bytes as a base64 resource. Refused, never cut, over `max_bytes` (default 1 MiB).",
          .input_schema = {{"type", "object"},
                           {"properties",
                            {{"path", {{"type", "string"}, {"minLength", 1}}},
                             {"max_bytes", {{"type", "integer"}, {"minimum", 0}, {"maximum", 16 << 20}}}}},
                           {"required", {"path"}},
                           {"additionalProperties", false}},
          .annotations = annotations("Read a file", true, true)},
         read_file);
  if (options.list_files && declared.contains(Capability::FilesList))
    attach("list_files",
           {.description = "List one directory of the sandbox, relative to its work directory (default: the work "
                           "directory itself); directories end with '/'.",
            .input_schema = {{"type", "object"},
                             {"properties", {{"path", {{"type", "string"}, {"minLength", 1}}}}},
                             {"additionalProperties", false}},
            .annotations = annotations("List files", true, true)},
           list_files);
  if (!spec.declared_outputs().empty())
    attach("collect_outputs",
           {.description = "Collect the workload's declared outputs from the sandbox onto the host and link them.",
            .input_schema = {{"type", "object"}, {"properties", json::object()}, {"additionalProperties", false}},
            .annotations = annotations("Collect outputs", true, true)},
           collect);
  if (options.run_code.value_or(declared.contains(Capability::RunCode)))
    attach("run_code",
           {.description = "Run a program in the backend's runtime (e.g. Python source) and return its output.",
            .input_schema = {{"type", "object"},
                             {"properties",
                              {{"code", {{"type", "string"}, {"minLength", 1}}}, {"timeout_seconds", timeout_schema()}}},
                             {"required", {"code"}},
                             {"additionalProperties", false}},
            .annotations = annotations("Run code", false, false)},
           run_code);
  return tools;
}

std::vector<SandboxedTool> standard_tools(SandboxHost& host, CallerContext context, const SandboxSpec& spec,
                                          StandardToolsOptions options) {
  // Not owned: the host outlives its tools (host.hpp).
  std::shared_ptr<SandboxRouter> router(std::shared_ptr<void>(), &host.router());
  return standard_tools(std::move(router), std::move(context), spec, std::move(options));
}

SandboxSpec standard_tools_spec(std::string kind) {
  return SandboxSpec({.kind = std::move(kind),
                      .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                                Capability::FilesList}});
}

}  // namespace maf::sandbox
