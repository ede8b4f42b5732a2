#pragma once
// The "bad input and faults" scenarios of issue 26, written once and run against a real
// backend (test_tools_process.cpp, test_tools_docker.cpp). Each asserts what the tool
// answered and that the engine holds nothing of this test's key afterwards — counted by the
// engine (sandbox directories, labelled containers), never by the library's own records.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/sync.hpp"

namespace tools_test {

using namespace maf::sandbox;

/// One engine under test.
struct Engine {
  std::shared_ptr<SandboxBackend> backend;
  SandboxSpec spec;
  std::string scope;
  Isolation floor;
  /// How many sandboxes of this test's scope the engine holds now.
  std::function<int()> sandboxes_alive;
  /// Whether `relative` exists under the storage base of `sandbox` (asked of the engine).
  std::function<bool(Sandbox&, const std::string&)> guest_has;
  /// A guest command after which the guest's own `rm -rf` of the call directory fails.
  std::string refuse_reclaim;
};

inline const nlohmann::json kShellSchema = {
    {"type", "object"},
    {"properties", {{"command", {{"type", "string"}, {"minLength", 1}}}, {"fail", {{"enum", {"none", "throw", "cancel"}}}}}},
    {"required", {"command"}},
    {"additionalProperties", false}};

/// Runs `command` in the call's own directory; "fail" makes the body throw or cancel after it.
inline ToolBody shell_body(std::shared_ptr<std::shared_ptr<Sandbox>> last = std::make_shared<std::shared_ptr<Sandbox>>()) {
  return [last](SandboxToolSession session, nlohmann::json args) -> boost::asio::awaitable<ToolResult> {
    auto sandbox = co_await session.acquire();
    if (!sandbox) co_return ToolResult::error(sandbox.refusal());
    *last = *sandbox;
    const std::string dir = session.guest_call_path();
    Command make_dir(std::vector<std::string>{"mkdir", "-p", dir});  // named: the GCC 12 co_await trap
    co_await (*sandbox)->exec(std::move(make_dir), ".");
    auto result = co_await (*sandbox)->exec(args["command"].get<std::string>(), dir, std::chrono::seconds(30));
    const std::string fail = args.value("fail", std::string("none"));
    if (fail == "throw") throw OSError("the body failed after running the command");
    if (fail == "cancel") throw Cancelled();
    ToolResult r = ToolResult::text(result.stdout_text());
    r.structured = nlohmann::json{{"dir", dir}, {"exit_code", result.exit_code}};
    r.is_error = result.exit_code != 0;
    co_return r;
  };
}

struct Harness {
  Engine& engine;
  std::shared_ptr<SandboxRouter> router;
  CallerContext context;
  BlockingRunner run;
  std::shared_ptr<std::shared_ptr<Sandbox>> last = std::make_shared<std::shared_ptr<Sandbox>>();

  // The backend itself declares RECLAIM (proven by the CLEANUP suite); no stand-in adds it.
  explicit Harness(Engine& e) : engine(e) {
    REQUIRE(engine.backend->declarations().capabilities.contains(Capability::Reclaim));
    router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{engine.backend},
                                             RouterOptions::lowered_floor(engine.floor, LowerIsolationFloor{}));
    context.current_scope = [s = engine.scope] { return s; };
    context.current_thread_id = [] { return std::optional<std::string>("thread-1"); };
  }
  SandboxKey key() const { return SandboxKey{engine.scope, "thread-1", "agent-1", ""}; }
  SandboxedTool tool(SandboxedToolOptions options = {}) {
    options.input_schema = kShellSchema;
    const SandboxedTool tool = sandboxed_tool(shell_body(last), router, context, "agent-1", engine.spec, "shell", std::move(options));
    return tool;
  }
  ToolResult call(const SandboxedTool& t, nlohmann::json args) {
    return run([&] { return t.invoke(ToolCall{"call-1", "shell", std::move(args)}); });
  }
};

inline void schema_invalid_runs_nothing(Engine& e) {
  Harness h(e);
  auto tool = h.tool();
  const ToolResult r = h.call(tool, {{"command", 42}});
  CHECK(r.is_error);
  CHECK_THAT(r.joined_text(), Catch::Contains("/command"));
  CHECK(*h.last == nullptr);  // the body never ran
  CHECK(e.sandboxes_alive() == 0);
}

inline void dispose_leaves_nothing(Engine& e) {
  Harness h(e);
  auto tool = h.tool();
  const ToolResult r = h.call(tool, {{"command", "echo hello > out.txt && cat out.txt"}});
  CHECK_FALSE(r.is_error);
  CHECK(r.joined_text() == "hello\n");
  CHECK(e.sandboxes_alive() == 0);
}

inline void reclaim_removes_the_call_directory(Engine& e) {
  Harness h(e);
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  auto tool = h.tool(o);
  const ToolResult first = h.call(tool, {{"command", "echo one > f.txt"}});
  REQUIRE_FALSE(first.is_error);
  auto sandbox = *h.last;
  REQUIRE(sandbox);
  h.run([&] { return sandbox->write_file("sibling/keep.txt", "another call's", "."); });
  const std::string dir = (*first.structured)["dir"];
  CHECK_FALSE(e.guest_has(*sandbox, dir));  // removed by the guest's own rm
  CHECK(e.guest_has(*sandbox, "sibling/keep.txt"));
  CHECK(e.sandboxes_alive() == 1);  // RECLAIM keeps the sandbox
  const ToolResult second = h.call(tool, {{"command", "ls ../sibling"}});
  CHECK(second.joined_text() == "keep.txt\n");
  CHECK((*h.last)->instance_id() == sandbox->instance_id());  // the same sandbox served the next call
  h.run([&] { return h.router->dispose(h.key()); });
  CHECK(e.sandboxes_alive() == 0);
}

inline void body_throws_and_cancellation(Engine& e) {
  Harness h(e);
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  o.errors = ToolErrors::Propagate;  // this scenario is about the exception's way out
  auto tool = h.tool(o);
  CHECK_THROWS_WITH(h.call(tool, {{"command", "touch a"}, {"fail", "throw"}}), Catch::Contains("the body failed"));
  auto sandbox = *h.last;
  REQUIRE(sandbox);
  CHECK_THROWS_AS(h.call(tool, {{"command", "touch b"}, {"fail", "cancel"}}), Cancelled);
  // Both calls' directories are gone; nothing but the base is left.
  const auto left = h.run([&] { return sandbox->exec("ls -A | wc -l", "."); });
  CHECK(left.stdout_text() == "0\n");
  h.run([&] { return h.router->dispose(h.key()); });
  CHECK(e.sandboxes_alive() == 0);
}

inline void backend_fails_mid_call(Engine& e) {
  Harness h(e);
  auto tool = sandboxed_tool(
      [](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
        auto sandbox = co_await session.acquire();
        auto r = co_await (*sandbox)->exec("sleep 20", ".", std::chrono::milliseconds(300));  // the deadline fails it
        co_return ToolResult::text(r.stdout_text());
      },
      h.router, h.context, "agent-1", e.spec, "shell", {.errors = ToolErrors::Propagate});
  CHECK_THROWS_AS(h.run([&] { return tool.invoke(ToolCall{"c", "shell", nlohmann::json::object()}); }), TimeoutError);
  CHECK(e.sandboxes_alive() == 0);  // DISPOSE still ran
}

inline void failed_cleanup_marks_the_key(Engine& e) {
  Harness h(e);
  std::vector<ReclaimFailure> reported;
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  o.cleanup.on_reclaim_failure = [&reported](ReclaimFailure f) -> boost::asio::awaitable<void> {
    reported.push_back(std::move(f));
    co_return;
  };
  auto tool = h.tool(o);
  // The guest makes its own rm fail (RECLAIM runs as the guest, so it cannot do more).
  const ToolResult r = h.call(tool, {{"command", e.refuse_reclaim}});
  CHECK_FALSE(r.is_error);
  REQUIRE(reported.size() == 1);
  CHECK(reported[0].key == h.key());
  CHECK_THAT(reported[0].reason, Catch::Contains("rm exited"));
  // The owed disposal ran and landed: nothing left, and the key is clean again.
  CHECK(h.router->unclean().empty());
  CHECK(e.sandboxes_alive() == 0);
}

inline void unclean_key_is_refused_until_disposed(Engine& e) {
  Harness h(e);
  SandboxedToolOptions o;
  auto tool = h.tool(o);
  REQUIRE_FALSE(h.call(tool, {{"command", "true"}}).is_error);
  auto sandbox = *h.last;
  // A cleanup the host ran itself failed: it records the target.
  auto kept = h.run([&] { return h.router->acquire(h.key(), e.spec); });
  h.router->mark_unclean({h.key(), kept->backend_name(), kept->kind(), kept->instance_id(), "host cleanup failed"});
  CHECK(e.sandboxes_alive() == 1);
  CHECK_THROWS_AS(h.run([&] { return h.router->acquire(h.key(), e.spec); }), SandboxKeyUnclean);
  CHECK(h.call(tool, {{"command", "true"}}).joined_text() == kRefusalSandboxUnavailable);
  CHECK(h.run([&] { return h.router->dispose_unclean(std::chrono::seconds(60)); }).empty());
  CHECK(e.sandboxes_alive() == 0);
  CHECK_FALSE(h.call(tool, {{"command", "true"}}).is_error);
  CHECK(e.sandboxes_alive() == 0);
}

}  // namespace tools_test
