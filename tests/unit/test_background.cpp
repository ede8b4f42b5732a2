// background.hpp against the in-process double (it runs no program): the gate and every bad
// input are refused before anything reaches the sandbox (docs/background.md BG-6, BG-7, BG-9).
// What a running program does is proven on the process backend (tests/background/).
#include <catch2/catch.hpp>

#include "maf/sandbox/background.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace std::chrono_literals;
using testing::InProcessSandbox;
using testing::InProcessSandboxOptions;

namespace {

std::shared_ptr<InProcessSandbox> sandbox(CapabilitySet capabilities) {
  return std::make_shared<InProcessSandbox>(
      InProcessSandboxOptions{.capabilities = capabilities, .backend_name = "in-process", .kind = "builds"});
}

const CapabilitySet kDeclared{Capability::Exec, Capability::FilesIn, Capability::Background};

}  // namespace

TEST_CASE("background BG-9: a sandbox that does not declare background refuses start and find, naming backend and "
          "kind, before any exec") {
  auto sb = sandbox(testing::kInProcessCapabilities);
  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return start_background(sb, Command("sleep 1")); }),
                    Catch::Contains("backend 'in-process' (kind 'builds')") && Catch::Contains("background"));
  CHECK_THROWS_AS(run([&] { return start_background(sb, Command("sleep 1")); }), NotImplementedError);
  CHECK_THROWS_AS(run([&] { return find_background(sb, "0123456789abcdef"); }), NotImplementedError);
  CHECK(sb->hook_counts().exec == 0);
}

TEST_CASE("background BG-6: an id is 16 characters of [a-z0-9]; anything else is a ValueError naming it") {
  CHECK_NOTHROW(validate_background_id("0123456789abcdef"));
  CHECK_NOTHROW(validate_background_id("zzzzzzzzzzzzzzzz"));
  for (const std::string bad : {"", "0123456789abcde", "0123456789abcdef0", "0123456789ABCDEF", "../../etc/passwd",
                                "0123456789abcd e", "0123456789abcd;e"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(validate_background_id(bad), ValueError);
    CHECK_THROWS_WITH(validate_background_id(bad), Catch::Contains("'" + bad + "'"));
  }
  auto sb = sandbox(kDeclared);
  CHECK_THROWS_AS(BackgroundProcess(sb, "Nope"), ValueError);
  CHECK_THROWS_AS(BackgroundProcess(nullptr, "0123456789abcdef"), ValueError);
}

TEST_CASE("background BG-7: an empty command, a bad id, a non-positive lifetime or start timeout are ValueErrors "
          "naming the value, and nothing runs") {
  auto sb = sandbox(kDeclared);
  BlockingRunner run;
  auto start = [&](Command c, BackgroundOptions o = {}) { return run([&] { return start_background(sb, c, o); }); };
  CHECK_THROWS_WITH(start(Command("")), Catch::Contains("empty"));
  CHECK_THROWS_WITH(start(Command("  \n")), Catch::Contains("empty"));
  CHECK_THROWS_AS(start(Command(std::vector<std::string>{})), ValueError);
  CHECK_THROWS_WITH(start(Command("true"), {.id = "short"}), Catch::Contains("'short'"));
  CHECK_THROWS_WITH(start(Command("true"), {.lifetime = 0ms}), Catch::Contains("got 0 ms"));
  CHECK_THROWS_WITH(start(Command("true"), {.start_timeout = -1ms}), Catch::Contains("got -1 ms"));
  CHECK_THROWS_WITH(run([&] { return find_background(sb, "UPPERCASE0000000"); }), Catch::Contains("'UPPERCASE0000000'"));
  CHECK(sb->hook_counts().exec == 0);
}

TEST_CASE("background BG-7: wait, output, signal and stop refuse bad values naming them, before any exec") {
  auto sb = sandbox(kDeclared);
  BlockingRunner run;
  const BackgroundProcess p(sb, "0123456789abcdef");
  CHECK(p.directory() == "/maf-sandbox/work/.maf-background/0123456789abcdef");
  CHECK_THROWS_WITH(run([&] { return p.wait(0ms); }), Catch::Contains("got 0 ms"));
  CHECK_THROWS_WITH(run([&] { return p.wait(-3ms); }), Catch::Contains("got -3 ms"));
  CHECK_THROWS_WITH(run([&] { return p.stop(0ms); }), Catch::Contains("got 0 ms"));
  CHECK_THROWS_WITH(run([&] { return p.output(-1); }), Catch::Contains("got -1"));
  CHECK_THROWS_WITH(run([&] { return p.signal(0); }), Catch::Contains("got 0"));
  CHECK_THROWS_WITH(run([&] { return p.signal(65); }), Catch::Contains("got 65"));
  CHECK(sb->hook_counts().exec == 0);
}
