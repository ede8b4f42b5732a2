// sandboxed_tool on the in-process double: the attach order (C-118), the session's refusals
// (C-119), guest_call_path and its removal (C-120), the cleanup ladder and unclean keys
// (docs/tools.md "The cleanup ladder"), argument validation and result labels (issue 26 items 1–4, 6).
#include <catch2/catch.hpp>

#include <filesystem>

#include "message_of.hpp"
#include "maf/sandbox/sink.hpp"
#include "unit/tool_fixture.hpp"

using namespace maf::sandbox;
using maf::sandbox::test::message_of;
using maf::sandbox::test::ToolFixture;
using maf::sandbox::test::writing_body;

namespace {

ToolBody never_runs(std::shared_ptr<std::atomic<int>> ran) {
  return [ran](SandboxToolSession, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
    ++*ran;
    co_return ToolResult::text("ran");
  };
}

const nlohmann::json kShellSchema = {
    {"type", "object"},
    {"properties",
     {{"command", {{"type", "string"}, {"minLength", 1}}},
      {"timeout_s", {{"type", "integer"}, {"minimum", 1}, {"maximum", 600}}},
      {"mode", {{"enum", {"fast", "slow"}}}},
      {"files", {{"type", "array"}, {"items", {{"type", "string"}}}}}}},
    {"required", {"command"}},
    {"additionalProperties", false}};

}  // namespace

// --- C-118: the attach order ---

// Issue 44 item 9 changed this rule: sandboxed_tool returns one tool or throws, so "no router"
// is the typed NoSandboxBackend (it used to be an empty list).
TEST_CASE("C-118 a null or disabled router is NoSandboxBackend, checked before anything else") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  CHECK_THAT(message_of<NoSandboxBackend>(
                 [&] { sandboxed_tool(never_runs(ran), std::shared_ptr<SandboxRouter>(), f.context, "a", ToolFixture::spec(), "shell"); }),
             Catch::Contains("'shell'") && Catch::Contains("no router"));
  auto disabled = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{});
  // Even a configuration that would be refused later is refused for the router first.
  SandboxedToolOptions bad;
  bad.cleanup.reclaim_timeout = std::chrono::milliseconds(0);
  CHECK_THAT(message_of<NoSandboxBackend>(
                 [&] { sandboxed_tool(never_runs(ran), disabled, f.context, "a", ToolFixture::spec(), "shell", bad); }),
             Catch::Contains("disabled"));
  CHECK(*ran == 0);
}

TEST_CASE("C-118 a sink and explicit labels together is ValueError, checked before the missing-sink refusal") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxedToolOptions o;
  o.output_sink = make_file_system_sink(std::filesystem::temp_directory_path());
  o.provenance.labels = ContentLabels{};
  // This spec would also fail the FILES_OUT check; the sink/labels conflict comes first.
  SandboxSpec spec({.kind = "shell", .declared_outputs = {DeclaredOutput{.path = "out.txt"}}});
  CHECK_THAT(message_of<ValueError>([&] { sandboxed_tool(never_runs(ran), f.router, f.context, "a", spec, "shell", o); }),
             Catch::Contains("sink and explicit labels"));
}

TEST_CASE("C-118 a spec that lands artifacts without a sink is SandboxOutputSinkRequired") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxSpec spec({.kind = "shell",
                    .requires_capabilities = {Capability::Exec, Capability::FilesOut},
                    .declared_outputs = {DeclaredOutput{.path = "out.txt"}}});
  CHECK_THAT(message_of<SandboxOutputSinkRequired>(
                 [&] { sandboxed_tool(never_runs(ran), f.router, f.context, "a", spec, "shell"); }),
             Catch::Contains("needs an output sink"));
}

TEST_CASE("C-118 outputs declared (or named at call time) without files_out is ValueError") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxSpec consumed({.kind = "shell",
                        .declared_outputs = {DeclaredOutput{.path = "r.json", .disposition = OutputDisposition::Consume}}});
  CHECK_THAT(message_of<ValueError>([&] { sandboxed_tool(never_runs(ran), f.router, f.context, "a", consumed, "shell"); }),
             Catch::Contains("does not require files_out"));
  SandboxedToolOptions o;
  o.output_sink = make_file_system_sink(std::filesystem::temp_directory_path());
  SandboxSpec named({.kind = "shell", .outputs_named_at_call_time = true});
  CHECK_THROWS_AS(sandboxed_tool(never_runs(ran), f.router, f.context, "a", named, "shell", o), ValueError);
}

TEST_CASE("C-118 a reclaim_timeout that is not positive is ValueError naming it") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxedToolOptions o;
  o.cleanup.reclaim_timeout = std::chrono::milliseconds(-5);
  CHECK_THAT(message_of<ValueError>(
                 [&] { sandboxed_tool(never_runs(ran), f.router, f.context, "a", ToolFixture::spec(), "shell", o); }),
             Catch::Contains("reclaim_timeout") && Catch::Contains("-5"));
}

TEST_CASE("C-118 ensure_can_serve runs at attach: a capability the backend lacks is refused before any call") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxSpec spec({.kind = "shell", .requires_capabilities = {Capability::Exec, Capability::HostTools}});
  CHECK_THROWS_AS(sandboxed_tool(never_runs(ran), f.router, f.context, "a", spec, "shell"), SandboxCapabilityNotSupported);
  CHECK(f.backend->keys().empty());
}

TEST_CASE("C-118 a work_dir that normalises to / is ValueError (the call directory would sit under the root)") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxSpec spec({.kind = "shell", .work_dir = "/tmp/.."});
  CHECK_THAT(message_of<ValueError>([&] { sandboxed_tool(never_runs(ran), f.router, f.context, "a", spec, "shell"); }),
             Catch::Contains("'/tmp/..'"));
  // The root itself: the same rule as every backend's acquire (ACQ-2), at attach.
  SandboxSpec root({.kind = "shell", .work_dir = "/"});
  CHECK_THAT(message_of<ValueError>([&] { sandboxed_tool(never_runs(ran), f.router, f.context, "a", root, "shell"); }),
             Catch::Contains("work_dir '/'") && Catch::Contains("sandboxed_tool 'shell'"));
  CHECK(ran->load() == 0);
}

TEST_CASE("cleanup ladder: RECLAIM without the backend's reclaim capability, or RESET without snapshot, is refused at attach") {
  ToolFixture f(testing::kInProcessCapabilities);
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  CHECK_THAT(message_of<SandboxCapabilityNotSupported>(
                 [&] { sandboxed_tool(never_runs(ran), f.router, f.context, "a", ToolFixture::spec(), "shell", o); }),
             Catch::Contains("'reclaim'") && Catch::Contains("in-process"));
  o.cleanup.rung = Cleanup::Reset;
  CHECK_THAT(message_of<SandboxCapabilityNotSupported>(
                 [&] { sandboxed_tool(never_runs(ran), f.router, f.context, "a", ToolFixture::spec(), "shell", o); }),
             Catch::Contains("'snapshot'"));
}

TEST_CASE("cleanup ladder: the default rung is DISPOSE; IsolationScope::Call always disposes; the kind's floor raises the host's rung") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  CHECK(f.attach(never_runs(ran)).cleanup() == Cleanup::Dispose);
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  CHECK(f.attach(never_runs(ran), o).cleanup() == Cleanup::Reclaim);
  CHECK(f.attach(never_runs(ran), o, ToolFixture::spec(IsolationScope::Call)).cleanup() == Cleanup::Dispose);
  o.cleanup.workload_floor = Cleanup::Reset;
  CHECK(f.attach(never_runs(ran), o).cleanup() == Cleanup::Reset);
}

TEST_CASE("an input schema that is not a JSON Schema is ValueError at attach") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxedToolOptions o;
  o.input_schema = nlohmann::json{{"type", 17}};
  CHECK_THAT(message_of<ValueError>([&] { f.attach(never_runs(ran), o); }), Catch::Contains("not a valid JSON Schema"));
  o.input_schema = nlohmann::json::array();
  CHECK_THROWS_AS(f.attach(never_runs(ran), o), ValueError);
}

// --- arguments: checked before anything runs ---

TEST_CASE("schema-invalid arguments are an is_error result naming the field, and nothing runs") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  SandboxedToolOptions o;
  o.input_schema = kShellSchema;
  auto tool = f.attach(never_runs(ran), o);
  struct Case {
    nlohmann::json args;
    std::string names;
  };
  const std::vector<Case> cases{
      {nlohmann::json::object(), "command"},                                       // required
      {{{"command", 5}}, "/command"},                                              // type
      {{{"command", ""}}, "/command"},                                             // minLength
      {{{"command", "ls"}, {"timeout_s", 0}}, "/timeout_s"},                       // minimum
      {{{"command", "ls"}, {"timeout_s", 601}}, "/timeout_s"},                     // maximum
      {{{"command", "ls"}, {"mode", "medium"}}, "/mode"},                          // enum
      {{{"command", "ls"}, {"files", {"a", 2}}}, "/files/1"},                      // items
      {{{"command", "ls"}, {"extra", true}}, "extra"},                             // additionalProperties
      {nlohmann::json::array(), "/"},                                              // not an object
  };
  for (const auto& c : cases) {
    INFO(c.args.dump());
    const ToolResult r = f.invoke(tool, c.args);
    CHECK(r.is_error);
    CHECK_THAT(r.joined_text(), Catch::Contains("invalid arguments for tool 'shell'") && Catch::Contains(c.names));
  }
  CHECK(*ran == 0);
  CHECK(f.backend->keys().empty());  // nothing acquired, nothing admitted
  CHECK(f.router->unclean().empty());
  CHECK_FALSE(f.invoke(tool, {{"command", "ls"}, {"files", {"a"}}, {"mode", "fast"}}).is_error);
  CHECK(*ran == 1);
}

TEST_CASE("a call naming another tool is an is_error result and the body never runs") {
  ToolFixture f;
  auto ran = std::make_shared<std::atomic<int>>(0);
  auto tool = f.attach(never_runs(ran));
  const ToolResult r = f.run([&] { return tool.invoke(ToolCall{"c", "python", nlohmann::json::object()}); });
  CHECK(r.is_error);
  CHECK_THAT(r.joined_text(), Catch::Contains("'python'"));
  CHECK(*ran == 0);
}

// --- C-119: the session's refusals ---

TEST_CASE("C-119 key() without a thread is the fixed no-thread sentence, and nothing is acquired") {
  ToolFixture f;
  f.context.current_thread_id = [] { return std::optional<std::string>(); };
  auto tool = f.attach(writing_body());
  const ToolResult r = f.invoke(tool);
  CHECK(r.is_error);
  CHECK(r.joined_text() == no_thread_refusal("shell"));
  CHECK(f.backend->keys().empty());
}

TEST_CASE("C-119 acquire maps no backend, a ValueError (verbatim) and any other failure (fixed sentence) to strings") {
  ToolFixture f;
  auto tool = f.attach(writing_body());
  f.backend->set_acquire_error(std::make_exception_ptr(NoSandboxBackend("registry lost it")));
  CHECK(f.invoke(tool).joined_text() == kRefusalNoBackend);
  f.backend->set_acquire_error(std::make_exception_ptr(ValueError("image 'python-9' is not known")));
  CHECK(f.invoke(tool).joined_text() == "Error: image 'python-9' is not known");
  f.backend->set_acquire_error(std::make_exception_ptr(OSError("https://secret.example/sub/1234 said 503")));
  const ToolResult r = f.invoke(tool);
  CHECK(r.joined_text() == kRefusalSandboxUnavailable);
  CHECK_THAT(r.joined_text(), !Catch::Contains("secret"));
  CHECK(r.content.front().labels == kLibraryAuthoredLabels);
}

TEST_CASE("C-119 Refusable::value() raises SandboxToolRefused, which invoke returns as the is_error sentence") {
  ToolFixture f;
  f.context.current_thread_id = [] { return std::optional<std::string>(); };
  auto tool = f.attach([](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
    SandboxKey key = session.key().value();  // refuses
    co_return ToolResult::text(to_string(key));
  });
  const ToolResult r = f.invoke(tool);
  CHECK(r.is_error);
  CHECK(r.joined_text() == no_thread_refusal("shell"));
}

// --- C-120: guest_call_path ---

TEST_CASE("C-120 guest_call_path raises RuntimeError outside a call and after it returned") {
  ToolFixture f;
  CHECK_THROWS_AS(SandboxToolSession{}.guest_call_path(), RuntimeError);
  std::optional<SandboxToolSession> kept;
  auto tool = f.attach([&kept](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
    kept = session;
    co_return ToolResult::text(session.guest_call_path());
  });
  f.invoke(tool);
  REQUIRE(kept);
  CHECK_THAT(message_of<RuntimeError>([&] { kept->guest_call_path(); }), Catch::Contains("after its tool call returned"));
  // and a kept session's acquire is refused: nothing would clean up after it
  auto late = f.run([&] { return kept->acquire(); });
  CHECK_FALSE(late);
  CHECK(late.refusal() == kRefusalSandboxUnavailable);
}

TEST_CASE("C-120 one random 12-hex name per call, made lazily, stable within the call and relative") {
  ToolFixture f;
  auto tool = f.attach([](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
    const std::string a = session.guest_call_path();
    const std::string b = session.guest_call_path();
    co_return ToolResult::text(a == b ? a : "unstable");
  });
  const std::string first = f.invoke(tool).joined_text();
  const std::string second = f.invoke(tool).joined_text();
  CHECK(first.size() == 12);
  CHECK(first.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(first != second);
}

TEST_CASE("C-120 with RECLAIM the call's directory is removed after the result, and a sibling's directory stays") {
  ToolFixture f;
  f.sandbox->seed("sibling/keep.txt", std::string("other call"));
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  auto tool = f.attach(writing_body(), o);
  const ToolResult r = f.invoke(tool);
  REQUIRE_FALSE(r.is_error);
  const std::string dir = "/maf-sandbox/work/" + r.joined_text();
  REQUIRE(f.sandbox->reclaimed().size() == 1);
  CHECK(f.sandbox->reclaimed()[0].directory == dir);
  CHECK(f.sandbox->reclaimed()[0].timeout == kDefaultCleanupTimeout);
  CHECK_FALSE(f.sandbox->lstat_now(dir + "/note.txt"));
  CHECK(f.sandbox->lstat_now("/maf-sandbox/work/sibling/keep.txt"));
  CHECK(f.backend->dispose_requests().empty());  // RECLAIM keeps the sandbox
}

TEST_CASE("C-120 the directory is removed after a refusal, after an exception (rethrown unchanged) and after "
          "cancellation (bounded by min(reclaim_timeout, 2 s), Cancelled propagates)") {
  ToolFixture f;
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  o.cleanup.reclaim_timeout = std::chrono::seconds(10);
  o.errors = ToolErrors::Propagate;  // the exception's own way out (ToolErrors::AsResults: test_standard_tools)
  std::string how;
  auto tool = f.attach(
      [&how](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
        auto sandbox = co_await session.acquire();
        co_await (*sandbox)->write_file(session.guest_call_path() + "/x", "x", ".");
        if (how == "refuse") throw SandboxToolRefused("Error: refused on purpose");
        if (how == "throw") throw OSError("the body failed");
        if (how == "cancel") throw Cancelled();
        co_return ToolResult::text("ok");
      },
      o);
  how = "refuse";
  CHECK(f.invoke(tool).joined_text() == "Error: refused on purpose");
  how = "throw";
  CHECK_THROWS_WITH(f.invoke(tool), "the body failed");
  how = "cancel";
  CHECK_THROWS_AS(f.invoke(tool), Cancelled);
  const auto reclaimed = f.sandbox->reclaimed();
  REQUIRE(reclaimed.size() == 3);
  CHECK(reclaimed[0].timeout == std::chrono::seconds(10));
  CHECK(reclaimed[1].timeout == std::chrono::seconds(10));
  CHECK(reclaimed[2].timeout == std::chrono::seconds(2));
  CHECK(f.sandbox->contents().empty());  // every call's file is gone
}

TEST_CASE("C-120 nothing is removed when no name was allocated or nothing was acquired") {
  ToolFixture f;
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  auto no_name = f.attach(
      [](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
        auto sandbox = co_await session.acquire();
        co_return ToolResult::text("acquired, named nothing");
      },
      o);
  f.invoke(no_name);
  auto no_sandbox = f.attach(
      [](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
        co_return ToolResult::text(session.guest_call_path());
      },
      o);
  f.invoke(no_sandbox);
  CHECK(f.sandbox->hook_counts().reclaim == 0);
}

TEST_CASE("C-120, cleanup ladder: a failed reclaim goes to on_reclaim_failure as ReclaimFailure{tool, key, path, reason}, marks the "
          "key unclean and owes a disposal, which makes it clean again when it lands") {
  ToolFixture f;
  std::vector<ReclaimFailure> reported;
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  o.cleanup.on_reclaim_failure = [&reported](ReclaimFailure failure) -> boost::asio::awaitable<void> {
    reported.push_back(std::move(failure));
    co_return;
  };
  auto tool = f.attach(writing_body(), o);
  f.sandbox->set_reclaim_error(std::make_exception_ptr(OSError("rm: cannot remove: Device or resource busy")));
  const ToolResult r = f.invoke(tool);
  CHECK_FALSE(r.is_error);  // the call's own answer stands
  REQUIRE(reported.size() == 1);
  CHECK(reported[0].tool == "shell");
  CHECK(reported[0].key == f.key());
  CHECK(reported[0].path == "/maf-sandbox/work/" + r.joined_text());
  CHECK_THAT(reported[0].reason, Catch::Contains("Device or resource busy"));
  // The owed disposal ran (last call out), narrowed to kind and instance, and cleared the mark.
  REQUIRE(f.backend->dispose_requests().size() == 1);
  CHECK(f.backend->dispose_requests()[0].kind == "shell");
  CHECK(f.backend->dispose_requests()[0].instance_id == "in-process-0");
  CHECK(f.router->unclean().empty());
}

TEST_CASE("cleanup ladder: an unclean key is refused by the router with SandboxKeyUnclean naming key and target until a disposal "
          "lands; dispose_unclean retries the recorded targets") {
  ToolFixture f;
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto tool = f.attach(writing_body(calls), o);
  f.sandbox->set_reclaim_error(std::make_exception_ptr(OSError("rm failed")));
  f.backend->set_dispose_failure(DisposalFailure{kDisposalRefused, "the container is still there"});
  f.invoke(tool);
  REQUIRE(f.router->unclean().size() == 1);
  CHECK(f.router->unclean()[0].kind == "shell");
  CHECK(f.router->unclean()[0].instance_id == "in-process-0");
  const std::string refusal =
      message_of<SandboxKeyUnclean>([&] { f.run([&] { return f.router->acquire(f.key(), ToolFixture::spec()); }); });
  CHECK_THAT(refusal, Catch::Contains(to_string(f.key())) && Catch::Contains("in-process-0") &&
                          Catch::Contains("in-process"));
  // The model is told the fixed sentence; the body ran but got no sandbox.
  CHECK(f.invoke(tool).joined_text() == kRefusalSandboxUnavailable);
  // A retry that still fails leaves it unclean; one that lands clears it.
  CHECK(f.run([&] { return f.router->dispose_unclean(std::chrono::seconds(5)); }).size() == 1);
  f.backend->set_dispose_failure(std::nullopt);
  CHECK(f.run([&] { return f.router->dispose_unclean(std::chrono::seconds(5)); }).empty());
  f.sandbox->set_reclaim_error(nullptr);
  CHECK_FALSE(f.invoke(tool).is_error);
}

TEST_CASE("cleanup ladder: FailedReclaimPolicy::Keep: a failed reclaim is reported, the key stays usable and nothing is disposed") {
  ToolFixture f;
  int reported = 0;
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  o.cleanup.failed_reclaim = FailedReclaimPolicy::Keep;
  o.cleanup.on_reclaim_failure = [&reported](ReclaimFailure) -> boost::asio::awaitable<void> {
    ++reported;
    co_return;
  };
  auto tool = f.attach(writing_body(), o);
  f.sandbox->set_reclaim_error(std::make_exception_ptr(OSError("rm failed")));
  f.invoke(tool);
  CHECK(reported == 1);
  CHECK(f.router->unclean().empty());
  CHECK(f.backend->dispose_requests().empty());
  CHECK_FALSE(f.invoke(tool).is_error);
}

TEST_CASE("cleanup ladder: a host callback that throws never fails the call") {
  ToolFixture f;
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  o.cleanup.on_reclaim_failure = [](ReclaimFailure) -> boost::asio::awaitable<void> {
    throw std::runtime_error("host callback exploded");
    co_return;
  };
  auto tool = f.attach(writing_body(), o);
  f.sandbox->set_reclaim_error(std::make_exception_ptr(OSError("rm failed")));
  CHECK_FALSE(f.invoke(tool).is_error);
}

TEST_CASE("cleanup ladder: DISPOSE (the default) disposes after each call, narrowed to the kind and the instance") {
  ToolFixture f;
  auto tool = f.attach(writing_body());
  f.invoke(tool);
  f.invoke(tool);
  const auto requests = f.backend->dispose_requests();
  REQUIRE(requests.size() == 2);
  for (const auto& r : requests) {
    CHECK(r.key == f.key());
    CHECK(r.kind == "shell");
    CHECK(r.instance_id == "in-process-0");
  }
  CHECK(f.sandbox->hook_counts().reclaim == 0);  // the disposal takes the directory with it
}

TEST_CASE("cleanup ladder: IsolationScope::Call: each call has its own host-made call_id in the key, never the model's id") {
  ToolFixture f;
  auto tool = f.attach(writing_body(), {}, ToolFixture::spec(IsolationScope::Call));
  f.invoke(tool, nlohmann::json::object(), "model-id");
  f.invoke(tool, nlohmann::json::object(), "model-id");
  const auto keys = f.backend->keys();
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].call_id.rfind("call-", 0) == 0);
  CHECK(keys[0].call_id != keys[1].call_id);
  CHECK(keys[0].call_id != "model-id");
  REQUIRE(f.backend->dispose_requests().size() == 2);
  CHECK(f.backend->dispose_requests()[0].key == keys[0]);
}

TEST_CASE("cleanup ladder: RESET restores the acquire-time snapshot after the call; a failed reset escalates to a disposal") {
  // The double snapshots at construction, seeds included: the "image" content.
  auto sb = std::make_shared<testing::InProcessSandbox>(testing::InProcessSandboxOptions{
      .seed_files = {{"base.txt", std::string("from the image")}}, .capabilities = test::tool_capabilities(), .kind = "shell"});
  BackendDeclarations d = testing::kFakeBackendDeclarations;
  d.capabilities = test::tool_capabilities();
  ToolFixture g(test::tool_capabilities(), std::make_shared<testing::InProcessSandboxBackend>(
                                               testing::InProcessSandboxBackendOptions{.sandbox = sb, .declarations = d}));
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reset;
  auto tool = g.attach(writing_body(), o);
  g.invoke(tool);
  CHECK(sb->hook_counts().reset == 1);
  CHECK(sb->contents() == std::map<std::string, std::string>{{"/maf-sandbox/work/base.txt", "from the image"}});
  CHECK(g.backend->dispose_requests().empty());
  sb->set_reset_error(std::make_exception_ptr(OSError("snapshot gone")));
  g.invoke(tool);
  CHECK(g.backend->dispose_requests().size() == 1);
  CHECK(g.router->unclean().empty());
}

// --- labels and the blocking form ---

TEST_CASE("unlabelled result items are stamped untrusted/private, or with the tool's explicit labels; the body's own "
          "labels stay") {
  ToolFixture f;
  auto body = [](SandboxToolSession, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
    ToolResult r = ToolResult::text("guest said");
    r.content.push_back(ContentItem::bytes("\x89PNG", "image/png"));
    r.content.push_back(ContentItem::text("fixed guidance", kLibraryAuthoredLabels));
    co_return r;
  };
  const ToolResult plain = f.invoke(f.attach(body));
  CHECK(plain.content[0].labels == ContentLabels{Integrity::Untrusted, Confidentiality::Private});
  CHECK(plain.content[1].labels == ContentLabels{Integrity::Untrusted, Confidentiality::Private});
  CHECK(plain.content[2].labels == kLibraryAuthoredLabels);
  SandboxedToolOptions o;
  o.provenance.labels = ContentLabels{Integrity::Untrusted, Confidentiality::Public};
  CHECK(f.invoke(f.attach(body, o)).content[0].labels == ContentLabels{Integrity::Untrusted, Confidentiality::Public});
}

TEST_CASE("invoke_blocking runs a call to completion without a caller io_context") {
  ToolFixture f;
  SandboxedToolOptions o;
  o.cleanup.rung = Cleanup::Reclaim;
  auto tool = f.attach(writing_body(), o);
  const ToolResult r = tool.invoke_blocking(ToolCall{"c1", "shell", nlohmann::json::object()});
  CHECK_FALSE(r.is_error);
  CHECK(r.joined_text().size() == 12);
  CHECK(f.sandbox->hook_counts().reclaim == 1);
}

TEST_CASE("parse_tool_call reads the flat and the OpenAI nested shapes; arguments may be a JSON string") {
  ToolCall flat = parse_tool_call(R"({"id":"c1","name":"shell","arguments":{"command":"ls"}})");
  CHECK(flat.id == "c1");
  CHECK(flat.arguments["command"] == "ls");
  ToolCall nested = parse_tool_call(R"({"id":"c2","type":"function","function":{"name":"shell","arguments":"{\"command\":\"pwd\"}"}})");
  CHECK(nested.name == "shell");
  CHECK(nested.arguments["command"] == "pwd");
  CHECK_THAT(message_of<ValueError>([] { parse_tool_call(R"({"name":"shell"})"); }), Catch::Contains("'id'"));
  CHECK_THAT(message_of<ValueError>([] { parse_tool_call(R"({"id":"c","name":"shell","arguments":"{oops"})"); }),
             Catch::Contains("'arguments'"));
  CHECK_THROWS_AS(parse_tool_call("not json"), ValueError);
  const auto out = to_json(flat, ToolResult::error("Error: x"));
  CHECK(out["tool_call_id"] == "c1");
  CHECK(out["is_error"] == true);
  CHECK(out["content"][0]["labels"]["integrity"] == "trusted");
  const auto bytes = to_json(flat, ToolResult{{ContentItem::bytes("abcd", "application/octet-stream")}, false, {}});
  CHECK(bytes["content"][0]["data_base64"] == "YWJjZA==");
}
