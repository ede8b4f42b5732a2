// A host loop for OpenAI-style tool calls: read `{"id","name","arguments"}` JSON lines on
// stdin, serve each through one sandboxed shell tool, print each result as a tool message.
//
//   tool_calls [--backend process|docker] [--cleanup dispose|reclaim] < calls.jsonl
//
// The tool checks the arguments against its schema before anything runs, admits the call
// for its (key, kind), gives the body a private call directory (guest_call_path) and, after
// the call, runs the cleanup rung: DISPOSE (the default: a fresh sandbox per call) or
// RECLAIM (the host's explicit opt-in: the sandbox stays, the call's directory is removed).
// At the end the sample checks, from the backend, that the rung did what it says.
#include <maf/sandbox/async.hpp>
#include <maf/sandbox/registry.hpp>
#include <maf/sandbox/sandboxed_tool.hpp>
#include <maf/sandbox/sync.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <string>

using namespace maf::sandbox;

namespace {

const nlohmann::json kShellSchema = {
    {"type", "object"},
    {"properties", {{"command", {{"type", "string"}, {"minLength", 1}, {"description", "a POSIX shell command"}}}}},
    {"required", {"command"}},
    {"additionalProperties", false}};

// The tool body: a kind's code. It never sees a key field from the model; it runs the command
// in this call's own directory and says which sandbox served it (to show the rung).
boost::asio::awaitable<ToolResult> run_shell(SandboxToolSession session, nlohmann::json args) {
  auto sandbox = co_await session.acquire();
  if (!sandbox) co_return ToolResult::error(sandbox.refusal());  // a fixed sentence (C-119)
  const std::string dir = session.guest_call_path();            // e.g. "3f2a9c0d1b4e", relative
  co_await (*sandbox)->exec("mkdir -p " + dir, ".");
  const ExecResult r = co_await (*sandbox)->exec(args["command"].get<std::string>(), dir, std::chrono::seconds(30));
  ToolResult result = ToolResult::text(r.stdout_text() + r.stderr_text());  // guest output: untrusted
  result.is_error = r.exit_code != 0;
  result.structured = nlohmann::json{{"exit_code", r.exit_code}, {"call_dir", dir}, {"instance", (*sandbox)->instance_id()}};
  co_return result;
}

struct Args {
  std::string backend = "process";
  Cleanup cleanup = Cleanup::Dispose;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--backend") a.backend = argv[i + 1];
    else if (flag == "--cleanup") a.cleanup = parse_cleanup(argv[i + 1]);
    else throw ValueError("unknown flag '" + flag + "' (use --backend and --cleanup)");
  }
  if (a.backend != "process" && a.backend != "docker")
    throw ValueError("--backend must be process or docker, got '" + a.backend + "'");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    nlohmann::json config = nlohmann::json::object();
    Isolation floor = Isolation::OsProcess;
    SandboxSpec::Fields fields{.kind = "shell", .requires_capabilities = {Capability::Exec}};
    if (args.backend == "process") {
      config["root"] = (std::filesystem::temp_directory_path() / ("maf-sample-tools-" + std::to_string(::getpid()))).string();
    } else {
      if (const char* client = std::getenv("MAF_SANDBOX_DOCKER"); client && *client) config["docker_path"] = client;
      floor = Isolation::Container;
      fields.image = "maf-sandbox-test/busybox:1";  // scripts/docker-test-images
    }
    auto backend = PluginRegistry::global().create(args.backend, config);
    // Below the default floor (microvm): a host lowers it on purpose.
    auto router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{backend},
                                                  RouterOptions::lowered_floor(floor, LowerIsolationFloor{}));

    // Who is calling comes from the host's request context, never from the model.
    const std::string scope = "sample-tools-" + std::to_string(::getpid());
    CallerContext context{.current_scope = [scope] { return scope; },
                          .current_thread_id = [] { return std::optional<std::string>("conversation-1"); },
                          .list_files = {}};
    SandboxedToolOptions options;
    options.description = "Run a shell command in a sandbox; each call gets a fresh directory.";
    options.input_schema = kShellSchema;
    options.cleanup.rung = args.cleanup;
    options.cleanup.on_reclaim_failure = [](ReclaimFailure f) -> boost::asio::awaitable<void> {
      std::cerr << "not reclaimed: " << f.path << " in " << to_string(f.key) << ": " << f.reason << "\n";
      co_return;
    };
    std::optional<SandboxedTool> attached;
    try {
      attached = sandboxed_tool(run_shell, router, context, "agent-1", SandboxSpec(fields), "shell", options);
    } catch (const SandboxCapabilityNotSupported& refused) {
      // RECLAIM needs the backend to declare it: refused at attach, never downgraded.
      std::cout << "attach refused: " << refused.what() << "\n";
      return 4;
    }
    const SandboxedTool& shell = *attached;
    std::cerr << "serving tool '" << shell.definition().name << "' on backend '" << backend->name() << "', cleanup "
              << to_string(shell.cleanup()) << "\n";
    std::cout << to_openai_json(shell.definition()).dump() << "\n";

    BlockingRunner run;
    std::set<std::string> instances;
    int served = 0, acquired = 0;
    for (std::string line; std::getline(std::cin, line);) {
      if (line.empty()) continue;
      ToolCall call;
      try {
        call = parse_tool_call(line);
      } catch (const ValueError& e) {
        std::cout << nlohmann::json{{"error", e.what()}}.dump() << "\n";
        continue;
      }
      // A body's error is already a result the model can read (ToolErrors::AsResults).
      ToolResult result = run([&] { return shell.invoke(call); });
      if (result.structured) {
        instances.insert((*result.structured)["instance"].get<std::string>());
        ++acquired;
      }
      ++served;
      std::cout << to_json(call, result).dump() << "\n";
    }

    // What the rung did, asked of the backend.
    bool ok = true;
    const SandboxKey key{scope, "conversation-1", "agent-1", ""};
    if (shell.cleanup() == Cleanup::Reclaim) {
      // One sandbox served every call, and none of their directories is left in it.
      auto sandbox = run([&] { return router->acquire(key, SandboxSpec(fields)); });
      const std::string left = run([&] { return sandbox->exec("ls -A | wc -l", "."); }).stdout_text();
      ok = instances.size() <= 1 && left == "0\n";
      std::cerr << "RECLAIM: " << instances.size() << " sandbox(es) served " << served << " call(s); entries left "
                << "in its base: " << left;
    } else {
      // Every call that reached a sandbox had a fresh one.
      ok = static_cast<int>(instances.size()) == acquired;
      std::cerr << "DISPOSE: " << instances.size() << " sandbox(es) for " << served << " call(s)\n";
    }
    const ScopePurge purge = run([&] { return router->dispose_scope(scope, "conversation-1"); });
    const int expected_left = shell.cleanup() == Cleanup::Reclaim ? 1 : 0;
    ok = ok && purge.disposed == expected_left && !purge.undisposed;
    std::cerr << "at the end the conversation held " << purge.disposed << " sandbox(es) (expected " << expected_left
              << ")\n";
    return ok ? 0 : 1;
  } catch (const maf::Error& e) {
    std::cerr << "failed: " << e.what() << "\n";
    return 2;
  }
}
