#include "server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <openssl/evp.h>

#include "maf/sandbox/errors.hpp"
#include <spdlog/spdlog.h>

#include "maf/sandbox/logging.hpp"

namespace maf::sandbox::mcp {

namespace {

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

nlohmann::json labels_meta(const std::optional<ContentLabels>& labels) {
  const ContentLabels l = labels.value_or(ContentLabels{});
  return {{"maf-sandbox/labels",
           {{"integrity", std::string(to_string(l.integrity))},
            {"confidentiality", std::string(to_string(l.confidentiality))}}}};
}

nlohmann::json to_mcp_item(const ContentItem& item) {
  nlohmann::json j;
  if (const auto* t = std::get_if<TextContent>(&item.value)) {
    j = {{"type", "text"}, {"text", t->text}};
  } else if (const auto* b = std::get_if<BytesContent>(&item.value)) {
    if (starts_with(b->media_type, "image/")) {
      j = {{"type", "image"}, {"data", base64(b->data)}, {"mimeType", b->media_type}};
    } else if (starts_with(b->media_type, "audio/")) {
      j = {{"type", "audio"}, {"data", base64(b->data)}, {"mimeType", b->media_type}};
    } else {
      j = {{"type", "resource"},
           {"resource", {{"uri", "maf-sandbox:bytes"}, {"mimeType", b->media_type}, {"blob", base64(b->data)}}}};
    }
  } else {
    const auto& link = std::get<ArtifactLink>(item.value);
    // The MCP client is the host that chose --out: the link names the landed file for it.
    j = {{"type", "resource_link"}, {"name", link.artifact.name}, {"description", link.artifact.display}};
    j["uri"] = link.artifact.handle ? "file://" + *link.artifact.handle : "maf-sandbox:artifact/" + link.artifact.name;
    if (link.media_type) j["mimeType"] = *link.media_type;
  }
  j["_meta"] = labels_meta(item.labels);
  return j;
}

bool declares_tasks(const nlohmann::json& capabilities) {
  const auto it = capabilities.find("extensions");
  return it != capabilities.end() && it->is_object() && it->contains(kTasksExtension);
}

}  // namespace

std::string negotiate_protocol_version(const nlohmann::json& requested) {
  if (requested.is_string())
    for (std::string_view v : kProtocolVersions)
      if (requested.get_ref<const std::string&>() == v) return std::string(v);
  return std::string(kProtocolVersions.front());
}

nlohmann::json to_call_tool_result(const ToolResult& result) {
  nlohmann::json content = nlohmann::json::array();
  for (const auto& item : result.content) content.push_back(to_mcp_item(item));
  nlohmann::json j{{"content", std::move(content)}, {"isError", result.is_error}};
  if (result.structured) j["structuredContent"] = *result.structured;
  return j;
}

/// One tools/call in flight.
struct McpSession::Call {
  nlohmann::json id;
  Era era = Era::Legacy;
  std::stop_source stop;
  nlohmann::json progress_token;  // null: the client asked for none
  std::string handle;             // the handle whose sandbox it runs in, released at the end
  bool cancelled = false;
  bool done = false;
};

McpSession::McpSession(boost::asio::any_io_executor executor, std::shared_ptr<const ServerContext> server, Send send)
    : executor_(std::move(executor)), server_(std::move(server)), send_(std::move(send)),
      alive_(std::make_shared<bool>(true)) {}

McpSession::~McpSession() { *alive_ = false; }

void McpSession::handle(std::string_view text) {
  Message m = parse_message(text);
  const EraDecision era = decide_era(m, nullptr);
  handle(std::move(m), era);
}

void McpSession::handle(Message m, const EraDecision& era) {
  if (era.error) {
    if (m.kind == Message::Kind::Request) send_(*era.error);  // a notification is never answered
    return;
  }
  if (era.era == Era::Modern) dispatch_modern(std::move(m), era);
  else dispatch(std::move(m));
}

void McpSession::refuse_oversize(std::size_t bytes) {
  send_(make_error(nullptr, kInvalidRequest,
                   "Invalid Request: a message of " + std::to_string(bytes) + " bytes is over this server's limit"));
}

nlohmann::json McpSession::answer(Era era, const nlohmann::json& id, nlohmann::json result) const {
  if (era == Era::Modern) {
    result["resultType"] = "complete";
    result["_meta"][std::string(kMetaServerInfo)] = {{"name", server_->info.name},
                                                     {"version", server_->info.version}};
  }
  return make_result(id, std::move(result));
}

nlohmann::json McpSession::discover_result() const {
  // The tool list does not change while the server runs, but a client may not cache it past
  // a restart with another --spec: a short, private lifetime.
  nlohmann::json r{{"supportedVersions", supported_versions()},
                   {"capabilities",
                    {{"tools", {{"listChanged", false}}}, {"extensions", {{kTasksExtension, nlohmann::json::object()}}}}},
                   {"serverInfo", {{"name", server_->info.name}, {"version", server_->info.version}}},
                   {"ttlMs", kListTtlMs},
                   {"cacheScope", "private"}};
  if (!server_->info.instructions.empty()) r["instructions"] = server_->info.instructions;
  return r;
}

void McpSession::dispatch(Message m) {
  switch (m.kind) {
    case Message::Kind::Invalid:
      send_(m.error_response);
      return;
    case Message::Kind::Response:
      return;  // this server sends no requests, so no answer is awaited
    case Message::Kind::Notification:
      if (m.method == "notifications/initialized") initialized_ = true;
      else if (m.method == "notifications/cancelled") cancel(m.params);
      return;  // unknown notifications are ignored, as JSON-RPC says
    case Message::Kind::Request:
      break;
  }
  if (m.method == "initialize") {
    const nlohmann::json requested = m.params.is_object() ? m.params.value("protocolVersion", nlohmann::json()) : nullptr;
    protocol_version_ = negotiate_protocol_version(requested);
    nlohmann::json result{{"protocolVersion", protocol_version_},
                          {"capabilities", {{"tools", {{"listChanged", false}}}}},
                          {"serverInfo", {{"name", server_->info.name}, {"version", server_->info.version}}}};
    if (!server_->info.instructions.empty()) result["instructions"] = server_->info.instructions;
    send_(make_result(m.id, std::move(result)));
  } else if (m.method == "ping") {
    send_(make_result(m.id, nlohmann::json::object()));
  } else if (m.method == "server/discover") {
    // Asked without the envelope (a raw probe): answered all the same, so a client learns
    // which revisions to claim.
    send_(answer(Era::Modern, m.id, discover_result()));
  } else if (m.method == "tools/list") {
    send_(make_result(m.id, {{"tools", server_->tool_list}}));
  } else if (m.method == "tools/call") {
    start_call(m.id, m.params, Era::Legacy);
  } else {
    send_(make_error(m.id, kMethodNotFound, "Method not found: '" + m.method + "'"));
  }
}

void McpSession::dispatch_modern(Message m, const EraDecision& era) {
  if (m.kind == Message::Kind::Notification) {
    if (m.method == "notifications/cancelled") cancel(m.params);
    return;
  }
  if (m.kind != Message::Kind::Request) return dispatch(std::move(m));
  if (m.method == "server/discover") {
    send_(answer(Era::Modern, m.id, discover_result()));
  } else if (m.method == "tools/list") {
    send_(answer(Era::Modern, m.id,
                 {{"tools", server_->tool_list}, {"ttlMs", kListTtlMs}, {"cacheScope", "private"}}));
  } else if (m.method == "tools/call") {
    start_call(m.id, m.params, Era::Modern, declares_tasks(era.client_capabilities));
  } else if (m.method == "tasks/get" || m.method == "tasks/cancel" || m.method == "tasks/update") {
    if (!declares_tasks(era.client_capabilities))
      return send_(make_error(m.id, kMissingRequiredClientCapability,
                              "Missing required client capability: " + m.method + " needs the " +
                                  std::string(kTasksExtension) + " extension in clientCapabilities",
                              nlohmann::json{{"requiredCapabilities",
                                              {{"extensions", {{kTasksExtension, nlohmann::json::object()}}}}}}));
    task_request(m);
  } else {
    // initialize, ping and logging/setLevel are gone from 2026-07-28.
    send_(make_error(m.id, kMethodNotFound,
                     "Method not found: '" + m.method + "' (not part of protocol revision 2026-07-28)"));
  }
}

void McpSession::task_request(const Message& m) {
  const auto task_id = m.params.is_object() ? m.params.find("taskId") : m.params.end();
  if (!m.params.is_object() || task_id == m.params.end() || !task_id->is_string())
    return send_(make_error(m.id, kInvalidParams, "Invalid params: " + m.method + " needs a string \"taskId\""));
  const std::string id = task_id->get<std::string>();
  TaskTable& tasks = *server_->tasks;
  const auto unknown = [&] {
    send_(make_error(m.id, kInvalidParams,
                     "Invalid params: no task '" + id.substr(0, 80) + "' on this server (never started here, or past its ttl)"));
  };
  if (m.method == "tasks/get") {
    auto state = tasks.get(id);
    if (!state) return unknown();
    return send_(answer(Era::Modern, m.id, std::move(*state)));
  }
  // tasks/cancel stops the program; tasks/update has nothing to deliver (these tools never
  // ask for input): both acknowledge.
  if (m.method == "tasks/cancel" ? !tasks.cancel(id) : !tasks.get(id)) return unknown();
  send_(answer(Era::Modern, m.id, nlohmann::json::object()));
}

void McpSession::start_call(const nlohmann::json& id, const nlohmann::json& params, Era era, bool as_task) {
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
    send_(make_error(id, kInvalidParams, "Invalid params: tools/call needs a string \"name\""));
    return;
  }
  const std::string name = params["name"].get<std::string>();
  nlohmann::json arguments = params.value("arguments", nlohmann::json::object());
  if (arguments.is_null()) arguments = nlohmann::json::object();
  const std::string key = id.dump();
  if (in_flight_.count(key)) {
    send_(make_error(id, kInvalidRequest, "Invalid Request: id " + key + " is already in use by a running call"));
    return;
  }
  auto refuse = [&](ToolResult r) { send_(answer(era, id, to_call_tool_result(r))); };
  SandboxHandles& handles = *server_->handles;
  const bool handle_tool = name == kOpenSandbox || name == kCloseSandbox;
  if (handle_tool && !arguments.is_object()) return refuse(ToolResult::error("Error: arguments must be an object"));

  if (name == kOpenSandbox) {
    const auto spec = arguments.value("spec", nlohmann::json(""));
    if (!spec.is_string()) return refuse(ToolResult::error("Error: spec must be a string naming a configured spec"));
    auto opened = handles.open(spec.get<std::string>());
    if (auto* error = std::get_if<ToolResult>(&opened)) return refuse(std::move(*error));
    const std::string& handle = std::get<std::string>(opened);
    ToolResult r = ToolResult::text("sandbox opened: " + handle + " — pass it as the `sandbox` argument of later calls; "
                                    "close it with close_sandbox when done",
                                    kLibraryAuthoredLabels);
    r.structured = nlohmann::json{
        {"sandbox", handle},
        {"idleTimeoutSeconds",
         std::chrono::duration_cast<std::chrono::seconds>(handles.limits().idle_timeout).count()}};
    return send_(answer(era, id, to_call_tool_result(r)));
  }

  // The sandbox a call runs in: the handle it names; or, in the 2025 era with --cleanup
  // reclaim, the session's own handle; or the era's default tools.
  std::string handle;
  if (arguments.is_object() && arguments.contains("sandbox")) {
    if (!arguments["sandbox"].is_string())
      return refuse(ToolResult::error("Error: sandbox must be a string (a handle open_sandbox returned)"));
    handle = arguments["sandbox"].get<std::string>();
    arguments.erase("sandbox");
  } else if (name == kCloseSandbox) {
    return refuse(ToolResult::error("Error: close_sandbox needs the `sandbox` argument"));
  } else if (era == Era::Legacy && server_->legacy_cleanup == Cleanup::Reclaim) {
    if (session_handle_.empty()) {
      auto opened = handles.open("");
      if (auto* error = std::get_if<ToolResult>(&opened)) return refuse(std::move(*error));
      session_handle_ = std::get<std::string>(opened);
    }
    handle = session_handle_;
  }

  auto call = std::make_shared<Call>();
  call->id = id;
  call->era = era;
  if (name == kCloseSandbox) {
    in_flight_.emplace(key, call);
    boost::asio::co_spawn(executor_, close_handle(call, handle), boost::asio::detached);
    return;
  }
  const std::vector<SandboxedTool>* tools = era == Era::Legacy ? &server_->legacy_tools : &server_->stateless_tools;
  if (!handle.empty()) {
    auto used = handles.use(handle);
    if (auto* error = std::get_if<ToolResult>(&used)) {
      if (handle == session_handle_) session_handle_.clear();  // expired: the next call opens anew
      return refuse(std::move(*error));
    }
    tools = std::get<const std::vector<SandboxedTool>*>(used);
    call->handle = handle;
  }
  const SandboxedTool* tool = nullptr;
  for (const auto& t : *tools)
    if (t.definition().name == name) tool = &t;
  if (!tool) {
    if (!call->handle.empty()) handles.release(call->handle);
    send_(make_error(id, kInvalidParams, "Invalid params: unknown tool '" + name + "'"));
    return;
  }
  if (as_task && (name == "run_command" || name == "run_code") && !server_->tasks->full()) {
    // The task outlives this request: it releases the handle itself when the call ends.
    ToolCall task_call{id.is_string() ? id.get<std::string>() : key, name, std::move(arguments)};
    auto release = [server = server_, handle = call->handle] {
      if (!handle.empty()) server->handles->release(handle);
    };
    nlohmann::json created = server_->tasks->start(*tool, std::move(task_call), std::move(release));
    nlohmann::json reply = answer(era, id, std::move(created));
    reply["result"]["resultType"] = "task";
    return send_(reply);
  }
  if (params.contains("_meta") && params["_meta"].is_object())
    call->progress_token = params["_meta"].value("progressToken", nlohmann::json());
  in_flight_.emplace(key, call);
  // The model-visible call id is the request id's text: it correlates logs, never a key (C-14).
  ToolCall tool_call{id.is_string() ? id.get<std::string>() : key, name, std::move(arguments)};
  boost::asio::co_spawn(executor_, run_call(call, *tool, std::move(tool_call)), boost::asio::detached);
  if (!call->progress_token.is_null())
    boost::asio::co_spawn(executor_, report_progress(call), boost::asio::detached);
}

boost::asio::awaitable<void> McpSession::close_handle(std::shared_ptr<Call> call, std::string handle) {
  auto alive = alive_;
  auto server = server_;  // the table outlives this session's end
  const ToolResult r = co_await server->handles->close(std::move(handle));
  if (!*alive) co_return;
  finish(call, answer(call->era, call->id, to_call_tool_result(r)));
}

boost::asio::awaitable<void> McpSession::run_call(std::shared_ptr<Call> call, SandboxedTool tool, ToolCall tool_call) {
  auto alive = alive_;
  auto server = server_;
  std::optional<nlohmann::json> result;
  try {
    const ToolResult r = co_await tool.invoke(std::move(tool_call), call->stop.get_token());
    result = answer(call->era, call->id, to_call_tool_result(r));
  } catch (const Cancelled&) {
    // Cancelled by the client (or by shutdown): the call's cleanup has run; no answer is sent
    // for a cancelled request.
  } catch (const std::exception& e) {
    // A tool that failed is a tool execution error, for the model to see (C-119's fixed
    // sentence; the detail stays in this log).
    logger()->error("mcp: tools/call '{}' failed: {}", tool.definition().name, e.what());
    result = answer(call->era, call->id, to_call_tool_result(ToolResult::error(kRefusalSandboxUnavailable)));
  }
  if (!call->handle.empty()) server->handles->release(call->handle);
  if (!*alive) co_return;
  finish(call, std::move(result));
}

void McpSession::finish(const std::shared_ptr<Call>& call, std::optional<nlohmann::json> result) {
  call->done = true;
  in_flight_.erase(call->id.dump());
  if (result && !call->cancelled) send_(*result);
}

boost::asio::awaitable<void> McpSession::report_progress(std::shared_ptr<Call> call) {
  auto alive = alive_;
  boost::asio::steady_timer timer(executor_);
  for (int tick = 1;; ++tick) {
    timer.expires_after(kProgressInterval);
    co_await timer.async_wait(boost::asio::use_awaitable);
    if (!*alive || call->done || call->cancelled) co_return;
    send_(make_notification("notifications/progress",
                            {{"progressToken", call->progress_token},
                             {"progress", tick},
                             {"message", "still running (" + std::to_string(tick) + " s)"}}));
  }
}

void McpSession::cancel(const nlohmann::json& params) {
  if (!params.is_object() || !params.contains("requestId")) return;
  const auto it = in_flight_.find(params["requestId"].dump());
  if (it == in_flight_.end()) return;  // finished already, or never ours: ignored, as the spec says
  it->second->cancelled = true;
  it->second->stop.request_stop();
}

boost::asio::awaitable<void> McpSession::drain(bool close_session_handle) {
  for (auto& [key, call] : in_flight_) {
    call->cancelled = true;
    call->stop.request_stop();
  }
  boost::asio::steady_timer timer(executor_);
  while (!in_flight_.empty()) {
    timer.expires_after(std::chrono::milliseconds(20));
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
  // The 2025 session's own sandbox goes with the session (--cleanup reclaim).
  if (close_session_handle && !session_handle_.empty()) {
    auto server = server_;
    co_await server->handles->close(std::exchange(session_handle_, std::string()));
  }
}

}  // namespace maf::sandbox::mcp
