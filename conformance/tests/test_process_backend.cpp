// The runner against the real process backend, loaded through the registry like the
// maf-sandbox-conformance tool loads it: every suite it declares must be green. And a
// deliberately broken configuration of it — a bwrap that drops --unshare-net after the
// backend's construction-time probe — must fail the EGRESS_CLOSED probes.
#include <catch2/catch.hpp>

#include <sys/stat.h>

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

TEST_CASE("conformance: the process backend is green on every suite it declares (FO, CAP, FI, FD, EC, EX)") {
  test::TempDir root("maf-conformance-process");
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = process_backend(registry, {{"root", root.path().string()}});
  REQUIRE(backend->declarations().egress_modes.contains(Egress::Closed));

  const auto report = run_conformance(*backend, RunnerOptions{});
  std::cout << render_table(report);
  for (Suite s : {Suite::FilesOut, Suite::ReadCap, Suite::FilesIn, Suite::FilesDelete, Suite::EgressClosed, Suite::Exec}) {
    INFO(suite_label(s));
    const auto* sr = find(report, s);
    REQUIRE(sr);
    CHECK(sr->status == SuiteStatus::Ran);
    CHECK(ids_with(sr->results, Outcome::Fail).empty());
    // EC-2 is skipped (with its reason) only on a host with nothing but loopback.
    const bool ec2_skips = s == Suite::EgressClosed && !test::host_has_non_loopback_address();
    CHECK(ids_with(sr->results, Outcome::Skip) == (ec2_skips ? Ids{"EC-2"} : Ids{}));
    CHECK(ids_with(sr->results, Outcome::Pass).size() == probes(s).size() - (ec2_skips ? 1 : 0));
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

TEST_CASE("conformance: asking the process backend for EGRESS is refused by the gate and fails the run") {
  test::TempDir root("maf-conformance-process-eg");
  PluginRegistry registry({MAF_TEST_PLUGIN_DIR});
  auto backend = process_backend(registry, {{"root", root.path().string()}});
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
