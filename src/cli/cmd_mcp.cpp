// `maf-sandbox mcp` and `maf-sandbox tools` (docs/mcp.md).
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>

#include "commands.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/version.hpp"
#include "mcp/transports.hpp"

namespace maf::sandbox::cli {

namespace {

std::string random_thread() {
  std::random_device device;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string t = "mcp-";
  for (int i = 0; i < 12; ++i) t += kHex[device() % 16];
  return t;
}

Cleanup cleanup_from(const Args& args) {
  const std::string text = args.get("cleanup").value_or("dispose");
  try {
    return parse_cleanup(text);
  } catch (const ValueError&) {
    throw ValueError("--cleanup: '" + text + "' is not a cleanup rung (dispose, reset or reclaim)");
  }
}

/// Everything both subcommands need, built in the order that makes each failure name its
/// phase: the inputs, the backend, then the policy (attaching the tools runs C-118, the
/// router's checks included).
mcp::ServeOptions prepare(Session& session) {
  const Args& args = session.args;
  const std::vector<std::string> spec_files = args.all("spec");
  mcp::ServeOptions o(spec_files.empty() ? minimal_spec() : load_spec(spec_files.front()));
  std::set<std::string> kinds{o.spec.kind()};
  for (std::size_t i = 1; i < spec_files.size(); ++i) {
    SandboxSpec more = load_spec(spec_files[i]);
    if (!kinds.insert(more.kind()).second)
      throw UsageError("--spec: '" + spec_files[i] + "' has kind '" + more.kind() +
                       "' like another --spec; open_sandbox names specs by kind, so each needs its own");
    o.more_specs.push_back(std::move(more));
  }
  if (const auto idle = args.get("handle-idle")) {
    o.handles.idle_timeout = parse_duration(*idle, "handle-idle");
    if (o.handles.idle_timeout.count() <= 0) throw UsageError("--handle-idle: '" + *idle + "' must be positive");
  }
  if (const auto cap = args.get("max-sandboxes")) {
    if (cap->empty() || cap->size() > 6 || cap->find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(*cap) == 0)
      throw UsageError("--max-sandboxes: '" + *cap + "' is not a positive count");
    o.handles.cap = std::stoul(*cap);
  }
  const Isolation floor = min_isolation(args);
  const RouterOptions policy = router_options(args, floor);  // bad input refused before any backend
  o.toolset.scope = args.get("scope").value_or("mcp");
  o.toolset.thread = args.get("thread").value_or(random_thread());
  o.toolset.cleanup = cleanup_from(args);
  if (const auto out = args.get("out")) {
    const auto dir = std::filesystem::absolute(*out);
    std::filesystem::create_directories(dir);
    o.toolset.sink = make_file_system_sink(dir);
  } else if (spec_lands_artifacts(o.spec) ||
             std::any_of(o.more_specs.begin(), o.more_specs.end(), [](const auto& s) { return spec_lands_artifacts(s); })) {
    throw UsageError("kind '" + o.spec.kind() + "' declares outputs that land; give --out DIR");
  }
  const nlohmann::json config = backend_config(args);
  auto backend = create_backend(session, config);
  o.toolset.run_code = backend->declarations().capabilities.contains(Capability::RunCode);
  session.phase = Phase::Policy;
  o.router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{backend},
                                             policy);
  std::vector<SandboxSpec> served{o.spec};
  served.insert(served.end(), o.more_specs.begin(), o.more_specs.end());
  // CRED-5 before the sources: a credential the policy refuses is a refusal, not a usage error.
  for (const auto& spec : served)
    if (!spec.attached_identity().empty()) o.router->ensure_can_serve(spec);
  attach_credentials(args, *o.router, served);
  o.info.version = MAF_SANDBOX_VERSION_STRING;
  o.info.instructions =
      "Tools run in a sandbox on backend '" + backend->name() + "' (isolation " + backend->isolation() +
      "), workload kind '" + o.spec.kind() + "'. File paths are relative to the sandbox's work directory.";
  return o;
}

}  // namespace

int cmd_mcp(Session& session) {
  mcp::ServeOptions options = prepare(session);
  // The policy check happens here, before a single message is read: a refusal exits with the
  // typed error on stderr and the client never gets an initialize answer.
  const auto tools = mcp::make_toolset(options.router, options.spec, options.toolset);
  if (tools.empty()) throw NoSandboxBackend("mcp: no tool could be attached (the router has no backend)");
  for (const auto& more : options.more_specs) (void)mcp::make_toolset(options.router, more, options.toolset);
  session.phase = Phase::Work;
  fmt::print(stderr,
             "maf-sandbox mcp: {} tool(s) on backend '{}', cleanup {}; scope '{}' thread '{}' "
             "(`maf-sandbox dispose-scope --scope {} --thread {}` finds anything a killed server left)\n",
             tools.size(), options.router->backends().front()->name(), to_string(options.toolset.cleanup),
             options.toolset.scope, options.toolset.thread, options.toolset.scope, options.toolset.thread);
  if (const auto http = session.args.get("http")) {
    const auto colon = http->rfind(':');
    if (colon == std::string::npos) throw UsageError("--http takes HOST:PORT, e.g. 127.0.0.1:0");
    std::string host = http->substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const std::string port_text = http->substr(colon + 1);
    if (port_text.empty() || port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(port_text) > 65535)
      throw UsageError("--http: '" + port_text + "' is not a port");
    return mcp::serve_http(options, host, static_cast<unsigned short>(std::stoul(port_text)), [&](unsigned short port) {
      fmt::print(stderr, "maf-sandbox mcp: listening on http://{}:{}/mcp\n",
                 host.find(':') != std::string::npos ? "[" + host + "]" : host, port);
      std::fflush(stderr);
    });
  }
  return mcp::serve_stdio(options);
}

int cmd_tools(Session& session) {
  const std::string format = session.args.get("format").value_or("mcp");
  if (format != "mcp" && format != "openai")
    throw UsageError("--format: '" + format + "' is not a tool format (mcp or openai)");
  mcp::ServeOptions options = prepare(session);
  const auto tools = mcp::make_toolset(options.router, options.spec, options.toolset);
  // --format mcp is exactly what `mcp` lists: each tool with its `sandbox` argument, and the
  // handle tools; an OpenAI host calls the library itself, where a conversation keeps state.
  nlohmann::json list = nlohmann::json::array();
  if (format == "mcp") {
    std::vector<SandboxSpec> specs{options.spec};
    specs.insert(specs.end(), options.more_specs.begin(), options.more_specs.end());
    list = mcp::tool_list_json(tools, specs);
  } else {
    for (const auto& t : tools) list.push_back(to_openai_json(t.definition()));
  }
  fmt::print("{}\n", list.dump(2));
  return kExitOk;
}

}  // namespace maf::sandbox::cli
