// handle.hpp: the five-call layer over the router (issue 27). It must add no policy (a
// refusal is the router's, before anything is acquired), dispose exactly its key and kind on
// every path — close(), the destructor, a failed acquire — and never throw from a destructor.
#include <catch2/catch.hpp>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <filesystem>
#include <fstream>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/handle.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"
#include "unit/temp_dir.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;

namespace {

struct Rig {
  std::shared_ptr<InProcessSandboxBackend> backend;
  SandboxRouter router;
  const SandboxKey key{"tenant", "conversation", "agent", ""};

  Rig()
      : backend(std::make_shared<InProcessSandboxBackend>(InProcessSandboxBackendOptions{
            .sandbox = std::make_shared<InProcessSandbox>(InProcessSandboxOptions{
                .outputs = {{"python3", "ran main.py\n"}}}),
            .name = "in-process",
            .isolation = "microvm",
            .declarations = [] {
              auto d = kFakeBackendDeclarations;
              d.capabilities = kInProcessCapabilities;
              return d;
            }()})),
        router({backend}) {}

  static SandboxSpec spec() {
    return SandboxSpec({.kind = "report",
                        .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                        .declared_outputs = {{.path = "out/summary.txt"}}});
  }
};

}  // namespace

TEST_CASE("issue 27: BlockingSandbox is the five calls — write, run an argv, read, collect into a directory, "
          "disposed by its key and kind when it goes") {
  Rig rig;
  maf::sandbox::test::TempDir out;
  {
    BlockingSandbox sb(rig.router, rig.key, Rig::spec());
    sb.write("in/data.csv", "a,b\n");
    CHECK(sb.read("in/data.csv") == "a,b\n");
    const ExecResult r = sb.run({"python3", "main.py"});
    CHECK(r.stdout_text() == "ran main.py\n");
    REQUIRE(rig.backend->sandbox()->commands().size() == 1);
    sb.write("out/summary.txt", "3");
    const auto landed = sb.collect_into(out.path());
    REQUIRE(landed.size() == 1);
    CHECK(std::filesystem::exists(out.path() / "out" / "summary.txt"));
    CHECK(rig.backend->dispose_requests().empty());
  }
  const auto disposed = rig.backend->dispose_requests();
  REQUIRE(disposed.size() == 1);
  CHECK(disposed[0].key == rig.key);
  CHECK(disposed[0].kind == std::optional<std::string>("report"));
}

TEST_CASE("issue 27: close() disposes now and reports; the destructor then does nothing more") {
  Rig rig;
  BlockingSandbox sb(rig.router, rig.key, Rig::spec());
  CHECK(sb.close());
  CHECK(sb.closed());
  CHECK(sb.close());  // again: nothing to do
  CHECK_THROWS_AS(sb.sandbox(), ValueError);
  CHECK(rig.backend->dispose_requests().size() == 1);

  SECTION("an unconfirmed disposal is reported by close(), not thrown") {
    Rig failing;
    failing.backend->set_dispose_failure(DisposalFailure{"provider_error", "engine said no"});
    BlockingSandbox other(failing.router, failing.key, Rig::spec());
    CHECK_FALSE(other.close());
  }
  SECTION("a throwing disposal never escapes the destructor") {
    Rig throwing;
    throwing.backend->set_dispose_error(std::make_exception_ptr(OSError("engine gone")));
    { BlockingSandbox other(throwing.router, throwing.key, Rig::spec()); }
    CHECK(throwing.backend->dispose_requests().size() == 1);
  }
}

TEST_CASE("issue 27: a moved-from BlockingSandbox refuses every call with ValueError; the sandbox is "
          "disposed once, by its new owner, and a move assignment disposes what it overwrites") {
  Rig rig;
  std::optional<BlockingSandbox> first;
  first.emplace(rig.router, rig.key, Rig::spec());
  BlockingSandbox second(std::move(*first));
  CHECK(first->closed());
  CHECK_THROWS_AS(first->write("a.txt", "x"), ValueError);
  CHECK_THROWS_AS(first->run({"true"}), ValueError);
  CHECK_THROWS_AS(first->read("a.txt"), ValueError);
  CHECK_THROWS_AS(first->collect_into("unused"), ValueError);
  CHECK_THROWS_AS(first->sandbox(), ValueError);
  CHECK(first->close());  // nothing to dispose
  first.reset();
  CHECK(rig.backend->dispose_requests().empty());

  const SandboxKey other_key{"tenant", "conversation", "agent-2", ""};
  BlockingSandbox third(rig.router, other_key, Rig::spec());
  second = std::move(third);  // the sandbox of rig.key is disposed here
  REQUIRE(rig.backend->dispose_requests().size() == 1);
  CHECK(rig.backend->dispose_requests()[0].key == rig.key);
  CHECK(second.key() == other_key);
  CHECK(second.close());
  CHECK(rig.backend->dispose_requests().size() == 2);
}

TEST_CASE("issue 27: collect_into takes a std::filesystem::path as well as a string") {
  Rig rig;
  BlockingSandbox sb(rig.router, rig.key, Rig::spec());
  sb.write("out/summary.txt", "done\n");
  maf::sandbox::test::TempDir out;
  const std::filesystem::path directory = out.path() / "landed";
  std::filesystem::create_directories(directory);
  CHECK(sb.collect_into(directory).size() == 1);
  CHECK(std::filesystem::exists(directory / "out" / "summary.txt"));
}

TEST_CASE("issue 27: a policy refusal comes from the router before anything is acquired, catchable as "
          "SandboxPolicyRefusal") {
  Rig rig;
  auto fields = Rig::spec().fields();
  fields.egress = Egress::Unrestricted;  // the backend enforces only ALLOWLIST and CLOSED
  try {
    BlockingSandbox sb(rig.router, rig.key, SandboxSpec(std::move(fields)));
    FAIL("a spec the backend cannot confine was opened");
  } catch (const SandboxPolicyRefusal& refusal) {
    CHECK(std::string(refusal.message()).find("unrestricted") != std::string::npos);
  }
  CHECK(rig.backend->keys().empty());
  CHECK(rig.backend->dispose_requests().empty());  // nothing was created, nothing disposed
}

TEST_CASE("issue 27: an acquire that fails after the policy check disposes its key and kind before the error "
          "goes up") {
  Rig rig;
  rig.backend->set_acquire_error(std::make_exception_ptr(SandboxCapabilityNotSupported("probe refused sh")));
  CHECK_THROWS_AS(BlockingSandbox(rig.router, rig.key, Rig::spec()), SandboxCapabilityNotSupported);
  const auto disposed = rig.backend->dispose_requests();
  REQUIRE(disposed.size() == 1);
  CHECK(disposed[0].kind == std::optional<std::string>("report"));
}

TEST_CASE("issue 27: the awaitable form closes by co_await, and an unclosed handle is disposed on its executor") {
  Rig rig;
  boost::asio::io_context io;
  bool confirmed = false;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        auto sb = co_await SandboxHandle::open(rig.router, rig.key, Rig::spec());
        co_await sb.write("x.txt", "1");
        CHECK(co_await sb.read("x.txt") == "1");
        confirmed = co_await sb.close();
        // Dropped without close(): the safety net disposes in the background.
        auto dropped = co_await SandboxHandle::open(rig.router, rig.key, Rig::spec());
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  CHECK(confirmed);
  CHECK(rig.backend->dispose_requests().size() == 2);
}

TEST_CASE("issue 27: BlockingRunner runs an awaitable handed to it directly") {
  Rig rig;
  BlockingRunner run;
  auto sb = run(rig.router.acquire(rig.key, Rig::spec()));
  CHECK(run(sb->exec({"python3", "main.py"})).stdout_text() == "ran main.py\n");
  run(sb->write_file("y.txt", "2"));  // a void awaitable too
  CHECK(run(sb->read_file("y.txt")) == "2");
}

TEST_CASE("issue 27: braces make an argv, with one element too; a string is a shell line") {
  const Command two{"python3", "main.py"};
  CHECK(two.is_argv());
  CHECK(two.argv() == std::vector<std::string>{"python3", "main.py"});
  const Command one = {"ls"};
  CHECK(one.is_argv());
  const Command line = "ls -l | wc -l";
  CHECK_FALSE(line.is_argv());
}
