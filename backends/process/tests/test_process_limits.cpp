// The process backend's resource bounds (docs/limits.md, docs/backends/process.md
// "Resources"): the cgroup tree detected and probed at construction (LIM-8), the spec's
// bounds over the configuration's in the sandbox's cgroups (LIM-5), a kill by the memory bound
// and a fork refused at the process bound reported (LIM-6), and TTL / idle expiry at the next
// acquire and by reap_expired (LIM-7) — expiry shown by back-dating the records, no waiting.
// The cgroup cases need root (CI runs as root) and fail, naming why, without it.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <utime.h>

#include <fstream>
#include <vector>
#include <algorithm>
#include <sstream>
#include <nlohmann/json.hpp>

#include "process_fixture.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::process::test;
using Catch::Contains;

namespace {

void require_root() {
  if (::geteuid() != 0) FAIL("needs root: this host delegates no cgroup to other users (docs/backends/process.md)");
}

SandboxSpec bounded(ResourceLimits limits, std::string kind = "bounded") {
  return SandboxSpec({.kind = std::move(kind), .requires_capabilities = {Capability::Exec}, .resources = limits});
}

fs::path only_sandbox_dir(const Fixture& f) {
  for (const auto& dir : f.sandbox_paths()) return dir;
  FAIL("no sandbox directory under " << f.root);
  return {};
}

/// The recorded cgroup directory (one per line of the sandbox's `cgroups` file) that holds
/// `controller`'s files. v2 has one unified hierarchy: the sandbox's one directory holds every
/// controller's files, whatever the name. v1 mounts a hierarchy per controller, possibly
/// co-mounted (`cpu,cpuacct`). Empty when there is no such directory (or, on v2, not exactly one).
std::string recorded_cgroup_for(const std::vector<std::string>& recorded, const std::string& controller, bool v2) {
  if (v2) {
    std::vector<std::string> distinct;
    for (const auto& d : recorded)
      if (!d.empty() && std::find(distinct.begin(), distinct.end(), d) == distinct.end()) distinct.push_back(d);
    return distinct.size() == 1 ? distinct.front() : std::string();
  }
  for (const auto& d : recorded) {
    // The hierarchy's mount directory is the component after "/sys/fs/cgroup/": a comma list.
    const std::string root = "/sys/fs/cgroup/";
    if (d.rfind(root, 0) != 0) continue;
    const std::string mount = d.substr(root.size(), d.find('/', root.size()) - root.size());
    std::stringstream names(mount);
    for (std::string name; std::getline(names, name, ',');)
      if (name == controller) return d;
  }
  return {};
}

std::string cgroup_file(const fs::path& sandbox_dir, const std::string& controller, const std::string& file, bool v2) {
  std::ifstream in(sandbox_dir / "cgroups");
  std::vector<std::string> recorded;
  for (std::string dir; std::getline(in, dir);) recorded.push_back(dir);
  const std::string dir = recorded_cgroup_for(recorded, controller, v2);
  if (dir.empty()) FAIL("no recorded " << controller << " cgroup (v" << (v2 ? 2 : 1) << ") in " << sandbox_dir);
  std::ifstream f(fs::path(dir) / file);
  std::string value;
  std::getline(f, value);
  return value;
}

/// Moves the record's creation (and last use) `by` into the past.
void back_date(const fs::path& sandbox_dir, std::chrono::seconds by) {
  nlohmann::json meta;
  std::ifstream(sandbox_dir / "meta.json") >> meta;
  meta["created_unix"] = meta["created_unix"].get<std::int64_t>() - by.count();
  std::ofstream(sandbox_dir / "meta.json", std::ios::trunc) << meta.dump();
  struct stat st {};
  REQUIRE(::stat((sandbox_dir / "last_used").c_str(), &st) == 0);
  const utimbuf times{st.st_atime - by.count(), st.st_mtime - by.count()};
  REQUIRE(::utime((sandbox_dir / "last_used").c_str(), &times) == 0);
}

}  // namespace

TEST_CASE("LIM-8: an unusable cgroup tree is detected at construction: nothing declared, or refused when required") {
  const fs::path empty = fs::temp_directory_path() / ("maf-no-cgroups-" + std::to_string(::getpid()));
  fs::create_directories(empty);
  {
    Fixture f([&](process::ProcessBackendConfig& c) { c.cgroup_root = empty; });
    const ResourceBoundSet declared = f.backend->declarations().resource_bounds;
    CHECK(declared == ResourceBoundSet{ResourceBound::Ttl, ResourceBound::IdleTimeout});
    std::string facts;
    for (const auto& [k, v] : f.backend->facts()) facts += k + ": " + v + "\n";
    CHECK_THAT(facts, Contains("cgroups: nothing") && Contains("memory (cgroup v1): no v1 hierarchy"));
    // LIM-3 through the router: a memory bound is refused, naming it.
    SandboxRouter router({f.backend}, RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}));
    CHECK_THROWS_AS(router.ensure_can_serve(bounded(ResourceLimits({.memory_bytes = 64 << 20}))),
                    SandboxResourceBoundNotEnforced);
  }
  try {
    Fixture f([&](process::ProcessBackendConfig& c) {
      c.cgroup_root = empty;
      c.required_resource_bounds = {ResourceBound::Memory, ResourceBound::Cpus};
    });
    FAIL("a backend requiring memory and cpus was built over an empty cgroup tree");
  } catch (const SandboxBoundaryUnavailable& e) {
    CHECK_THAT(std::string(e.what()), Contains("required_resource_bounds cpus, memory") &&
                                          Contains("cpu (cgroup v1): no v1 hierarchy at '" + (empty / "cpu").string()));
  }
  fs::remove_all(empty);
}

TEST_CASE("LIM-8: this host's tree is detected, and the configuration names what it requires") {
  require_root();
  Fixture f([](process::ProcessBackendConfig& c) {
    c.required_resource_bounds = {ResourceBound::Memory, ResourceBound::Cpus, ResourceBound::Processes};
  });
  CHECK(f.backend->declarations().resource_bounds ==
        ResourceBoundSet{ResourceBound::Memory, ResourceBound::Cpus, ResourceBound::Processes, ResourceBound::Ttl,
                         ResourceBound::IdleTimeout});
  CHECK_THROWS_WITH(process::parse_process_config({{"required_resource_bounds", {"ttl"}}}),
                    Contains("'ttl' is not one of memory, cpus, processes"));
  CHECK(process::parse_process_config({{"required_resource_bounds", {"memory", "cpus"}}}).required_resource_bounds ==
        ResourceBoundSet{ResourceBound::Memory, ResourceBound::Cpus});
}

TEST_CASE("LIM-5: the test's cgroup lookup finds each controller's directory on v1 (co-mounted too) and the one "
          "unified directory on v2 (it looked up \"//\" there and failed on every v2 host)") {
  const std::vector<std::string> v1{"/sys/fs/cgroup/pids/user.slice/maf-sandbox/s1",
                                    "/sys/fs/cgroup/memory/user.slice/maf-sandbox/s1",
                                    "/sys/fs/cgroup/cpu,cpuacct/user.slice/maf-sandbox/s1"};
  CHECK(recorded_cgroup_for(v1, "memory", false) == v1[1]);
  CHECK(recorded_cgroup_for(v1, "pids", false) == v1[0]);
  CHECK(recorded_cgroup_for(v1, "cpu", false) == v1[2]);
  CHECK(recorded_cgroup_for(v1, "cpuacct", false) == v1[2]);
  CHECK(recorded_cgroup_for(v1, "cpuset", false).empty());
  const std::vector<std::string> v2{"/sys/fs/cgroup/user.slice/maf-sandbox/s1", "/sys/fs/cgroup/user.slice/maf-sandbox/s1"};
  for (const char* controller : {"memory", "cpu", "pids"}) CHECK(recorded_cgroup_for(v2, controller, true) == v2[0]);
  // The broken lookup it replaces: "/<controller>/" in a unified path finds nothing.
  CHECK(v2[0].find("/memory/") == std::string::npos);
  CHECK(recorded_cgroup_for({}, "memory", true).empty());
  CHECK(recorded_cgroup_for({"/sys/fs/cgroup/a/s1", "/sys/fs/cgroup/b/s1"}, "memory", true).empty());
}

TEST_CASE("LIM-5: the spec's bounds replace the configuration's in the sandbox's cgroups; unset ones keep it") {
  require_root();
  Fixture f([](process::ProcessBackendConfig& c) {
    c.pids_limit = 300;
    c.memory_limit_bytes = 256u << 20;
  });
  auto sb = f.acquire(f.key, bounded(ResourceLimits({.memory_bytes = 64 << 20, .cpus = 0.5})));
  CHECK(f.exec(*sb, Command("true")).exit_code == 0);
  const fs::path dir = only_sandbox_dir(f);
  const bool v2 = fs::exists("/sys/fs/cgroup/cgroup.controllers");
  if (v2) {
    CHECK(cgroup_file(dir, "memory", "memory.max", v2) == std::to_string(64 << 20));
    CHECK(cgroup_file(dir, "cpu", "cpu.max", v2) == "50000 100000");
    CHECK(cgroup_file(dir, "pids", "pids.max", v2) == "300");  // the configuration's, the spec sets none
  } else {
    CHECK(cgroup_file(dir, "memory", "memory.limit_in_bytes", v2) == std::to_string(64 << 20));
    CHECK(cgroup_file(dir, "cpu", "cpu.cfs_quota_us", v2) == "50000");
    CHECK(cgroup_file(dir, "cpu", "cpu.cfs_period_us", v2) == "100000");
    CHECK(cgroup_file(dir, "pids", "pids.max", v2) == "300");  // the configuration's, the spec sets none
  }
  // LIM-5: other bounds for the same key are another sandbox.
  auto other = f.acquire(f.key, bounded(ResourceLimits({.memory_bytes = 128 << 20, .cpus = 0.5})));
  CHECK(other->instance_id() != sb->instance_id());
  CHECK(f.sandbox_dirs() == 2);
}

TEST_CASE("LIM-6: a kill by the memory bound and a fork refused at the process bound are reported, apart from the exit") {
  require_root();
  Fixture f;
  auto sb = f.acquire(f.key, bounded(ResourceLimits({.memory_bytes = 32 << 20, .processes = 16})));
  const auto calm = f.exec(*sb, Command("echo calm"));
  CHECK(calm.limits_hit.empty());
  CHECK_FALSE(calm.killed_by_limit());
  const auto hog = f.exec(*sb, Command("head -c 268435456 /dev/zero | tail -c 268435456 | wc -c"), ".", 120s);
  CHECK(hog.limits_hit == ResourceBoundSet{ResourceBound::Memory});
  CHECK(hog.killed_by_limit());
  const auto forks = f.exec(*sb, Command("n=0; while [ $n -lt 100 ] && { sleep 2 & }; do n=$((n+1)); done; echo $n"), ".", 60s);
  CHECK(forks.limits_hit.contains(ResourceBound::Processes));
  CHECK_FALSE(forks.limits_hit.contains(ResourceBound::Memory));  // the earlier kill is not this command's
  CHECK_FALSE(forks.killed_by_limit());
}

TEST_CASE("LIM-7: past its ttl, a sandbox is disposed at the next acquire of its key; within it, it is reused") {
  Fixture f;
  const SandboxSpec spec = bounded(ResourceLimits({.ttl = std::chrono::seconds(60)}));
  auto first = f.acquire(f.key, spec);
  CHECK(f.acquire(f.key, spec)->instance_id() == first->instance_id());
  CHECK(f.exec(*first, Command("echo kept > marker")).exit_code == 0);
  back_date(only_sandbox_dir(f), std::chrono::seconds(61));
  auto second = f.acquire(f.key, spec);
  CHECK(second->instance_id() != first->instance_id());
  CHECK(f.exec(*second, Command("test -e marker")).exit_code == 1);
  CHECK(f.sandbox_dirs() == 1);
}

TEST_CASE("LIM-7: idle time counts from the last use; reap_expired disposes only what expired, per scope") {
  Fixture f;
  const SandboxSpec idle = bounded(ResourceLimits({.idle_timeout = std::chrono::seconds(30)}), "idle");
  const SandboxSpec forever = bounded(ResourceLimits{}, "forever");
  auto a = f.acquire(f.key, idle);
  auto b = f.acquire(SandboxKey{"other-scope", "t", "a", ""}, idle);
  f.acquire(f.key, forever);
  for (const auto& dir : f.sandbox_paths()) back_date(dir, std::chrono::seconds(31));
  REQUIRE(f.backend->supports_reap_expired());
  const ScopePurge scoped = f.run([&] { return f.backend->reap_expired(std::string("tenant")); });
  CHECK(scoped.disposed == 1);  // the idle one of scope "tenant"; "forever" has no bound
  CHECK_FALSE(scoped.undisposed);
  CHECK(f.sandbox_dirs() == 2);
  CHECK(f.run([&] { return f.backend->reap_expired(std::nullopt); }).disposed == 1);
  CHECK(f.sandbox_dirs() == 1);
  // A use resets the idle clock: a fresh sandbox just used is not expired.
  auto c = f.acquire(f.key, idle);
  CHECK(f.exec(*c, Command("true")).exit_code == 0);
  CHECK(f.run([&] { return f.backend->reap_expired(std::nullopt); }).disposed == 0);
}
