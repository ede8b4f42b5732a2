// Warm pools on the process backend against real bubblewrap (docs/pools.md POOL-1…POOL-6,
// issue 49): a claim takes a ready sandbox made for exactly its spec, never the same one
// twice (32 concurrent claims), never for another spec; a claimed sandbox is fresh; pools
// are refilled, drained when the backend goes, and found by reap after a kill.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "maf/sandbox/background.hpp"
#include "maf/sandbox/conformance/conformance.hpp"
#include "maf/sandbox/errors.hpp"
#include "process_fixture.hpp"

using namespace maf::sandbox;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using maf::sandbox::process::test::Fixture;

namespace {

SandboxSpec pooled_spec() {
  return SandboxSpec({.kind = "pooled",
                      .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                                Capability::Background}});
}

/// The instance ids of the ready pooled sandboxes (their records under the pool's scope).
std::set<std::string> pooled_instances(const fs::path& root) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 2) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename() != "meta.json") continue;
    std::ifstream in(it->path());
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded() && j.value("scope", "") == "maf-sandbox-pool") out.insert(j.value("instance_id", ""));
  }
  return out;
}

/// Waits (bounded, for the background refill) until the pool holds `n` ready sandboxes.
bool pool_reaches(const fs::path& root, std::size_t n) {
  for (int i = 0; i < 400; ++i) {
    if (pooled_instances(root).size() >= n) return true;
    std::this_thread::sleep_for(25ms);
  }
  return false;
}

void with_pool(process::ProcessBackendConfig& c, std::size_t size, bool refill = true) {
  c.pools.push_back(PoolConfig{pooled_spec(), size, refill, std::chrono::minutes(10)});
}

}  // namespace

// First: fork() is safest while the test process has started few threads.
TEST_CASE("POOL-6: a pool whose host was killed is found and disposed by reap") {
  const fs::path root = fs::temp_directory_path() / ("maf-pool-killed-" + std::to_string(::getpid()));
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    try {
      process::ProcessBackendConfig c;
      c.root = root;
      with_pool(c, 3, false);
      auto backend = process::make_process_backend(c);  // filled before it returns
      (void)!::write(ready[1], "r", 1);
      ::pause();  // killed here: the pool is never drained
    } catch (...) {
    }
    ::_exit(1);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK(pooled_instances(root).size() == 3);
  {
    Fixture f([&](process::ProcessBackendConfig& c) { c.root = root; });
    const auto purge = f.run([&] { return f.backend->reap(0s, std::nullopt); });
    CHECK(purge.disposed == 3);
    CHECK(pooled_instances(root).empty());
    std::size_t records = 0;  // no sandbox of any scope is left under the killed host's root
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it)
      records += it->path().filename() == "meta.json";
    CHECK(records == 0);
  }
  std::error_code ec;
  fs::remove_all(root, ec);  // the fixture removes only its own default root
}

TEST_CASE("POOL-1, POOL-6: an acquire claims a ready sandbox, the pool refills, and the backend's end drains it") {
  fs::path root;
  {
    Fixture f([](process::ProcessBackendConfig& c) { with_pool(c, 2); });
    root = f.root;
    const auto before = pooled_instances(f.root);
    REQUIRE(before.size() == 2);
    auto sb = f.acquire(f.key, pooled_spec());
    CHECK(before.count(sb->instance_id()) == 1);
    CHECK(pooled_instances(f.root).count(sb->instance_id()) == 0);
    CHECK(f.exec(*sb, "echo hi > f && cat f").stdout_text() == "hi\n");
    CHECK(pool_reaches(f.root, 2));
    // The claimed sandbox is the key's like any other: found again, disposed by its key.
    CHECK(f.acquire(f.key, pooled_spec())->instance_id() == sb->instance_id());
    f.run([&] { return f.backend->dispose(f.key, std::nullopt, std::nullopt); });
    auto without_pool = f.config;
    without_pool.pools.clear();
    f.backend = process::make_process_backend(without_pool);  // the pooled backend goes: its pool is drained
    CHECK(pooled_instances(root).empty());
    CHECK(f.sandbox_dirs() == 0);
  }
}

TEST_CASE("POOL-2: a pooled sandbox never serves a spec it was not made for") {
  Fixture f([](process::ProcessBackendConfig& c) { with_pool(c, 2, false); });
  const auto pooled = pooled_instances(f.root);
  auto other_kind = f.acquire(f.key, SandboxSpec({.kind = "other", .requires_capabilities = pooled_spec().requires_capabilities()}));
  auto fields = pooled_spec().fields();
  fields.resources = ResourceLimits(ResourceLimits::Fields{.ttl = std::chrono::seconds(600)});
  auto bounded = f.acquire(SandboxKey{"tenant", "conv-1", "agent-2", ""}, SandboxSpec(std::move(fields)));
  auto fields2 = pooled_spec().fields();
  fields2.labels = {{"team", "b"}};
  auto labelled = f.acquire(SandboxKey{"tenant", "conv-1", "agent-3", ""}, SandboxSpec(std::move(fields2)));
  for (const auto& sb : {other_kind, bounded, labelled}) CHECK(pooled.count(sb->instance_id()) == 0);
  CHECK(pooled_instances(f.root) == pooled);
}

TEST_CASE("POOL-3: 32 concurrent claims never get one sandbox twice") {
  Fixture f([](process::ProcessBackendConfig& c) { with_pool(c, 8); });
  const auto pooled = pooled_instances(f.root);
  REQUIRE(pooled.size() == 8);
  std::vector<std::shared_ptr<Sandbox>> got(32);
  std::vector<std::thread> threads;
  for (int i = 0; i < 32; ++i)
    threads.emplace_back([&, i] {
      BlockingRunner run;
      const SandboxKey key{"tenant", "conv-" + std::to_string(i % 4), "agent-" + std::to_string(i), ""};
      const SandboxSpec spec = pooled_spec();
      got[static_cast<std::size_t>(i)] = run([&] { return f.backend->acquire(key, spec); });
    });
  for (auto& t : threads) t.join();
  std::set<std::string> instances;
  std::size_t from_pool = 0;
  for (const auto& sb : got) {
    REQUIRE(sb);
    instances.insert(sb->instance_id());
    from_pool += pooled.count(sb->instance_id());
  }
  CHECK(instances.size() == 32);
  CHECK(from_pool >= 1);
  CHECK(from_pool <= 8 + 32);  // refills may serve some; none twice (the set above)
}

TEST_CASE("POOL-4: a claimed sandbox is fresh: no file, process or variable of a previous user") {
  Fixture f([](process::ProcessBackendConfig& c) { with_pool(c, 2); });
  const SandboxSpec spec = pooled_spec();
  auto first = f.acquire(f.key, spec);
  REQUIRE(f.exec(*first, "echo secret > /tmp-left 2>/dev/null; echo secret > left.txt && export LEFT=1").exit_code == 0);
  f.run([&] { return start_background(first, Command("exec sleep 600")); });
  f.run([&] { return f.backend->dispose(f.key, std::nullopt, std::nullopt); });
  REQUIRE(pool_reaches(f.root, 2));
  const SandboxKey next{"tenant", "conv-2", "agent", ""};
  auto second = f.acquire(next, spec);
  CHECK(second->instance_id() != first->instance_id());
  CHECK(f.exec(*second, "test -e left.txt || test -e /tmp-left").exit_code != 0);
  CHECK(f.exec(*second, "test -z \"$LEFT\"").exit_code == 0);
  CHECK(f.exec(*second, "ls /maf-sandbox/work | wc -l").stdout_text() == "0\n");
  // The previous user's background sleeper is nowhere this sandbox can see.
  CHECK(f.exec(*second, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -q 'slee[p] 600'").exit_code != 0);
}

namespace {

std::vector<std::string> pool_suite_failures(Fixture& f) {
  const SandboxSpec spec = pooled_spec();
  auto anchor = f.acquire(f.key, spec);
  conformance::PosixGuestSubject subject(f.run, anchor, f.backend->declarations().capabilities, Egress::Closed);
  const conformance::PoolTarget target{f.backend.get(), &spec};
  std::vector<std::string> failed;
  for (const auto& r : conformance::run_pool(subject, target)) {
    INFO(r.id + ": " + r.message);
    CHECK(r.outcome != conformance::Outcome::Skip);
    if (r.outcome == conformance::Outcome::Fail) failed.push_back(r.id);
  }
  return failed;
}

}  // namespace

TEST_CASE("POOL suite: PL-1 and PL-2 are green on the process backend's pool") {
  Fixture f([](process::ProcessBackendConfig& c) { with_pool(c, 4); });
  CHECK(pool_suite_failures(f).empty());
}

TEST_CASE("POOL suite: each probe is shown able to fail by the broken double (test_only_broken_pools)") {
  Fixture f([](process::ProcessBackendConfig& c) {
    with_pool(c, 4);
    c.test_only_broken_pools = true;
  });
  CHECK(pool_suite_failures(f) == std::vector<std::string>{"PL-1", "PL-2"});
}
