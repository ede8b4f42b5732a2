// AGENT-1 (docs/tools.md "GCC 12 and temporaries"): every public awaitable a host calls, called
// the way its documentation shows — temporaries and all — inside a coroutine, where GCC 12
// destroys a braced aggregate temporary of a co_await expression twice. This file is built
// twice (unit_test_awaitable_temporaries at -O0, unit_test_awaitable_temporaries_o2 at -O2) and
// both run under ASan+UBSan in scripts/test.d/30-sanitizers: a double destruction there is a
// "double-free" or "free(): invalid pointer" report, and the test fails.
//
// Each call's own outcome is beside the point (the in-process double runs no program, so some
// end in a refusal); what is checked is that the arguments live and die once, and that each
// call got as far as the callee (its result or refusal is the one expected).
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "maf/sandbox/testing/in_process.hpp"
#include "maf/sandbox/tools.hpp"

using namespace maf::sandbox;
using boost::asio::awaitable;
using testing::InProcessSandbox;
using testing::InProcessSandboxBackend;

namespace {

// Long enough to live on the heap: a double destruction of it is a double free ASan sees.
const std::string kLong = "a-string-well-past-the-small-string-buffer-so-it-is-on-the-heap";

struct World {
  std::shared_ptr<InProcessSandbox> sandbox;
  std::shared_ptr<InProcessSandboxBackend> backend;
  std::shared_ptr<SandboxRouter> router;
  BlockingRunner run;

  World() {
    CapabilitySet caps = testing::kInProcessCapabilities;
    caps.insert(Capability::Reclaim);
    caps.insert(Capability::HostTools);
    sandbox = std::make_shared<InProcessSandbox>(testing::InProcessSandboxOptions{
        .outputs = {{"echo", kLong + "\n"}}, .capabilities = caps, .kind = "shell"});
    BackendDeclarations d = testing::kFakeBackendDeclarations;
    d.capabilities = caps;
    backend = std::make_shared<InProcessSandboxBackend>(
        testing::InProcessSandboxBackendOptions{.sandbox = sandbox, .declarations = d});
    sandbox = backend->sandbox();
    router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{backend},
                                             RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{}));
  }
};

SandboxSpec shell_spec() {
  return SandboxSpec({.kind = "shell", .requires_capabilities = {Capability::Exec, Capability::FilesIn}});
}

}  // namespace

TEST_CASE("AGENT-1 the Sandbox, router and handle awaitables take temporaries as documented") {
  World w;
  const SandboxKey key{"tenant", kLong, "agent", ""};
  const SandboxSpec spec = shell_spec();
  std::string seen;
  w.run([&]() -> awaitable<void> {
    auto sb = co_await w.router->acquire(key, spec);
    co_await sb->write_file(kLong + ".txt", std::string(kLong), ".");
    seen = co_await sb->read_file(kLong + ".txt", std::string("."), 1 << 20);
    const auto r = co_await sb->exec(Command(std::string("echo ") + kLong), std::string("."), std::chrono::seconds(5));
    seen += r.stdout_text();
    const auto ran_code = co_await sb->run_code(std::string("print('") + kLong + "')", std::chrono::seconds(5));
    (void)ran_code;
    const auto listed = co_await sb->list_dir(std::string("."), std::string("."));
    seen += std::to_string(listed.size());
    const auto stat = co_await sb->stat_file(kLong + ".txt", std::string("."));
    seen += stat ? "+" : "-";
    co_await sb->remove(kLong + ".txt", std::string("."), false);
    co_await sb->reclaim(sb->storage_base() + "/call-" + kLong.substr(0, 12), std::string("."), std::chrono::seconds(5));
    co_await w.router->dispose_kind(key, std::string("shell"));
    co_await w.router->dispose(key);
    co_await w.router->dispose_scope(std::string("tenant"), std::string(kLong));
    co_await w.router->with_scope(std::string("tenant"), std::string(kLong), [&]() -> awaitable<void> { co_return; });
    auto handle = co_await SandboxHandle::open(*w.router, key, spec);
    co_await handle.write(kLong, std::string(kLong));
    seen += co_await handle.read(kLong);
    (void)co_await handle.run(Command(std::string("echo ") + kLong));
    co_await handle.close();
  });
  CHECK(seen == kLong + kLong + "\n" + "1+" + kLong);
}

TEST_CASE("AGENT-1 the tool layer's awaitables take temporaries as documented: invoke({…}), session.exec, "
          "session.start_background without options") {
  World w;
  std::atomic<int> bodies{0};
  SandboxedTool tool = sandboxed_tool(
      [&bodies](SandboxToolSession session, nlohmann::json args) -> awaitable<ToolResult> {
        ++bodies;
        auto sandbox = co_await session.acquire();
        if (!sandbox) co_return ToolResult::error(sandbox.refusal());
        const auto r = co_await session.exec(**sandbox, Command("echo " + args["text"].get<std::string>()),
                                             session.guest_call_path(), std::chrono::seconds(5));
        try {
          co_await session.start_background(*sandbox, Command(std::string("sleep ") + kLong));
        } catch (const NotImplementedError&) {  // the double declares no BACKGROUND: refused, nothing started
        }
        co_return ToolResult::text(r.stdout_text());
      },
      w.router, fixed_conversation("tenant", kLong), "agent", shell_spec(), "shell",
      {.input_schema = {{"type", "object"}, {"required", {"text"}}}});
  ToolResult braced, parsed;
  w.run([&]() -> awaitable<void> {
    // JSON written in braces is an initializer_list, which GCC 12 refuses inside a co_await
    // ("array used as initializer"): a compile error, not a crash. The arguments are named.
    const nlohmann::json arguments{{"text", kLong}};
    braced = co_await tool.invoke({"call-1", "shell", arguments});
    parsed = co_await tool.invoke(parse_tool_call(R"({"id":"2","name":"shell","arguments":{"text":"x"}})"));
  });
  CHECK(bodies == 2);
  CHECK(braced.joined_text() == kLong + "\n");
  CHECK_FALSE(parsed.is_error);
}

TEST_CASE("AGENT-1 start_background and run_with_host_tools take named options and programs; the defaulted form is "
          "an overload, not a braced default") {
  World w;
  const SandboxKey key{"tenant", kLong, "agent", ""};
  const SandboxSpec spec = shell_spec();
  HostToolRegistry registry;
  registry.add({.name = "echo", .function = [](const nlohmann::json& a, const HostToolCallContext&) { return a; }});
  (void)registry.aggregate();  // sealed, as a spec would seal it
  int refused = 0;
  w.run([&]() -> awaitable<void> {
    auto sb = co_await w.router->acquire(key, spec);
    const BackgroundOptions options{.working_directory = kLong};
    for (int i = 0; i < 2; ++i) {
      try {
        if (i == 0) co_await start_background(sb, Command(kLong));
        else co_await start_background(sb, Command(kLong), options);
      } catch (const NotImplementedError& e) {  // BG-9: no BACKGROUND, refused before any exec
        refused += std::string(e.what()).find("background") != std::string::npos;
      }
    }
    HostToolRun run(registry);
    const HostToolProgram program{.command = Command(std::string("maf-host-tool echo '{}' # ") + kLong),
                                  .working_directory = kLong.substr(0, 20)};
    try {
      co_await run_with_host_tools(*sb, run, program);
    } catch (const std::exception&) {  // the double runs no program: the run cannot complete
    }
  });
  CHECK(refused == 2);
}

TEST_CASE("AGENT-1 collect_outputs and find_background take temporaries as documented") {
  World w;
  const SandboxKey key{"tenant", kLong, "agent", ""};
  int outcomes = 0;
  w.run([&]() -> awaitable<void> {
    auto sb = co_await w.router->acquire(key, shell_spec());
    const auto landed = co_await collect_outputs(*sb, shell_spec(), nullptr);
    outcomes += landed.empty();
    try {
      co_await find_background(sb, std::string(16, 'a'));
    } catch (const NotImplementedError&) {
      ++outcomes;
    }
  });
  CHECK(outcomes == 2);
}

TEST_CASE("AGENT-1 a braced SandboxKey temporary in a co_await expression lives and dies once (it has a constructor)") {
  World w;
  const SandboxSpec spec = shell_spec();
  std::string seen;
  w.run([&]() -> awaitable<void> {
    auto sb = co_await w.router->acquire(SandboxKey{"tenant", kLong, "agent"}, spec);
    seen = sb->kind();
    CallTicket ticket = co_await w.router->admit_call(SandboxKey{"tenant", kLong, "agent", kLong}, std::string("shell"));
    const auto failures = co_await w.router->release_call(std::move(ticket));
    seen += std::to_string(failures.size());
    seen += co_await w.router->dispose_kind(SandboxKey{"tenant", kLong, "agent"}, std::string("shell")) ? "+" : "-";
    co_await w.router->dispose(SandboxKey{"tenant", kLong, "agent"});
    auto handle = co_await SandboxHandle::open(*w.router, SandboxKey{"tenant", kLong, "agent"}, spec);
    seen += (co_await handle.run(Command(std::string("echo ") + kLong))).stdout_text();
    co_await handle.close();
  });
  CHECK(seen == "shell0+" + kLong + "\n");
}

TEST_CASE("AGENT-1 admit_call, exec and exec_stream without options are overloads, not braced defaults; their "
          "options and inputs are named and copied before the awaitable runs") {
  World w;
  const SandboxKey key{"tenant", kLong, "agent", ""};
  const SandboxSpec spec = shell_spec();
  std::string seen;
  int refused = 0;
  w.run([&]() -> awaitable<void> {
    auto sb = co_await w.router->acquire(key, spec);
    // The awaitables are made from options that are gone before they run: each copied its own.
    auto admitting = [&] {
      const AdmitOptions options{.exclusive = true, .tool = kLong, .call_id = kLong};
      return w.router->admit_call(key, std::string("shell"), options);
    }();
    CallTicket ticket = co_await std::move(admitting);
    co_await w.router->release_call(std::move(ticket));
    auto echoing = [&] {
      const ExecInput input{};  // the double takes no environment or stdin: an empty input needs nothing
      return sb->exec(Command(std::string("echo ") + kLong), input, std::string("."), std::chrono::seconds(5));
    }();
    seen = (co_await std::move(echoing)).stdout_text();
    for (int i = 0; i < 2; ++i) {
      try {
        const auto handler = [&](OutputStream, std::string_view bytes) { seen.append(bytes); };
        if (i == 0) {
          co_await sb->exec_stream(Command(std::string("echo ") + kLong), handler);
        } else {
          auto streaming = [&] {
            const ExecStreamOptions options{.working_directory = kLong.substr(0, 20)};
            return sb->exec_stream(Command(std::string("echo ") + kLong), handler, options);
          }();
          co_await std::move(streaming);
        }
      } catch (const NotImplementedError& e) {  // the double declares no EXEC_STREAM: refused, nothing ran
        refused += std::string(e.what()).find("exec_stream") != std::string::npos;
      }
    }
  });
  CHECK(seen == kLong + "\n");
  CHECK(refused == 2);
}
