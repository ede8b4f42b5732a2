// The runner against the real process backend, loaded through the registry like the
// maf-sandbox-conformance tool loads it: every suite it declares must be green. And a
// deliberately broken configuration of it — a bwrap that drops --unshare-net after the
// backend's construction-time probe — must fail the EGRESS_CLOSED probes.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "maf/sandbox/conformance/conformance.hpp"
#include "maf/sandbox/registry.hpp"
#include "support/host_addresses.hpp"
#include "support/host_tree_sandbox.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using Ids = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<SandboxBackend> process_backend(PluginRegistry& registry, const nlohmann::json& config) {
  return registry.create("process", config);
}

std::size_t sandboxes_under(const fs::path& root) {
  std::size_t n = 0;
  if (!fs::exists(root)) return 0;
  for (const auto& e : fs::directory_iterator(root))
    if (e.path().filename().string().rfind("maf-sandbox-process-", 0) == 0) ++n;
  return n;
}

const SuiteReport* find(const RunReport& r, Suite s) {
  for (const auto& sr : r.suites)
    if (sr.suite == s) return &sr;
  return nullptr;
}

}  // namespace

TEST_CASE("conformance: the process backend is green on every suite it declares (FO, CAP, FI, FD, EC, HI, CLEANUP, STREAM, "
          "BG, EXEC_ENV, EXEC_STDIN, EX, SNAPSHOT)") {
  test::TempDir root("maf-conformance-process");
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = process_backend(registry, {{"root", root.path().string()}});
  REQUIRE(backend->declarations().egress_modes.contains(Egress::Closed));

  const auto report = run_conformance(*backend, RunnerOptions{});
  std::cout << render_table(report);
  for (Suite s : {Suite::FilesOut, Suite::ReadCap, Suite::FilesIn, Suite::FilesDelete, Suite::EgressClosed,
                  Suite::HostIntegrity, Suite::Cleanup, Suite::HostTools, Suite::Stream, Suite::Background,
                  Suite::ExecEnv, Suite::ExecStdin, Suite::Exec, Suite::Snapshot}) {
    INFO(suite_label(s));
    const auto* sr = find(report, s);
    REQUIRE(sr);
    CHECK(sr->status == SuiteStatus::Ran);
    CHECK(ids_with(sr->results, Outcome::Fail).empty());
    // EC-2 is skipped (with its reason) only on a host with nothing but loopback; HI-2 only
    // on a kernel without /proc/sysrq-trigger.
    Ids skips;
    if (s == Suite::EgressClosed && !test::host_has_non_loopback_address()) skips = {"EC-2"};
    if (s == Suite::HostIntegrity) skips = host_integrity_skips_on_this_kernel();
    CHECK(ids_with(sr->results, Outcome::Skip) == skips);
    CHECK(ids_with(sr->results, Outcome::Pass).size() == probes(s).size() - skips.size());
  }
  const auto* eg = find(report, Suite::Egress);
  REQUIRE(eg);
  CHECK(eg->status == SuiteStatus::NotRequested);
  CHECK(report.exit_code() == 0);
  CHECK_FALSE(report.disposal_failure);
  CHECK(sandboxes_under(root.path()) == 0);  // disposed afterwards

  const auto json = to_json(report);
  CHECK(json.at("ok") == true);
  CHECK(json.at("backend") == "process");
}

TEST_CASE("conformance: asking a process backend without its egress programs for EGRESS is refused by the gate and "
          "fails the run (PE-5)") {
  test::TempDir root("maf-conformance-process-eg");
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  // With the proxy found beside the plugin it declares ALLOWLIST (issue 47; stage 40 runs
  // EGRESS on it): without one it declares closed alone, and the gate refuses.
  auto backend = process_backend(registry, {{"root", root.path().string()},
                                            {"egress_proxy_path", "/nonexistent/maf-sandbox-egress-proxy"}});
  RunnerOptions o;
  o.suites = {Suite::Egress};
  o.egress = EgressTargets{"https://allowed.example/", "https://denied.example/", std::chrono::seconds(30)};
  const auto report = run_conformance(*backend, o);
  REQUIRE(report.suites.size() == 1);
  CHECK(report.suites[0].status == SuiteStatus::Refused);
  CHECK_THAT(report.suites[0].reason, Catch::Contains("declares no ALLOWLIST egress"));
  CHECK(report.exit_code() == 2);
  CHECK(sandboxes_under(root.path()) == 0);
}

TEST_CASE("conformance: broken double — a process backend whose bwrap drops --unshare-net fails EC-1, EC-2, EC-3") {
  test::TempDir root("maf-conformance-process-open");
  const fs::path flag = root.path() / "open-the-network";
  const fs::path wrapper = root.path() / "bwrap-without-netns";
  const std::string real_bwrap = [] {
    for (const char* p : {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"})
      if (fs::exists(p)) return std::string(p);
    return std::string("bwrap");
  }();
  {
    // Test-only: honest during the backend's construction-time network probe, open after.
    std::ofstream w(wrapper);
    w << "#!/bin/sh\n"
         "if [ -e '" << flag.string() << "' ]; then\n"
         "  for a do shift; [ \"$a\" = --unshare-net ] || set -- \"$@\" \"$a\"; done\n"
         "fi\n"
         "exec '" << real_bwrap << "' \"$@\"\n";
  }
  // Runnable by the process backend's host_uid (a root host runs bubblewrap as it).
  fs::permissions(wrapper, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = process_backend(registry, {{"root", (root.path() / "state").string()}, {"bwrap_path", wrapper.string()}});
  REQUIRE(backend->declarations().egress_modes.contains(Egress::Closed));  // it claims closed…
  std::ofstream(flag).put('1');                                              // …and now is open

  RunnerOptions o;
  o.suites = {Suite::EgressClosed};
  const auto report = run_conformance(*backend, o);
  std::cout << render_table(report);
  REQUIRE(report.suites.size() == 1);
  const auto failed = ids_with(report.suites[0].results, Outcome::Fail);
  CHECK(failed == (test::host_has_non_loopback_address() ? Ids{"EC-1", "EC-2", "EC-3"} : Ids{"EC-1", "EC-3"}));
  CHECK(report.exit_code() == 1);
}

TEST_CASE("conformance: broken double — a process backend whose bwrap puts the --args environment on its own argv "
          "fails EE-4 only (ENV-4)") {
  test::TempDir root("maf-conformance-process-argv-env");
  const fs::path wrapper = root.path() / "bwrap-env-on-argv";
  const std::string real_bwrap = [] {
    for (const char* p : {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"})
      if (fs::exists(p)) return std::string(p);
    return std::string("bwrap");
  }();
  {
    // Test-only: reads bubblewrap's `--args` descriptor and passes its words on the command
    // line instead — the values are then readable in /proc/<pid>/cmdline on the host.
    std::ofstream w(wrapper);
    w << "#!/bin/bash\n"
         "out=()\n"
         "while [ $# -gt 0 ]; do\n"
         "  if [ \"$1\" = --args ]; then mapfile -d '' -u \"$2\" extra; out+=(\"${extra[@]}\"); shift 2; continue; fi\n"
         "  out+=(\"$1\"); shift\n"
         "done\n"
         "exec '" << real_bwrap << "' \"${out[@]}\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = process_backend(registry, {{"root", (root.path() / "state").string()}, {"bwrap_path", wrapper.string()}});
  RunnerOptions o;
  o.suites = {Suite::ExecEnv};
  const auto report = run_conformance(*backend, o);
  std::cout << render_table(report);
  REQUIRE(report.suites.size() == 1);
  CHECK(ids_with(report.suites[0].results, Outcome::Fail) == Ids{"EE-4"});
  CHECK(ids_with(report.suites[0].results, Outcome::Pass) == Ids{"EE-1", "EE-2", "EE-3", "EE-5"});
  CHECK(report.exit_code() == 1);
}

TEST_CASE("conformance: broken double — SI-6 SI-8: a process backend whose bwrap holds a streamed stdin back "
          "until its end of file fails exactly those (STDIN-6, STDIN-8)") {
  test::TempDir root("maf-conformance-process-held-stdin");
  const fs::path wrapper = root.path() / "bwrap-holds-stdin";
  {
    // Test-only: takes the whole stdin before the program starts, as a backend that sends a
    // stream only at its close would. One-shot stdin (SI-1…SI-5) cannot tell the difference.
    std::ofstream w(wrapper);
    w << "#!/bin/sh\n"
         "held=$(mktemp) || exit 1\n"
         "cat > \"$held\" && exec < \"$held\" && rm -f \"$held\"\n"
         "exec bwrap \"$@\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = process_backend(registry, {{"root", (root.path() / "state").string()}, {"bwrap_path", wrapper.string()}});
  RunnerOptions o;
  o.suites = {Suite::ExecStdin};
  const auto report = run_conformance(*backend, o);
  std::cout << render_table(report);
  REQUIRE(report.suites.size() == 1);
  CHECK(ids_with(report.suites[0].results, Outcome::Fail) == Ids{"SI-6", "SI-8"});
  CHECK(ids_with(report.suites[0].results, Outcome::Pass) == Ids{"SI-1", "SI-2", "SI-3", "SI-4", "SI-5", "SI-7"});
}

namespace {

/// A listening unix socket standing in for a container engine's (HI-3's bait).
class FakeEngineSocket {
public:
  explicit FakeEngineSocket(const fs::path& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 1) == 0);
  }
  ~FakeEngineSocket() { ::close(fd_); }

private:
  fs::path path_;
  int fd_ = -1;
};

/// The process backend built WITHOUT its host boundary (the test-only switch), with a fake
/// engine socket bound at /run/docker.sock.
std::shared_ptr<SandboxBackend> unbounded_process_backend(PluginRegistry& registry, const fs::path& dir) {
  return process_backend(registry, {{"root", (dir / "state").string()},
                                    {"test_only_without_host_boundary", true},
                                    {"test_only_allow_unsafe", true},
                                    {"extra_ro_binds", {{{"host", (dir / "engine.sock").string()},
                                                         {"guest", "/run/docker.sock"}}}}});
}

/// What the unbounded double must fail on this host. As root every probe can fail; as any
/// other user the guest is that user, so only the socket and the missing filter show.
Ids unbounded_failures() {
  if (::geteuid() != 0) return {"HI-3", "HI-5"};
  Ids failed{"HI-1"};
  if (fs::exists("/proc/sysrq-trigger")) failed.push_back("HI-2");
  failed.insert(failed.end(), {"HI-3", "HI-4", "HI-5", "HI-6"});
  return failed;
}

}  // namespace

TEST_CASE("conformance: the test-only switch without its unsafe flag is refused at construction") {
  test::TempDir root("maf-conformance-process-unsafe");
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  CHECK_THROWS_WITH(process_backend(registry, {{"root", root.path().string()}, {"test_only_without_host_boundary", true}}),
                    Catch::Contains("test_only_allow_unsafe"));
}

TEST_CASE("conformance: broken double — a process backend without its host boundary fails HI-1…HI-6") {
  test::TempDir dir("maf-conformance-process-unbounded");
  FakeEngineSocket engine(dir.path() / "engine.sock");
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = unbounded_process_backend(registry, dir.path());
  const std::string core_pattern_before = [] {
    std::ifstream in("/proc/sys/kernel/core_pattern");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();

  RunnerOptions o;
  o.suites = {Suite::HostIntegrity};
  const auto report = run_conformance(*backend, o);
  std::cout << render_table(report);
  REQUIRE(report.suites.size() == 1);
  CHECK(ids_with(report.suites[0].results, Outcome::Fail) == unbounded_failures());
  CHECK(report.exit_code() == 1);
  // HI-1 failed by writing back exactly what it read: the host's value is unchanged.
  std::ifstream after("/proc/sys/kernel/core_pattern");
  CHECK(std::string(std::istreambuf_iterator<char>(after), {}) == core_pattern_before);
}

TEST_CASE("conformance: broken double — HI-4 judges a root guest by the engine's confinement, and it fails here") {
  if (::geteuid() != 0) FAIL("needs root: only a root host can make the guest host root");
  test::TempDir dir("maf-conformance-process-rootclaim");
  FakeEngineSocket engine(dir.path() / "engine.sock");
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = unbounded_process_backend(registry, dir.path());
  RunnerOptions o;
  o.suites = {Suite::HostIntegrity};
  o.host_boundary = HostBoundaryClaims{.root_confined_by_engine = true, .seccomp = true};
  const auto report = run_conformance(*backend, o);
  REQUIRE(report.suites.size() == 1);
  const auto& results = report.suites[0].results;
  REQUIRE(results.size() == 6);
  CHECK(results[3].id == "HI-4");
  CHECK(results[3].failed());
  CHECK_THAT(results[3].message, Catch::Contains("/proc/sys is not mounted read-only"));
}
