// bench_mcp [RUNS]: a `tools/call` of run_command {argv: ["true"]} through `maf-sandbox mcp`
// on stdio (write the request line, read the answer line) beside the same sandboxed tool
// invoked through the library in this process — both on the process backend with
// `--cleanup reclaim`, so each call is an exec plus the call directory's removal, and both
// alternate within one run. Target (issue 30): the round trip within 1.1x the direct call
// plus under 1 ms. Then (issue 51) the 2026-07-28 era: the same call with a sandbox handle over
// stdio and over Streamable HTTP (goals: at most 2 ms and 3 ms over the direct call), a call
// without a handle (a fresh sandbox each time) against one with (the reason handles exist),
// and 32 concurrent HTTP clients, each with its own handle, counting errors.
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <regex>
#include <thread>

#include "../common/harness.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sync.hpp"
#include "mcp/tools.hpp"

#include <csignal>
#include <fstream>
#include <sys/wait.h>

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

  /// The server's stderr is inherited; for --http the caller reads the port from a file.
private:
  pid_t pid_ = -1;
  int to_ = -1;
  std::FILE* from_ = nullptr;
};

const nlohmann::json kEnvelope{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                               {"io.modelcontextprotocol/clientCapabilities", nlohmann::json::object()}};

/// A 2026-07-28 tools/call of run_command `true`, in `sandbox` when one is given.
nlohmann::json modern_call(int id, const std::string& sandbox) {
  nlohmann::json arguments{{"argv", {"true"}}};
  if (!sandbox.empty()) arguments["sandbox"] = sandbox;
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", "run_command"}, {"arguments", arguments}, {"_meta", kEnvelope}}}};
}

nlohmann::json open_sandbox_request(int id) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"name", "open_sandbox"}, {"arguments", nlohmann::json::object()}, {"_meta", kEnvelope}}}};
}

void require_ok(const nlohmann::json& a, const std::string& what) {
  maf_bench::require(a.contains("result") && !a["result"]["isError"].get<bool>(), what + " failed: " + a.dump());
}

/// One keep-alive connection to `maf-sandbox mcp --http`, POSTing 2026-07-28 requests with
/// the headers the binding wants.
class HttpClient {
public:
  explicit HttpClient(unsigned short port) : socket_(io_) {
    boost::asio::ip::tcp::endpoint at(boost::asio::ip::make_address("127.0.0.1"), port);
    socket_.connect(at);
  }
  nlohmann::json ask(const nlohmann::json& request) {
    namespace http = boost::beast::http;
    http::request<http::string_body> req{http::verb::post, "/mcp", 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json, text/event-stream");
    req.set("MCP-Protocol-Version", "2026-07-28");
    req.set("Mcp-Method", request["method"].get<std::string>());
    if (request["params"].contains("name")) req.set("Mcp-Name", request["params"]["name"].get<std::string>());
    req.keep_alive(true);
    req.body() = request.dump();
    req.prepare_payload();
    http::write(socket_, req);
    http::response<http::string_body> res;
    http::read(socket_, buffer_, res);
    return nlohmann::json::parse(res.body());
  }

private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

/// `maf-sandbox mcp --http 127.0.0.1:0` with its stderr in `log`; the bound port.
unsigned short start_http_server(const std::vector<std::string>& argv, const std::filesystem::path& log, pid_t& pid) {
  pid = ::fork();
  if (pid == 0) {
    std::FILE* err = std::fopen(log.c_str(), "w");
    ::dup2(::fileno(err), 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  const std::regex listening(R"(listening on http://127\.0\.0\.1:(\d+)/mcp)");
  for (int i = 0; i < 600; ++i) {
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    if (std::regex_search(text, m, listening)) return static_cast<unsigned short>(std::stoi(m[1]));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  maf_bench::require(false, "the HTTP server did not say where it listens");
  return 0;
}

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
  const double dm = median(direct), mm = median(over_mcp);
  std::printf("| operation | direct, ms | over MCP stdio, ms | ratio | MCP adds, ms | runs |\n|---|---:|---:|---:|---:|---:|\n");
  std::printf("| tools/call run_command `true` (process, reclaim) | %.2f | %.2f | %.2fx | %.2f | %d |\n", dm, mm, mm / dm,
              mm - dm, runs);
  std::printf("\ntarget: over MCP <= 1.1x direct + 1 ms (= %.2f ms): %s\n", 1.1 * dm + 1.0,
              mm <= 1.1 * dm + 1.0 ? "met" : "NOT met");

  // --- issue 51: the 2026-07-28 era ---
  const std::string sandbox = server.ask(open_sandbox_request(1000))["result"]["structuredContent"]["sandbox"];
  pid_t http_pid = -1;
  const unsigned short port = start_http_server(
      {MAF_BENCH_CLI, "mcp", "--backend", "process", "--config", config_file.string(), "--spec", spec_file.string(),
       "--min-isolation", "none", "--scope", "bench", "--thread", "over-http", "--max-sandboxes", "40", "--http",
       "127.0.0.1:0"},
      scratch / "http.log", http_pid);
  HttpClient http(port);
  const std::string http_sandbox = http.ask(open_sandbox_request(1))["result"]["structuredContent"]["sandbox"];
  std::vector<double> direct2, stdio_handle, http_handle, fresh, kept;
  for (int i = 0; i < runs + 3; ++i) {
    const double d = timed([&] {
      const ToolResult r = run([&] { return run_command->invoke(ToolCall{"d" + std::to_string(i), "run_command", arguments}); });
      maf_bench::require(!r.is_error, "the direct call failed: " + r.joined_text());
    });
    const double sh = timed([&] { require_ok(server.ask(modern_call(2000 + i, sandbox)), "stdio with a handle"); });
    const double hh = timed([&] { require_ok(http.ask(modern_call(2000 + i, http_sandbox)), "HTTP with a handle"); });
    const double f = timed([&] { require_ok(http.ask(modern_call(5000 + i, "")), "HTTP without a handle"); });
    if (i >= 3) {
      direct2.push_back(d);
      stdio_handle.push_back(sh);
      http_handle.push_back(hh);
      fresh.push_back(f);
      kept.push_back(hh);
    }
  }
  run([&] { return router->dispose_scope("bench", "direct"); });
  const double d2 = median(direct2), sh = median(stdio_handle), hh = median(http_handle), fr = median(fresh);
  std::printf("\n| 2026-07-28 tools/call run_command `true` (process) | direct, ms | over MCP, ms | MCP adds, ms | goal | runs |\n"
              "|---|---:|---:|---:|---|---:|\n");
  std::printf("| stdio, in a handle's sandbox | %.2f | %.2f | %.2f | <= 2 ms: %s | %d |\n", d2, sh, sh - d2,
              sh - d2 <= 2.0 ? "met" : "NOT met", runs);
  std::printf("| Streamable HTTP, in a handle's sandbox | %.2f | %.2f | %.2f | <= 3 ms: %s | %d |\n", d2, hh, hh - d2,
              hh - d2 <= 3.0 ? "met" : "NOT met", runs);
  std::printf("\n| HTTP, per call | ms | ratio to the handle |\n|---|---:|---:|\n");
  std::printf("| a fresh sandbox (no handle: acquire, run, dispose) | %.2f | %.2fx |\n", fr, fr / hh);
  std::printf("| the handle's sandbox (run, reclaim) | %.2f | 1.00x |\n", hh);

  // 32 concurrent clients, each its own connection and handle, each making `per` calls.
  constexpr int kClients = 32;
  const int per = std::max(3, runs / 3);
  std::atomic<int> errors{0}, done{0};
  const double wall = timed([&] {
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back([&, c] {
        try {
          HttpClient client(port);
          const nlohmann::json opened = client.ask(open_sandbox_request(1));
          const std::string h = opened["result"]["structuredContent"]["sandbox"];
          for (int i = 0; i < per; ++i) {
            const nlohmann::json a = client.ask(modern_call(10 + i, h));
            if (!a.contains("result") || a["result"]["isError"].get<bool>()) ++errors;
            else ++done;
          }
          nlohmann::json close{{"jsonrpc", "2.0"}, {"id", 99}, {"method", "tools/call"},
                               {"params", {{"name", "close_sandbox"}, {"arguments", {{"sandbox", h}}}, {"_meta", kEnvelope}}}};
          if (client.ask(close)["result"]["isError"].get<bool>()) ++errors;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "client %d: %s\n", c, e.what());
          ++errors;
        }
      });
    for (auto& t : clients) t.join();
  });
  std::printf("\n| 32 concurrent HTTP clients (own connection and handle each) | value |\n|---|---:|\n");
  std::printf("| calls completed | %d of %d |\n| errors | %d |\n| wall time | %.0f ms |\n| calls per second | %.1f |\n",
              done.load(), kClients * per, errors.load(), wall, done.load() / (wall / 1000.0));
  ::kill(http_pid, SIGTERM);
  int status = 0;
  ::waitpid(http_pid, &status, 0);
  return errors.load() == 0 ? 0 : 1;
}
