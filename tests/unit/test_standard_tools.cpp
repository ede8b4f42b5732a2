// Errors as results (AGENT-4) and the standard tools' attach (AGENT-2) against the in-process
// double; what the tools do with real files and programs is tests/tools/test_standard_tools_process.cpp.
#include <catch2/catch.hpp>

#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/standard_tools.hpp"
#include "message_of.hpp"
#include "tool_fixture.hpp"

using namespace maf::sandbox;
using maf::sandbox::test::message_of;
using maf::sandbox::test::ToolFixture;

namespace {

struct Released : SandboxObserver {
  std::vector<std::string> error_types;
  void on_event(const SandboxEvent& event) override {
    if (const auto* e = std::get_if<ToolCallEvent>(&event))
      if (e->phase == ToolCallPhase::Released) error_types.push_back(e->error_type);
  }
};

ToolBody throwing(std::string* how) {
  return [how](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
    auto sandbox = co_await session.acquire();
    if (*how == "missing") throw FileNotFoundError("no file 'notes/a.txt' in the sandbox");
    if (*how == "path") throw ValueError("path '../x' leaves the work directory");
    if (*how == "timeout") throw SandboxProgramTimeout("the program ran past 1000 ms", "partial");
    if (*how == "infrastructure") throw RuntimeError("engine at https://10.0.0.7:2376 said 500");
    if (*how == "cancel") throw Cancelled();
    co_return ToolResult::text("ok");
  };
}

}  // namespace

TEST_CASE("AGENT-4 ToolErrors::AsResults: an input error is 'Error: <message>', anything else the fixed sentence "
          "with the detail only in the log and the event; Cancelled still propagates") {
  ToolFixture f;
  std::string how;
  auto tool = f.attach(throwing(&how));
  how = "missing";
  ToolResult r = f.invoke(tool);
  CHECK(r.is_error);
  CHECK(r.joined_text() == "Error: no file 'notes/a.txt' in the sandbox");
  CHECK(r.content[0].labels == ContentLabels{Integrity::Untrusted, Confidentiality::Public});
  how = "path";
  CHECK(f.invoke(tool).joined_text() == "Error: path '../x' leaves the work directory");
  how = "timeout";
  CHECK_THAT(f.invoke(tool).joined_text(), Catch::StartsWith("Error: the program ran past 1000 ms"));
  how = "infrastructure";
  r = f.invoke(tool);
  CHECK(r.is_error);
  CHECK(r.joined_text() == kRefusalSandboxUnavailable);
  CHECK_THAT(r.joined_text(), !Catch::Contains("10.0.0.7"));
  how = "cancel";
  CHECK_THROWS_AS(f.invoke(tool), Cancelled);
  how = "ok";
  CHECK(f.invoke(tool).joined_text() == "ok");
}

TEST_CASE("AGENT-4 the released event names the exception's class although the model saw a sentence") {
  auto observer = std::make_shared<Released>();
  ToolFixture f;
  f.router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{f.backend},
                                             RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{}),
                                             std::vector<std::shared_ptr<SandboxObserver>>{observer});
  std::string how = "infrastructure";
  auto tool = f.attach(throwing(&how));
  CHECK(f.invoke(tool).joined_text() == kRefusalSandboxUnavailable);
  REQUIRE(observer->error_types.size() == 1);
  CHECK(observer->error_types[0] == "RuntimeError");
}

TEST_CASE("AGENT-4 ToolErrors::Propagate: the body's exception leaves invoke unchanged, after cleanup") {
  ToolFixture f;
  std::string how = "missing";
  auto tool = f.attach(throwing(&how), {.errors = ToolErrors::Propagate});
  CHECK_THROWS_AS(f.invoke(tool), FileNotFoundError);
}

TEST_CASE("AGENT-4 Sandbox::exec refuses an empty, blank or NUL-holding command before the backend sees it") {
  ToolFixture f;
  BlockingRunner run;
  CHECK_THAT(message_of<ValueError>([&] { run([&] { return f.sandbox->exec(Command("")); }); }),
             Catch::Contains("exec") && Catch::Contains("empty"));
  CHECK_THAT(message_of<ValueError>([&] { run([&] { return f.sandbox->exec(Command("  \n")); }); }),
             Catch::Contains("blank"));
  CHECK_THAT(message_of<ValueError>([&] { run([&] { return f.sandbox->exec(Command(std::vector<std::string>{})); }); }),
             Catch::Contains("empty"));
  CHECK_THAT(message_of<ValueError>(
                 [&] { run([&] { return f.sandbox->exec(Command(std::vector<std::string>{"", "x"})); }); }),
             Catch::Contains("argv[0] is empty"));
  CHECK_THAT(message_of<ValueError>(
                 [&] { run([&] { return f.sandbox->exec(Command(std::vector<std::string>{"echo", std::string("a\0b", 3)})); }); }),
             Catch::Contains("argv[1]") && Catch::Contains("NUL"));
  CHECK(f.sandbox->commands().empty());
}

TEST_CASE("AGENT-2 standard_tools: the set follows the backend's declarations and the spec; no router is "
          "NoSandboxBackend") {
  ToolFixture f;
  auto names = [](const std::vector<SandboxedTool>& tools) {
    std::vector<std::string> out;
    for (const auto& t : tools) out.push_back(t.definition().name);
    return out;
  };
  const auto all = standard_tools(f.router, f.context, standard_tools_spec());
  // The double declares RUN_CODE and FILES_LIST; the spec declares no outputs.
  CHECK(names(all) == std::vector<std::string>{"run_command", "write_file", "read_file", "list_files", "run_code"});
  CHECK(names(standard_tools(f.router, f.context, standard_tools_spec(), {.list_files = false, .run_code = false})) ==
        std::vector<std::string>{"run_command", "write_file", "read_file"});
  CHECK(all[0].cleanup() == Cleanup::Dispose);
  CHECK(standard_tools(f.router, f.context, standard_tools_spec(), {.cleanup = rung_for(BetweenCalls::KeepSandbox)})[0]
            .cleanup() == Cleanup::Reclaim);
  CHECK_THROWS_AS(standard_tools(std::shared_ptr<SandboxRouter>(), f.context, standard_tools_spec()), NoSandboxBackend);
  const nlohmann::json mcp = to_mcp_json(all[2].definition());
  CHECK(mcp["name"] == "read_file");
  CHECK(mcp["annotations"]["readOnlyHint"] == true);
  CHECK(mcp["inputSchema"]["required"] == nlohmann::json::array({"path"}));
}

TEST_CASE("AGENT-2 the standard tools over the double: write then read in one conversation; a missing file is an "
          "error result") {
  ToolFixture f;
  const auto tools = standard_tools(f.router, f.context, standard_tools_spec(),
                                    {.cleanup = rung_for(BetweenCalls::KeepSandbox)});
  BlockingRunner run;
  const ToolResult wrote =
      run([&] { return tools[1].invoke(ToolCall{"1", "write_file", {{"path", "a.txt"}, {"content", "hi"}}}); });
  CHECK_FALSE(wrote.is_error);
  const ToolResult read = run([&] { return tools[2].invoke(ToolCall{"2", "read_file", {{"path", "a.txt"}}}); });
  CHECK(read.joined_text() == "hi");
  const ToolResult missing = run([&] { return tools[2].invoke(ToolCall{"3", "read_file", {{"path", "b.txt"}}}); });
  CHECK(missing.is_error);
  CHECK_THAT(missing.joined_text(), Catch::StartsWith("Error: ") && Catch::Contains("b.txt"));
}
