// `maf-sandbox`: the registry, the router and a backend from the command line (docs/cli.md).
#include <fmt/core.h>

#include <string>
#include <vector>

#include "commands.hpp"
#include "maf/sandbox/version.hpp"

namespace {

using namespace maf::sandbox::cli;

constexpr const char* kUsage = R"(usage: maf-sandbox SUBCOMMAND [options] [--json]

  plugins
      list the backends found (MAF_SANDBOX_PLUGIN_PATH, then the plugin directory)
      and the plugin files that were refused
  check --backend B [--config F] --spec S.json [--min-isolation R]
      would the router let B serve the spec? prints what matched or the refusal
  run --backend B [--config F] [--spec S.json] [--image I] [--put LOCAL=GUEST]...
      [--output PATH]... [--out DIR] [--keep] [--min-isolation R] [--timeout T] [--read-timeout T]
      [--scope S] [--thread T] [--agent A] [--call C] [--events FILE] [--env NAME=VALUE]...
      [--stdin] -- ARGV...
      acquire, write inputs, run ARGV, collect outputs into DIR, dispose unless --keep
      (also when a step failed); without --spec: kind `cli` requiring exec, files_in
      and files_out; --image sets the image, or overrides the spec's for this run;
      --events appends every observer event to FILE as a JSON line; spans are exported
      over OTLP/HTTP JSON when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set;
      --env gives ARGV a variable (off every command line; the spec then requires
      exec_env), --stdin feeds it our own stdin, read whole first (requires exec_stdin)
  dispose-scope --backend B [--config F] --scope S --thread T
      dispose every sandbox of one conversation
  reap --backend B [--config F] (--older-than DURATION | --expired) [--scope S]
      dispose sandboxes older than DURATION (e.g. 90s, 30m, 12h, 7d), or those past
      their spec's ttl or idle timeout (docs/limits.md LIM-7), if B offers it
  mcp --backend B [--config F] [--spec S.json]... [--min-isolation R]
      [--cleanup dispose|reset|reclaim] [--out DIR] [--scope S] [--thread T]
      [--http 127.0.0.1:PORT] [--handle-idle DURATION] [--max-sandboxes N]
      an MCP server on stdio, or Streamable HTTP on loopback: protocol 2026-07-28
      (stateless; sandbox handles from open_sandbox, closed after --handle-idle, default
      10m, at most --max-sandboxes, default 16) and 2025-11-25/2025-06-18 (a session is one
      conversation, disposed when the client goes; --cleanup between its calls); without
      --spec: kind `cli` requiring exec, files_in and files_out, as `run`; a further
      --spec is a workload open_sandbox may name by kind (docs/mcp.md)
  tools --backend B [--config F] [--spec S.json] [--format mcp|openai] [...as mcp]
      print the tool definitions `mcp` serves, as MCP tools or OpenAI function tools

  --min-isolation defaults to microvm. --json prints one JSON object (errors as
  {"error": {"type", "message"}}).
  check, run and mcp also take [--max-identity-scope none|call|sandbox|shared]
  [--credential NAME=env:VARIABLE|NAME=file:PATH]...: a spec's attached credentials
  are refused unless the scope allows them (default none); each one's value is read
  from this host's variable or file when the proxy starts, never printed (docs/cli.md)
exit codes: 0 ok, 1 other, 2 usage or bad input (incl. a config key the backend
            refuses), 3 refused by policy, 4 plugin/backend error, 5 the program
            ran and exited non-zero
)";

std::map<std::string, CommandSpec> command_specs() {
  const OptionSpec json{"json", false};
  const OptionSpec backend{"backend"};
  const OptionSpec config{"config"};
  return {
      {"plugins", {{json}}},
      {"check", {{json, backend, config, {"spec"}, {"min-isolation"}, {"max-identity-scope"}, {"credential", true, true}}}},
      {"run",
       {{json, backend, config, {"spec"}, {"image"}, {"put", true, true}, {"output", true, true}, {"out"},
         {"keep", false}, {"min-isolation"}, {"timeout"}, {"read-timeout"}, {"scope"}, {"thread"}, {"agent"},
         {"call"}, {"events"}, {"env", true, true}, {"stdin", false}, {"max-identity-scope"}, {"credential", true, true}},
        true}},
      {"dispose-scope", {{json, backend, config, {"scope"}, {"thread"}}}},
      {"reap", {{json, backend, config, {"older-than"}, {"expired", false}, {"scope"}}}},
      {"mcp",
       {{json, backend, config, {"spec", true, true}, {"min-isolation"}, {"cleanup"}, {"out"}, {"scope"}, {"thread"},
         {"http"}, {"handle-idle"}, {"max-sandboxes"}, {"max-identity-scope"}, {"credential", true, true}}}},
      {"tools",
       {{json, backend, config, {"spec"}, {"min-isolation"}, {"cleanup"}, {"out"}, {"scope"}, {"thread"}, {"format"}}}},
  };
}

int dispatch(Session& session) {
  const std::string& c = session.args.command;
  if (c == "plugins") return cmd_plugins(session);
  if (c == "check") return cmd_check(session);
  if (c == "run") return cmd_run(session);
  if (c == "dispose-scope") return cmd_dispose_scope(session);
  if (c == "mcp") return cmd_mcp(session);
  if (c == "tools") return cmd_tools(session);
  return cmd_reap(session);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> arguments(argv + 1, argv + argc);
  if (arguments.empty() || arguments[0] == "--help" || arguments[0] == "-h" || arguments[0] == "help") {
    fmt::print(arguments.empty() ? stderr : stdout, "{}", kUsage);
    return arguments.empty() ? kExitUsage : kExitOk;
  }
  if (arguments[0] == "--version") {
    fmt::print("maf-sandbox {}\n", MAF_SANDBOX_VERSION_STRING);
    return kExitOk;
  }
  // Known before parsing, so even a usage error is reported as JSON when asked.
  bool json = false;
  for (const auto& a : arguments) {
    if (a == "--") break;
    json = json || a == "--json";
  }
  Args args;
  try {
    args = parse_args(arguments, command_specs());
  } catch (...) {
    Reporter reporter(json);
    Failure failure = classify(std::current_exception(), Phase::Input);
    reporter.error(failure);
    if (!json) fmt::print(stderr, "run `maf-sandbox --help` for usage\n");
    return failure.exit_code;
  }
  Session session(std::move(args));
  try {
    return dispatch(session);
  } catch (...) {
    Failure failure = classify(std::current_exception(), session.phase);
    session.reporter.error(failure);
    return failure.exit_code;
  }
}
