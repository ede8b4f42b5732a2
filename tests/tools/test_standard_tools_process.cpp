// The standard tools and Conversation (docs/tools.md "A first agent loop", AGENT-2…AGENT-6) on
// the process backend, loaded by name as a first program loads it: real bubblewrap, real
// files, real programs.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <sys/stat.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <filesystem>
#include <stop_token>
#include <string>
#include <thread>

#include "maf/sandbox/conversation.hpp"
#include "maf/sandbox/tools.hpp"

namespace fs = std::filesystem;
using namespace maf::sandbox;

namespace {

struct Host {
  fs::path root = fs::temp_directory_path() / ("maf-standard-tools-" + std::to_string(::getpid()));
  SandboxHost host{"process", RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}),
                   nlohmann::json{{"root", root.string()}}.dump()};
  ~Host() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  /// Sandboxes of this host still on disk.
  int alive() const {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.path().filename().string().rfind("maf-sandbox-process-", 0) == 0) ++n;
    return n;
  }
};

std::string call(const char* name, const nlohmann::json& arguments, const char* id = "1") {
  return nlohmann::json{{"id", id}, {"name", name}, {"arguments", arguments}}.dump();
}

/// The host path of the file `name` in one of this host's sandboxes, once it exists (bounded:
/// a bound on the program's start, not a measurement).
std::optional<fs::path> await_file(const fs::path& root, const std::string& name) {
  for (int i = 0; i < 600; ++i) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec))
      if (it->path().filename() == name) return it->path();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return std::nullopt;
}

/// Host processes whose root directory is `guest_root` (a process sandbox's private root):
/// every process of that sandbox, whichever exec started it.
int processes_in(const fs::path& guest_root) {
  struct stat root {};
  if (::stat(guest_root.c_str(), &root) != 0) return 0;
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    struct stat st {};
    if (::stat((e.path() / "root").c_str(), &st) == 0 && st.st_dev == root.st_dev && st.st_ino == root.st_ino) ++n;
  }
  return n;
}

std::vector<std::string> names(const Conversation& c) {
  std::vector<std::string> out;
  for (const auto& d : c.definitions()) out.push_back(d.name);
  return out;
}

}  // namespace

TEST_CASE("AGENT-2 AGENT-3 a Conversation from a SandboxHost: the standard tools' definitions, three calls sharing "
          "files, disposal when it ends") {
  Host h;
  {
    Conversation chat(h.host, {.scope = "app", .thread = "conversation-1"});
    CHECK(names(chat) == std::vector<std::string>{"run_command", "write_file", "read_file", "list_files"});
    const auto& run_command = chat.definitions().front();
    CHECK(to_openai_json(run_command)["function"]["name"] == "run_command");
    CHECK(to_mcp_json(run_command)["inputSchema"]["oneOf"].size() == 2);
    CHECK(to_mcp_json(run_command)["annotations"]["destructiveHint"] == true);

    const ToolResult wrote = chat.call(call("write_file", {{"path", "notes/a.txt"}, {"content", "hello"}}));
    REQUIRE_FALSE(wrote.is_error);
    const ToolResult ran = chat.call(call("run_command", {{"command", "tr a-z A-Z < notes/a.txt > b.txt"}}));
    REQUIRE_FALSE(ran.is_error);
    const ToolResult read = chat.call(call("read_file", {{"path", "b.txt"}}));
    CHECK_FALSE(read.is_error);
    CHECK(read.joined_text() == "HELLO");
    const ToolResult listed = chat.call(call("list_files", nlohmann::json::object()));
    CHECK_THAT(listed.joined_text(), Catch::Contains("notes/") && Catch::Contains("b.txt"));
    CHECK(h.alive() == 1);  // KeepSandbox: one sandbox for the conversation
  }
  CHECK(h.alive() == 0);  // the destructor disposed it
}

TEST_CASE("AGENT-4 a bad call is an error result the model can read, and the conversation goes on") {
  Host h;
  Conversation chat(h.host, {.scope = "app", .thread = "conversation-2"});
  const ToolResult missing = chat.call(call("read_file", {{"path", "no-such-file.txt"}}));
  CHECK(missing.is_error);
  CHECK_THAT(missing.joined_text(), Catch::StartsWith("Error: ") && Catch::Contains("no-such-file.txt"));
  const ToolResult escaping = chat.call(call("read_file", {{"path", "../../etc/passwd"}}));
  CHECK(escaping.is_error);
  CHECK_THAT(escaping.joined_text(), Catch::Contains("../../etc/passwd"));
  const ToolResult failing = chat.call(call("run_command", {{"command", "echo nope >&2; exit 3"}}));
  CHECK(failing.is_error);
  CHECK_THAT(failing.joined_text(), Catch::Contains("exit code 3") && Catch::Contains("nope"));
  const ToolResult slow = chat.call(call("run_command", {{"command", "sleep 30"}, {"timeout_seconds", 1}}));
  CHECK(slow.is_error);
  CHECK_THAT(slow.joined_text(), Catch::Contains("timeout"));
  const ToolResult unknown = chat.call(call("format_disk", nlohmann::json::object()));
  CHECK(unknown.is_error);
  CHECK_THAT(unknown.joined_text(), Catch::Contains("format_disk") && Catch::Contains("run_command"));
  const ToolResult not_a_call = chat.call(std::string_view("{\"name\": 7}"));
  CHECK(not_a_call.is_error);
  // Still serving: the errors were answers, not failures.
  CHECK_FALSE(chat.call(call("run_command", {{"command", "true"}})).is_error);
}

TEST_CASE("AGENT-4 an empty or blank command is refused before anything runs, without guest paths in the text") {
  Host h;
  Conversation chat(h.host, {.scope = "app", .thread = "conversation-3"});
  for (const char* line : {" ", "\t\n"}) {
    const ToolResult r = chat.call(call("run_command", {{"command", line}}));
    CHECK(r.is_error);
    CHECK_THAT(r.joined_text(), Catch::Contains("blank"));
    CHECK_THAT(r.joined_text(), !Catch::Contains("maf-host-tools") && !Catch::Contains("/maf-sandbox"));
  }
  const ToolResult empty_program = chat.call(call("run_command", {{"argv", {""}}}));
  CHECK(empty_program.is_error);
  CHECK_THAT(empty_program.joined_text(), Catch::Contains("argv[0] is empty"));
  CHECK(h.alive() <= 1);
}

TEST_CASE("AGENT-5 what survives a call: KeepSandbox keeps files, RestoreSnapshot and FreshSandbox do not") {
  Host h;
  const auto survives = [&](BetweenCalls choice, const char* thread) {
    Conversation chat(h.host, {.scope = "app", .thread = thread, .between_calls = choice});
    REQUIRE_FALSE(chat.call(call("write_file", {{"path", "kept.txt"}, {"content", "x"}})).is_error);
    return !chat.call(call("read_file", {{"path", "kept.txt"}})).is_error;
  };
  CHECK(survives(BetweenCalls::KeepSandbox, "keep"));
  CHECK_FALSE(survives(BetweenCalls::RestoreSnapshot, "restore"));
  CHECK_FALSE(survives(BetweenCalls::FreshSandbox, "fresh"));
  CHECK(h.alive() == 0);
}

TEST_CASE("AGENT-6 host tools as an option: run_command's program calls a host tool, each call with its own ledger") {
  Host h;
  HostToolRegistry registry({.max_dispatches_per_run = 1});
  registry.add({.name = "lookup",
                .parameters = {{"type", "object"}, {"required", {"id"}}},
                .function = [](const nlohmann::json& a, const HostToolCallContext&) {
                  return nlohmann::json{{"id", a["id"]}, {"name", "Ada"}};
                }});
  Conversation chat(h.host, {.scope = "app", .thread = "conversation-4", .host_tools = &registry});
  CHECK(registry.sealed());
  for (const char* id : {"1", "2"}) {  // one dispatch per run: the second call has a ledger of its own
    const ToolResult r = chat.call(call("run_command", {{"command", "maf-host-tool lookup '{\"id\": 7}'"}}, id));
    CHECK_FALSE(r.is_error);
    CHECK_THAT(r.joined_text(), Catch::Contains("\"name\":\"Ada\""));
  }
  const ToolResult over = chat.call(call("run_command", {{"command", "maf-host-tool lookup '{\"id\":1}' && "
                                                                      "maf-host-tool lookup '{\"id\":2}'"}}));
  CHECK(over.is_error);  // the second dispatch of one run is refused: the client exits 1
}

TEST_CASE("AGENT-3 standard_tools from a SandboxHost, async, share the conversation with a Conversation's tools") {
  Host h;
  auto tools = standard_tools(h.host, fixed_conversation("app", "conversation-5"), standard_tools_spec(),
                              {.cleanup = rung_for(BetweenCalls::KeepSandbox), .list_files = false});
  REQUIRE(tools.size() == 3);
  BlockingRunner run;
  const ToolResult wrote = run([&] {
    return tools[1].invoke(ToolCall{"1", "write_file", {{"path", "shared.txt"}, {"content", "from async"}}});
  });
  REQUIRE_FALSE(wrote.is_error);
  const ToolResult read = run([&] { return tools[2].invoke(ToolCall{"2", "read_file", {{"path", "shared.txt"}}}); });
  CHECK(read.joined_text() == "from async");
  CHECK(h.host.dispose_scope("app", "conversation-5").disposed == 1);
}

TEST_CASE("AGENT-3 AGENT-5 a tool of one's own from a SandboxHost, blocking: under KeepSandbox a file outside the call "
          "directory survives the call, the call directory does not") {
  Host h;
  SandboxedTool shell = sandboxed_tool(
      [](SandboxToolSession session, nlohmann::json args) -> boost::asio::awaitable<ToolResult> {
        auto sandbox = co_await session.acquire();
        if (!sandbox) co_return ToolResult::error(sandbox.refusal());
        const std::string dir = session.guest_call_path();
        const Command line = "mkdir -p " + dir + " && touch " + dir + "/scratch && " + args["command"].get<std::string>();
        const ExecResult r = co_await session.exec(**sandbox, line);
        ToolResult result = ToolResult::text(dir + "\n" + r.stdout_text());
        result.is_error = r.exit_code != 0;
        co_return result;
      },
      // The standard tools' spec: a sandbox is per (key, kind), so one kind shares the files.
      h.host, fixed_conversation("app", "conversation-6"), "agent", standard_tools_spec(), "shell",
      {.input_schema = {{"type", "object"}, {"required", {"command"}}},
       .cleanup = {.rung = rung_for(BetweenCalls::KeepSandbox)}});
  CHECK(shell.cleanup() == Cleanup::Reclaim);
  const ToolResult first = shell.invoke_blocking(ToolCall{"1", "shell", {{"command", "echo kept > outside.txt"}}});
  REQUIRE_FALSE(first.is_error);
  const std::string first_dir = first.joined_text().substr(0, first.joined_text().find('\n'));
  const ToolResult second = shell.invoke_blocking(
      ToolCall{"2", "shell", {{"command", "cat outside.txt; test -e " + first_dir + " && echo call-dir-left || echo call-dir-gone"}}});
  REQUIRE_FALSE(second.is_error);
  CHECK_THAT(second.joined_text(), Catch::Contains("kept") && Catch::Contains("call-dir-gone"));
  CHECK(h.host.dispose_scope("app", "conversation-6").disposed == 1);

  // The same tool beside the standard ones, in a Conversation of the same thread.
  Conversation chat(h.host, {.scope = "app", .thread = "conversation-6"});
  chat.add(shell);
  CHECK(chat.definitions().back().name == "shell");
  CHECK_THROWS_WITH(chat.add(shell), Catch::Contains("'shell'"));
  REQUIRE_FALSE(chat.call(call("write_file", {{"path", "from-standard.txt"}, {"content", "w"}})).is_error);
  CHECK_THAT(chat.call(call("shell", {{"command", "cat from-standard.txt"}})).joined_text(), Catch::EndsWith("w"));
}

TEST_CASE("AGENT-7 STR-10 under KeepSandbox a cancelled run_command ends its program: the marker it would write later "
          "never appears, no process of it remains, and the kept sandbox answers the next call") {
  Host h;
  auto tools = standard_tools(h.host, fixed_conversation("app", "conversation-7"), standard_tools_spec(),
                              {.cleanup = rung_for(BetweenCalls::KeepSandbox), .list_files = false});
  REQUIRE(tools.size() == 3);
  boost::asio::io_context io;
  std::stop_source stop;
  std::string outcome;
  const ToolCall slow{"1", "run_command",
                      {{"command", "touch maf-agent7-started; sleep 3; echo late > maf-agent7-late.txt"}}};
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        try {
          const ToolResult r = co_await tools[0].invoke(slow, stop.get_token());
          outcome = "returned: " + r.joined_text();
        } catch (const Cancelled&) {
          outcome = "cancelled";
        }
      },
      boost::asio::detached);
  std::thread runner([&io] { io.run(); });
  const auto started = await_file(h.root, "maf-agent7-started");
  stop.request_stop();  // the program sits in `sleep 3`: the stop must reach it
  runner.join();
  REQUIRE(started);
  CHECK(outcome == "cancelled");
  // The sandbox's private root: <root>/maf-sandbox-process-…/root.
  fs::path guest_root;
  for (fs::path p = *started; p != p.parent_path(); p = p.parent_path())
    if (p.parent_path().filename().string().rfind("maf-sandbox-process-", 0) == 0 && p.filename() == "root")
      guest_root = p;
  REQUIRE_FALSE(guest_root.empty());
  // A stop may land asynchronously: bounded, until nothing of the sandbox runs.
  int left = processes_in(guest_root);
  for (int i = 0; i < 100 && left > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    left = processes_in(guest_root);
  }
  CHECK(left == 0);
  // Nothing runs, so nothing can write the marker any more: it is absent now or never.
  BlockingRunner run;
  const ToolResult late = run([&] { return tools[2].invoke(ToolCall{"2", "read_file", {{"path", "maf-agent7-late.txt"}}}); });
  CHECK(late.is_error);
  CHECK(h.alive() == 1);  // kept: the stop ended the program, not the sandbox
  const ToolResult kept = run([&] {
    return tools[0].invoke(ToolCall{"3", "run_command", {{"command", "test -e maf-agent7-started && echo same-sandbox"}}});
  });
  CHECK_THAT(kept.joined_text(), Catch::Contains("same-sandbox"));
  CHECK(h.host.dispose_scope("app", "conversation-7").disposed == 1);
}

TEST_CASE("AGENT-2 AGENT-3 AGENT-6 the JSON-free door: definitions_json, reply and a TextHostTool speak JSON text; a "
          "function's non-JSON answer is a refusal; host_tools and host_functions together are refused") {
  Host h;
  std::string asked;
  const TextHostTool lookup{.name = "lookup", .function = [&asked](const std::string& args) {
                              asked = args;
                              return std::string(R"({"name":"Ada"})");
                            }};
  const TextHostTool broken{.name = "broken", .function = [](const std::string&) { return std::string("not json"); }};
  Conversation chat(h.host, {.scope = "app", .thread = "conversation-text", .host_functions = {lookup, broken}});
  const auto openai = chat.definitions_json();
  const auto mcp = chat.definitions_json(ToolFormat::Mcp);
  REQUIRE(openai.size() == chat.definitions().size());
  REQUIRE(mcp.size() == openai.size());
  CHECK(nlohmann::json::parse(openai.front()) == to_openai_json(chat.definitions().front()));
  CHECK(nlohmann::json::parse(mcp.front()) == to_mcp_json(chat.definitions().front()));

  const ToolReply ok = chat.reply(call("run_command", {{"command", "maf-host-tool lookup '{\"id\": 7}'"}}));
  CHECK_FALSE(ok.is_error);
  CHECK_THAT(ok.text, Catch::Contains("{\"name\":\"Ada\"}"));
  CHECK(asked == "{\"id\":7}");  // the validated arguments, as JSON text
  const ToolReply refused = chat.reply(call("run_command", {{"command", "maf-host-tool broken '{}'"}}));
  CHECK(refused.is_error);  // the client exits non-zero: the guest saw a refusal, not the text
  CHECK_THAT(refused.text, !Catch::Contains("not json"));
  const ToolReply bad = chat.reply("{\"name\": 7}");
  CHECK(bad.is_error);
  CHECK_THAT(bad.text, Catch::StartsWith("Error: "));

  HostToolRegistry registry;
  CHECK_THROWS_AS(Conversation(h.host, {.scope = "app", .thread = "both", .host_tools = &registry,
                                        .host_functions = {lookup}}),
                  ValueError);
  const TextHostTool empty{.name = "empty"};
  CHECK_THROWS_AS(Conversation(h.host, {.scope = "app", .thread = "none", .host_functions = {empty}}), ValueError);
}
