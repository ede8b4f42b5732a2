// The wslc backend's lifecycle through the shim on a real Docker engine (wslc.md T-2, T-4,
// T-5 subset; W-13…W-18, W-26…W-28, W-35…W-38). Real containers decide every outcome here.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <set>
#include <thread>

#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/wslc/errors.hpp"

using namespace maf::sandbox;
using namespace wslc_test;

TEST_CASE("T-2/C-24…C-27: the lifecycle holds in every list shape, in ja-JP and with LF line ends") {
  const std::vector<std::pair<const char*, const char*>> variants{
      {"WSLC_SHIM_LIST_SHAPE", "array"}, {"WSLC_SHIM_LIST_SHAPE", "jsonl-legacy"}, {"WSLC_SHIM_LIST_SHAPE", "docker"},
      {"WSLC_SHIM_LOCALE", "ja"},        {"WSLC_SHIM_NEWLINE", "lf"}};
  for (const auto& [variable, value] : variants) {
    DYNAMIC_SECTION(variable << "=" << value) {
      ::setenv(variable, value, 1);
      {
        Engine e;
        auto first = e.acquire(spec_for(kCaps));
        auto again = e.acquire(spec_for(kCaps));
        CHECK(first->instance_id() == again->instance_id());  // W-14: reused, not recreated
        CHECK(e.sh(*again, "echo hi").stdout_text() == "hi\n");
        // W-15: an externally stopped container is restarted, not replaced.
        docker_cli({"stop", "-t", "0", e.name()});
        auto restarted = e.acquire(spec_for(kCaps));
        CHECK(restarted->instance_id() == first->instance_id());
        CHECK(e.sh(*restarted, "echo back").stdout_text() == "back\n");
        auto purge = e.run([&] { return e.backend->dispose_scope(e.scope, e.thread); });
        CHECK(purge.disposed == 1);
        CHECK_FALSE(purge.undisposed);
        CHECK_FALSE(container_exists(e.name()));
        CHECK(e.unsupported_calls() == 0);
      }
      ::unsetenv(variable);
    }
  }
}

TEST_CASE("W-15: a container removed behind the backend's back is recreated") {
  Engine e;
  auto first = e.acquire(spec_for(kCaps));
  docker_cli({"rm", "-f", e.name()});
  auto second = e.acquire(spec_for(kCaps));
  CHECK(second->instance_id() != first->instance_id());
  CHECK(e.sh(*second, "test -d /maf-sandbox/work && echo yes").stdout_text() == "yes\n");  // W-18
}

TEST_CASE("W-16/W-11: created with --network none and the identity labels; read back by label") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  CHECK(docker_cli({"inspect", "--format", "{{.HostConfig.NetworkMode}}", e.name()}) == "none");
  CHECK(docker_cli({"inspect", "--format", "{{index .Config.Labels \"maf-sandbox.scope\"}}", e.name()}) == e.scope);
  CHECK(docker_cli({"inspect", "--format", "{{index .Config.Labels \"maf-sandbox.agent\"}}", e.name()}) == "agent-1");
  // Golden argv of the create (T-9 on a real engine).
  bool saw_run = false;
  for (const auto& call : e.calls()) {
    auto argv = call["argv"].get<std::vector<std::string>>();
    if (argv.size() > 1 && argv[1] == "run") {
      saw_run = true;
      CHECK(std::vector<std::string>(argv.begin(), argv.begin() + 7) ==
            std::vector<std::string>{"container", "run", "-d", "--name", e.name(), "--network", "none"});
      CHECK(std::vector<std::string>(argv.end() - 3, argv.end()) ==
            std::vector<std::string>{kImage, "sleep", "infinity"});
    }
    CHECK(argv.at(0) != "stop");  // W-39: never
    if (argv.size() > 1) CHECK(argv[1] != "stop");
  }
  CHECK(saw_run);
}

TEST_CASE("W-17: two backend instances racing one identity end with one container, both served") {
  Engine e;
  auto other = std::make_shared<wslc::WslcSandboxBackend>(shim_config());
  boost::asio::io_context io;
  auto a = boost::asio::co_spawn(io, e.backend->acquire(e.key(), spec_for(kCaps)), boost::asio::use_future);
  auto b = boost::asio::co_spawn(io, other->acquire(e.key(), spec_for(kCaps)), boost::asio::use_future);
  io.run();
  auto sa = a.get();
  auto sb = b.get();
  CHECK(e.sh(*sa, "echo a").stdout_text() == "a\n");
  CHECK(e.sh(*sb, "echo b").stdout_text() == "b\n");
  CHECK(docker_cli({"ps", "-a", "--filter", "name=" + e.name(), "--format", "{{.Names}}"}) == e.name());
}

namespace {
/// One replica's acquire, write and exec (parameters by value: the coroutine outlives the call).
boost::asio::awaitable<std::string> race_one(std::shared_ptr<wslc::WslcSandboxBackend> backend, SandboxKey key,
                                             SandboxSpec spec, std::size_t i) {
  auto sandbox = co_await backend->acquire(key, spec);
  const std::string file = "f" + std::to_string(i) + ".txt";
  co_await sandbox->write_file(file, std::to_string(i));
  auto r = co_await sandbox->exec(Command("cat " + file));
  co_return sandbox->instance_id() + "|" + r.stdout_text();
}
}  // namespace

TEST_CASE("issue 54 W-17: four backend instances on two threads race one identity, three rounds: every acquire, write and exec succeeds on one container") {
  Engine e;
  std::vector<std::shared_ptr<wslc::WslcSandboxBackend>> backends{e.backend};
  for (int i = 0; i < 3; ++i) backends.push_back(std::make_shared<wslc::WslcSandboxBackend>(shim_config()));
  const auto spec = spec_for(kCaps);
  for (int round = 0; round < 3; ++round) {
    const std::string agent = "agent-" + std::to_string(round);
    boost::asio::io_context io;
    std::vector<std::future<std::string>> results;
    for (std::size_t i = 0; i < backends.size(); ++i) {
      results.push_back(boost::asio::co_spawn(io, race_one(backends[i], e.key(agent), spec, i), boost::asio::use_future));
    }
    std::thread helper([&] { io.run(); });
    io.run();
    helper.join();
    std::set<std::string> instances;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const std::string r = results[i].get();  // rethrows a failed acquire, write or exec
      instances.insert(r.substr(0, r.find('|')));
      CHECK(r.substr(r.find('|') + 1) == std::to_string(i));
    }
    CHECK(instances.size() == 1);
    CHECK(docker_cli({"ps", "-a", "--filter", "name=" + e.name("shell", agent), "--format", "{{.Names}}"}) ==
          e.name("shell", agent));
  }
}

TEST_CASE("W-26/T-4: argv arrives verbatim, exit status and streams apart, working directory honoured") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  auto r = e.run([&] {
    return sb->exec(std::vector<std::string>{"sh", "-c", "printf '%s|' \"$@\"; echo err >&2; exit 7", "x", "a b",
                                             "$(id)", ";", ""});
  });
  CHECK(r.exit_code == 7);
  CHECK(r.stdout_text() == "a b|$(id)|;||");
  CHECK(r.stderr_text() == "err\n");
  e.sh(*sb, "mkdir -p /maf-sandbox/work/sub");
  CHECK(e.run([&] { return sb->exec(Command("pwd"), "sub"); }).stdout_text() == "/maf-sandbox/work/sub\n");
  // W-27: a guest printing a wslc symbol on stderr is just output.
  auto g = e.sh(*sb, "echo 'Error code: WSLC_E_CONTAINER_NOT_FOUND' >&2; exit 3");
  CHECK(g.exit_code == 3);
  CHECK(g.stderr_text().find("WSLC_E_CONTAINER_NOT_FOUND") != std::string::npos);
}

TEST_CASE("W-28/T-4: the exec timeout removes the container and the guest heartbeat stops") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  CHECK_THROWS_AS(e.run([&] {
                    return sb->exec(Command("while :; do date >> /tmp/beat; sleep 0.2; done"), ".",
                                    std::chrono::milliseconds(1500));
                  }),
                  SandboxProgramTimeout);
  CHECK_FALSE(container_exists(e.name()));  // removal is what stops the guest
  // The next acquire creates a fresh one.
  auto fresh = e.acquire(spec_for(kCaps));
  CHECK(e.sh(*fresh, "test -e /tmp/beat || echo clean").stdout_text() == "clean\n");
}

TEST_CASE("W-7/T-4: more than 8 MiB of output removes the container and raises") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  // EXE-1: the core's one over-cap type, as on every backend.
  CHECK_THROWS_AS(e.sh(*sb, "head -c 8388609 /dev/zero"), SandboxTransferCapExceeded);
  CHECK_FALSE(container_exists(e.name()));
  auto fresh = e.acquire(spec_for(kCaps));
  CHECK(e.sh(*fresh, "head -c 8388608 /dev/zero | wc -c").stdout_text().find("8388608") != std::string::npos);
}

TEST_CASE("W-35/W-36/W-38: dispose by key and kind; a second instance purges the scope by label") {
  Engine e;
  e.acquire(spec_for(kCaps, "one"));
  e.acquire(spec_for(kCaps, "two"));
  e.acquire(spec_for(kCaps, "one"), "agent-2");
  auto failure = e.run([&] { return e.backend->dispose(e.key(), std::string("one"), std::nullopt); });
  CHECK_FALSE(failure);
  CHECK_FALSE(container_exists(e.name("one")));
  CHECK(container_exists(e.name("two")));
  // Another replica, which made nothing, finds the rest by label (read back, not memory).
  wslc::WslcSandboxBackend replica(shim_config());
  auto purge = e.run([&] { return replica.dispose_scope(e.scope, e.thread); });
  CHECK(purge.disposed == 2);
  CHECK_FALSE(purge.undisposed);
  CHECK_FALSE(container_exists(e.name("two")));
  CHECK_FALSE(container_exists(e.name("one", "agent-2")));
  // Already gone is neither counted nor a failure (W-38).
  purge = e.run([&] { return replica.dispose_scope(e.scope, e.thread); });
  CHECK(purge.disposed == 0);
  CHECK_FALSE(purge.undisposed);
}

TEST_CASE("W-19/W-36/T-5: a failing listing falls back to the registry and is itself reported") {
  Engine e;
  e.acquire(spec_for(kCaps));
  ::setenv("WSLC_SHIM_FAULTS", "list=E_FAIL", 1);
  auto purge = e.run([&] { return e.backend->dispose_scope(e.scope, e.thread); });
  ::unsetenv("WSLC_SHIM_FAULTS");
  REQUIRE(purge.undisposed);
  CHECK(purge.undisposed->code == kDisposalUnlisted);
  CHECK(purge.disposed == 1);  // the remembered name was still removed
  CHECK_FALSE(container_exists(e.name()));
}

TEST_CASE("W-42: a wslc below 2.9.4.0 makes the backend unavailable, naming the version") {
  ::setenv("WSLC_SHIM_VERSION", "2.9.3.0", 1);
  Engine e;
  CHECK_THROWS_WITH(e.acquire(spec_for(kCaps)), Catch::Contains("2.9.3.0"));
  ::unsetenv("WSLC_SHIM_VERSION");
  CHECK_FALSE(container_exists(e.name()));
}

TEST_CASE("W-40: a wslc_path that cannot be spawned is backend-unavailable naming the path") {
  auto config = shim_config();
  config.wslc_path = "/nonexistent/wslc";
  Engine e(config);
  CHECK_THROWS_WITH(e.acquire(spec_for(kCaps)), Catch::Contains("/nonexistent/wslc"));
}

TEST_CASE("W-43: an image that is not there is WslcImageNotFound (WSLC_E_IMAGE_NOT_FOUND)") {
  Engine e;
  SandboxSpec::Fields f;
  f.kind = "shell";
  f.image = "maf-sandbox-test/does-not-exist:1";
  f.requires_capabilities = kCaps;
  CHECK_THROWS_AS(e.acquire(SandboxSpec(std::move(f))), wslc::WslcImageNotFound);
}
