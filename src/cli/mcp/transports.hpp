#pragma once
// The two ways `maf-sandbox mcp` is reached (docs/mcp.md): stdio, the MCP default a host
// configures, and Streamable HTTP on a loopback address (what the MCP conformance package
// drives). Each runs until the client goes (stdin closed, or every HTTP session deleted and a
// signal) or SIGINT/SIGTERM, then drains the calls in flight and disposes everything each
// session acquired — one MCP session is one conversation scope.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "maf/sandbox/sandboxed_tool.hpp"
#include "server.hpp"
#include "tools.hpp"

namespace maf::sandbox::mcp {

struct ServeOptions {
  explicit ServeOptions(SandboxSpec workload) : spec(std::move(workload)) {}
  std::shared_ptr<SandboxRouter> router;
  ToolsetOptions toolset;  ///< its `thread` is the stdio session's, or the prefix of HTTP sessions'
  SandboxSpec spec;        ///< what the tools serve without a handle, and open_sandbox's default
  std::vector<SandboxSpec> more_specs;  ///< further specs open_sandbox may name (by kind)
  HandleLimits handles;
  ServerInfo info;
  std::size_t max_message_bytes = std::size_t{16} << 20;
};

/// The tools of both eras and the handle table (its reaper started), for one server. Its
/// sandboxes' keys: scope and `toolset.thread`, agent "mcp-stateless" for a 2026-07-28 call
/// without a handle, "h<n>" for a handle's; the 2025 sessions' as before.
std::shared_ptr<ServerContext> make_server_context(const ServeOptions& options, boost::asio::any_io_executor executor);

/// Serves one session on stdin/stdout. stdout carries only protocol messages: the protocol
/// writes to a private duplicate of fd 1, and fd 1 itself is pointed at stderr, so nothing a
/// library or a child prints can corrupt the stream. Returns the exit code.
int serve_stdio(const ServeOptions& options);

/// Serves Streamable HTTP at http://HOST:PORT/mcp, HOST a loopback address (the server has no
/// authentication, so it never listens elsewhere; ValueError otherwise). Each initialize opens
/// a session (Mcp-Session-Id) with a conversation of its own; DELETE ends it and disposes what
/// it acquired. Requests with a non-loopback Host or Origin are refused with 403 (DNS
/// rebinding). Replies are JSON, never SSE, so progress notifications are not delivered over
/// HTTP. `on_listening` is told the bound port.
int serve_http(const ServeOptions& options, const std::string& host, unsigned short port,
               std::function<void(unsigned short)> on_listening);

}  // namespace maf::sandbox::mcp
