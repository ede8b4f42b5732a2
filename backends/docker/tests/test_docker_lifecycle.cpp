// Acquire, exec and the container's shape, against a real engine (D-9…D-13).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine_fixture.hpp"
#include "host_lock.hpp"
#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;
using namespace docker_test;

TEST_CASE("D-5 D-30: create() declares container, closed egress, both scopes and posix from the daemon") {
  Scope s;
  const auto& d = s.backend->declarations();
  CHECK(s.backend->isolation() == "container");
  CHECK(d.egress_modes == EgressSet{Egress::Closed});
  CHECK(d.isolation_scopes == IsolationScopeSet{IsolationScope::Conversation, IsolationScope::Call});
  CHECK(d.capabilities == CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                        Capability::FilesDelete, Capability::HostTools, Capability::Reclaim,
                                        Capability::ExecStream, Capability::Background, Capability::ExecEnv,
                                        Capability::ExecStdin, Capability::Pause,
                                        Capability::ExecStdinStream});
  CHECK_FALSE(d.capabilities.contains(Capability::FilesList));
  CHECK_FALSE(d.capabilities.contains(Capability::Snapshot));  // only with `snapshots: true` (docker.md "Snapshots and pause")
  CHECK_FALSE(d.capabilities.contains(Capability::RunCode));
  CHECK(d.os_families == OsFamilySet{OsFamily::Posix});
  // The plain constructor asks nothing and declares no family.
  docker::DockerSandboxBackend plain(test_config());
  CHECK(plain.declarations().os_families.empty());
}

TEST_CASE("DX-1: lifecycle round trip — write, cat, exit code, warm reuse, dispose") {
  Scope s;
  auto spec = spec_for(kImage, kAllCaps);
  auto sb = s.acquire(spec);
  const std::string text = "héllo wörld — ✓\nline 2\n";
  s.run([&] { return sb->write_file("/maf-sandbox/work/nested/dir/greeting.txt", text); });
  auto cat = s.sh(*sb, "cat nested/dir/greeting.txt");
  CHECK(cat.exit_code == 0);
  CHECK(cat.stdout_bytes == text);
  CHECK(s.sh(*sb, "exit 7").exit_code == 7);

  auto again = s.acquire(spec);
  CHECK(again->instance_id() == sb->instance_id());  // same container, reused warm
  CHECK(sb->instance_id().size() == 64);

  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  CHECK(docker_cli({"ps", "-a", "--filter", "name=^" + name + "$", "--format", "{{.Names}}"}) == name);
  auto failure = s.run([&] { return s.backend->dispose(s.key(), std::nullopt, std::nullopt); });
  CHECK_FALSE(failure.has_value());
  CHECK(docker_cli({"ps", "-a", "--filter", "name=^" + name + "$", "--format", "{{.Names}}"}).empty());
}

TEST_CASE("D-1 D-2 D-4 issue-22: the container is hardened (no NET_RAW), unmounted and has no network") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  auto doc = nlohmann::json::parse(docker_cli({"container", "inspect", "--format", "{{json .}}", name}));
  CHECK(doc["HostConfig"]["PidsLimit"].get<long long>() == 512);
  auto opts = doc["HostConfig"]["SecurityOpt"];
  CHECK(std::find(opts.begin(), opts.end(), "no-new-privileges") != opts.end());
  CHECK(doc["HostConfig"]["NetworkMode"] == "none");
  CHECK(doc["Mounts"].empty());
  CHECK_FALSE(doc["HostConfig"]["Privileged"].get<bool>());
  CHECK(doc["Config"]["Labels"]["maf-sandbox.scope"] == s.scope);
  CHECK(doc["Config"]["Labels"]["maf-sandbox.kind"] == "shell");
  // Loopback only: the kernel gives the workload nowhere to connect.
  CHECK(s.sh(*sb, "ls /sys/class/net").stdout_bytes == "lo\n");
  // Issue 22: NET_RAW is dropped (no raw frames from the guest); the rest of Docker's set stays.
  // (The 28.x client records it as CAP_NET_RAW, the Engine API as sent.)
  const auto dropped = doc["HostConfig"]["CapDrop"];
  REQUIRE(dropped.is_array());
  REQUIRE(dropped.size() == 1);
  CHECK((dropped[0] == "NET_RAW" || dropped[0] == "CAP_NET_RAW"));
  const auto bounding = s.sh(*sb, "sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status").stdout_bytes;
  INFO("CapBnd " << bounding);
  const auto caps = std::stoull(bounding, nullptr, 16);
  CHECK((caps & (1ULL << 13)) == 0);  // CAP_NET_RAW
  CHECK((caps & (1ULL << 1)) != 0);   // CAP_DAC_OVERRIDE: D-23's removals as root rely on it
}

TEST_CASE("LIM-9 D-3: the workload runs under the engine's reaping init, so orphans do not pile up as zombies") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  auto host = nlohmann::json::parse(docker_cli({"container", "inspect", "--format", "{{json .HostConfig}}", name}));
  CHECK(host["Init"] == true);
  // Twenty orphans: each background sleeper's parent exits at once, so it is re-parented to
  // PID 1 and, when it ends, only PID 1 can reap it. `sleep infinity` never would.
  REQUIRE(s.sh(*sb, "i=0; while [ $i -lt 20 ]; do (sleep 0.2 &); i=$((i+1)); done").exit_code == 0);
  const std::string zombies = "n=0; for s in /proc/[0-9]*/stat; do read -r line < $s 2>/dev/null || continue; "
                              "case \"${line##*) }\" in Z*) n=$((n+1));; esac; done; echo $n";
  std::string left;
  for (int i = 0; i < 50; ++i) {  // bounded: the sleepers end after 0.2 s
    left = s.sh(*sb, zombies).stdout_bytes;
    if (left == "0\n") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  CHECK(left == "0\n");
}

TEST_CASE("D-3: cap_drop_all, memory and cpus reach the container only when configured") {
  auto config = test_config();
  config.cap_drop_all = true;
  config.memory = "256m";
  config.cpus = 0.5;
  config.pids_limit = 64;
  Scope s(config);
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  auto host = nlohmann::json::parse(docker_cli({"container", "inspect", "--format", "{{json .HostConfig}}", name}));
  CHECK(host["PidsLimit"].get<long long>() == 64);
  CHECK(host["Memory"].get<long long>() == 256LL * 1024 * 1024);
  CHECK(host["NanoCpus"].get<long long>() == 500000000LL);
  REQUIRE(host["CapDrop"].is_array());
  CHECK(host["CapDrop"][0] == "ALL");
}

TEST_CASE("D-12: argv runs verbatim, a string runs under sh -c, -w is the resolved directory") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  auto argv = s.run([&] { return sb->exec(std::vector<std::string>{"printf", "%s|", "a b", "$(id)", ";"}); });
  CHECK(argv.stdout_bytes == "a b|$(id)|;|");
  auto line = s.sh(*sb, "echo out; echo err >&2; printf '\\377\\000'");
  CHECK(line.stdout_bytes == std::string("out\n\xff\0", 6));
  CHECK(line.stderr_bytes == "err\n");
  CHECK(s.sh(*sb, "pwd").stdout_bytes == "/maf-sandbox/work\n");
  s.sh(*sb, "mkdir -p sub/dir");
  CHECK(s.run([&] { return sb->exec("pwd", "sub/dir"); }).stdout_bytes == "/maf-sandbox/work/sub/dir\n");
  CHECK(s.run([&] { return sb->exec("pwd", "/tmp"); }).stdout_bytes == "/tmp\n");
  // A missing binary: the engine's exit code and message pass through.
  auto missing = s.run([&] { return sb->exec(std::vector<std::string>{"no-such-binary"}); });
  CHECK(missing.exit_code >= 126);
}

TEST_CASE("D-13: an exec timeout kills the client, removes the container and raises TimeoutError") {
  Scope s;
  auto spec = spec_for(kImage, kAllCaps);
  auto sb = s.acquire(spec);
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  CHECK_THROWS_AS(s.run([&] { return sb->exec("sleep 30", ".", std::chrono::milliseconds(1500)); }), TimeoutError);
  CHECK(docker_cli({"ps", "-a", "--filter", "name=^" + name + "$", "--format", "{{.Names}}"}).empty());
  // The next acquire creates a fresh container.
  auto fresh = s.acquire(spec);
  CHECK(fresh->instance_id() != sb->instance_id());
  CHECK(s.sh(*fresh, "echo ok").stdout_bytes == "ok\n");
}

TEST_CASE("exec output beyond max_exec_output_bytes is refused, never buffered whole") {
  auto config = test_config();
  config.max_exec_output_bytes = 1000;
  Scope s(config);
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  CHECK(s.sh(*sb, "head -c 1000 /dev/zero | wc -c").stdout_bytes.find("1000") != std::string::npos);
  // EXE-1: the core's one over-cap type, naming the cap; EXE-2: the container is ended.
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  CHECK_THROWS_WITH(s.sh(*sb, "head -c 5000 /dev/zero"),
                    Catch::Contains("max_exec_output_bytes=1000") && Catch::Contains("container " + name));
  CHECK_THROWS_AS(s.sh(*s.acquire(spec_for(kImage, kAllCaps)), "head -c 5000 /dev/zero"), SandboxTransferCapExceeded);
}

TEST_CASE("D-10: a stopped container is started again, not replaced") {
  Scope s;
  auto spec = spec_for(kImage, kAllCaps);
  auto sb = s.acquire(spec);
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  docker_cli({"kill", name});
  CHECK(docker_cli({"container", "inspect", "--format", "{{.State.Running}}", name}) == "false");
  auto again = s.acquire(spec);
  CHECK(again->instance_id() == sb->instance_id());
  CHECK(s.sh(*again, "echo up").stdout_bytes == "up\n");
}

TEST_CASE("D-11 issue 54: a container left paused by a host that died holding its freeze is recovered before it is handed out") {
  Scope s;
  auto spec = spec_for(kImage, kAllCaps);
  auto sb = s.acquire(spec);
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  const std::string endpoint = s.run([&] { return s.backend->transport().endpoint(); });
  // The dead host: it took the container's host lock, paused it, and died inside the freeze.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto held = docker::detail::HostLock::try_take("freeze\n" + endpoint + "\n" + name);
    const std::string pause = docker_path() + " pause " + name + " >/dev/null 2>&1";
    ::_exit(held && std::system(pause.c_str()) == 0 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(docker_cli({"container", "inspect", "--format", "{{.State.Paused}} {{.State.Running}}", name}) ==
        "true true");
  auto again = s.acquire(spec);
  CHECK(again->instance_id() == sb->instance_id());
  CHECK(docker_cli({"container", "inspect", "--format", "{{.State.Paused}}", name}) == "false");
  CHECK(s.sh(*again, "echo thawed").stdout_bytes == "thawed\n");
}

TEST_CASE("D-9: an absent image that cannot be pulled is a typed refusal, and nothing is left behind") {
  Scope s;
  auto spec = spec_for("maf-sandbox-test/absent:never", kAllCaps);
  try {
    s.acquire(spec);
    FAIL("acquire of an absent image succeeded");
  } catch (const OSError& e) {
    CHECK(std::string(e.what()).find("maf-sandbox-test/absent:never") != std::string::npos);
  }
  CHECK(docker_cli({"ps", "-a", "--filter", "label=maf-sandbox.scope=" + s.scope, "--format", "{{.Names}}"}).empty());
}

TEST_CASE("D-24: a missing sh refuses EXEC with SandboxCapabilityNotSupported; runtime-only specs still run") {
  Scope s;
  try {
    s.acquire(spec_for(kNoShImage, CapabilitySet{Capability::Exec}));
    FAIL("acquire without sh succeeded");
  } catch (const SandboxCapabilityNotSupported& e) {
    const std::string what = e.what();
    CHECK(what.find("'sh'") != std::string::npos);
    CHECK(what.find(kNoShImage) != std::string::npos);
    CHECK(what.find("retries") != std::string::npos);
  }
  // The refused container stays for the next acquire to retry (D-24), labelled, so
  // the conversation's purge finds and removes it: a failed acquire leaks nothing.
  const auto labelled = [&] {
    return docker_cli({"ps", "-a", "--filter", "label=maf-sandbox.scope=" + s.scope, "--format", "{{.Names}}"});
  };
  CHECK_FALSE(labelled().empty());
  const ScopePurge purge = s.run([&] { return s.backend->dispose_scope(s.scope, s.thread); });
  CHECK(purge.disposed == 1);
  CHECK_FALSE(purge.undisposed);
  CHECK(labelled().empty());
}

TEST_CASE("DX-13: HOST_TOOLS probes pass and the launcher prerequisites resolve") {
  Scope s;
  auto caps = kAllCaps;
  caps.insert(Capability::HostTools);
  auto sb = s.acquire(spec_for(kImage, caps));
  CHECK(s.sh(*sb, "command -v sh && command -v nohup && command -v printf && command -v mv").exit_code == 0);
}

TEST_CASE("C-13: a call-scope key gets its own container carrying maf-sandbox.call") {
  Scope s;
  auto spec = spec_for(kImage, kAllCaps);
  auto conversation = s.acquire(spec);
  auto call = s.acquire(spec, "agent-1", "call-42");
  CHECK(call->instance_id() != conversation->instance_id());
  const std::string name = docker::DockerSandboxBackend::container_name(s.key("agent-1", "call-42"), "shell");
  CHECK(docker_cli({"container", "inspect", "--format", "{{index .Config.Labels \"maf-sandbox.call\"}}", name}) ==
        "call-42");
  // Disposing the call key leaves the conversation's container alone.
  CHECK_FALSE(s.run([&] { return s.backend->dispose(s.key("agent-1", "call-42"), std::nullopt, std::nullopt); }));
  CHECK(s.sh(*conversation, "echo still").stdout_bytes == "still\n");
}

TEST_CASE("D-29: every later call is pinned to the resolved context and endpoint") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  // Redirecting the ambient environment after binding changes nothing.
  ::setenv("DOCKER_HOST", "unix:///nonexistent.sock", 1);
  auto r = s.sh(*sb, "echo pinned");
  ::unsetenv("DOCKER_HOST");
  CHECK(r.stdout_bytes == "pinned\n");
}

TEST_CASE("C-52: concurrent acquires of one identity yield one container") {
  Scope s;
  auto spec = spec_for(kImage, kAllCaps);
  std::vector<std::string> ids;
  s.run.run_void([&]() -> boost::asio::awaitable<void> {
    auto ex = co_await boost::asio::this_coro::executor;
    int finished = 0;
    for (int i = 0; i < 2; ++i)
      boost::asio::co_spawn(ex, s.backend->acquire(s.key(), spec),
                            [&](std::exception_ptr e, std::shared_ptr<Sandbox> sb) {
                              ++finished;
                              if (!e) ids.push_back(sb->instance_id());
                            });
    auto mine = co_await s.backend->acquire(s.key(), spec);
    ids.push_back(mine->instance_id());
    boost::asio::steady_timer timer(ex);
    while (finished < 2) {
      timer.expires_after(std::chrono::milliseconds(50));
      co_await timer.async_wait(boost::asio::use_awaitable);
    }
  });
  REQUIRE(ids.size() == 3);
  CHECK(ids[0] == ids[1]);
  CHECK(ids[1] == ids[2]);
}

TEST_CASE("D-22 issue 54: an exec refused by a pause this process does not hold is re-issued once the pause is lifted, and runs once") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  docker_cli({"pause", name});
  // Another holder lifts its freeze while the exec waits for it.
  std::thread holder([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    docker_cli({"unpause", name});
  });
  auto ran = s.sh(*sb, "echo once >> ran.txt; echo ran");
  holder.join();
  CHECK(ran.exit_code == 0);
  CHECK(ran.stdout_bytes == "ran\n");
  CHECK(s.sh(*sb, "cat ran.txt").stdout_bytes == "once\n");
}
