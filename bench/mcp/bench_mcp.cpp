// bench_mcp [RUNS]: a `tools/call` of run_command {argv: ["true"]} through `maf-sandbox mcp`
// on stdio (write the request line, read the answer line) beside the same sandboxed tool
// invoked through the library in this process — both on the process backend with
// `--cleanup reclaim`, so each call is an exec plus the call directory's removal, and both
// alternate within one run. Target (issue 30): the round trip within 1.1x the direct call
// plus under 1 ms.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "../common/harness.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sync.hpp"
#include "mcp/tools.hpp"

namespace {

using namespace maf::sandbox;
using maf_bench::median;
using maf_bench::timed;

/// `maf-sandbox mcp` as a child with a pipe each way; one JSON line per message.
class McpChild {
public:
  explicit McpChild(const std::vector<std::string>& argv) {
    int in[2], out[2];
    maf_bench::require(::pipe(in) == 0 && ::pipe(out) == 0, "pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::close(in[1]);
      ::close(out[0]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = ::fdopen(out[0], "r");
  }
  ~McpChild() {
    ::close(to_);  // the server disposes its conversation and exits
    int status = 0;
    ::waitpid(pid_, &status, 0);
    std::fclose(from_);
  }
  nlohmann::json ask(const nlohmann::json& request) {
    const std::string line = request.dump() + "\n";
    maf_bench::require(::write(to_, line.data(), line.size()) == static_cast<ssize_t>(line.size()), "write");
    char* answer = nullptr;
    std::size_t cap = 0;
    const ssize_t n = ::getline(&answer, &cap, from_);
    maf_bench::require(n > 0, "the server closed its stdout");
    nlohmann::json j = nlohmann::json::parse(std::string(answer, static_cast<std::size_t>(n)));
    std::free(answer);
    return j;
  }

private:
  pid_t pid_ = -1;
  int to_ = -1;
  std::FILE* from_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 30;
  const auto scratch = std::filesystem::temp_directory_path() / ("maf-bench-mcp-" + std::to_string(::getpid()));
  std::filesystem::create_directories(scratch);
  std::filesystem::permissions(scratch, std::filesystem::perms::owner_all | std::filesystem::perms::group_exec |
                                            std::filesystem::perms::others_exec);
  const auto root = scratch / "root";
  const auto spec_file = scratch / "spec.json";
  const auto config_file = scratch / "config.json";
  std::ofstream(spec_file) << R"({"kind": "bench-mcp", "requires": ["exec", "files_in"]})";
  std::ofstream(config_file) << nlohmann::json{{"root", root.string()}}.dump();

  process::ProcessBackendConfig config;
  config.root = root;
  std::shared_ptr<SandboxBackend> backend = process::make_process_backend(config);
  auto router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{backend},
                                                RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{}));
  const SandboxSpec spec({.kind = "bench-mcp", .requires_capabilities = {Capability::Exec, Capability::FilesIn}});
  const auto tools = mcp::make_toolset(router, spec, {.scope = "bench", .thread = "direct", .cleanup = Cleanup::Reclaim});
  const SandboxedTool* run_command = nullptr;
  for (const auto& t : tools)
    if (t.definition().name == "run_command") run_command = &t;
  maf_bench::require(run_command != nullptr, "no run_command tool");

  McpChild server({MAF_BENCH_CLI, "mcp", "--backend", "process", "--config", config_file.string(), "--spec",
                   spec_file.string(), "--min-isolation", "none", "--cleanup", "reclaim", "--scope", "bench",
                   "--thread", "over-mcp"});
  server.ask({{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
              {"params", {{"protocolVersion", "2025-11-25"}, {"capabilities", nlohmann::json::object()},
                          {"clientInfo", {{"name", "bench"}, {"version", "0"}}}}}});

  const nlohmann::json arguments{{"argv", {"true"}}};
  BlockingRunner run;
  std::vector<double> direct, over_mcp;
  for (int i = 0; i < runs + 3; ++i) {  // the first three warm both sides (acquire, page cache)
    const double d = timed([&] {
      const ToolResult r = run([&] { return run_command->invoke(ToolCall{"c" + std::to_string(i), "run_command", arguments}); });
      maf_bench::require(!r.is_error, "the direct call failed: " + r.joined_text());
    });
    const double m = timed([&] {
      const nlohmann::json a = server.ask({{"jsonrpc", "2.0"}, {"id", i + 1}, {"method", "tools/call"},
                                           {"params", {{"name", "run_command"}, {"arguments", arguments}}}});
      maf_bench::require(a.contains("result") && !a["result"]["isError"].get<bool>(), "the MCP call failed: " + a.dump());
    });
    if (i >= 3) {
      direct.push_back(d);
      over_mcp.push_back(m);
    }
  }
  run([&] { return router->dispose_scope("bench", "direct"); });
  const double dm = median(direct), mm = median(over_mcp);
  std::printf("| operation | direct, ms | over MCP stdio, ms | ratio | MCP adds, ms | runs |\n|---|---:|---:|---:|---:|---:|\n");
  std::printf("| tools/call run_command `true` (process, reclaim) | %.2f | %.2f | %.2fx | %.2f | %d |\n", dm, mm, mm / dm,
              mm - dm, runs);
  std::printf("\ntarget: over MCP <= 1.1x direct + 1 ms (= %.2f ms): %s\n", 1.1 * dm + 1.0,
              mm <= 1.1 * dm + 1.0 ? "met" : "NOT met");
  return 0;
}
