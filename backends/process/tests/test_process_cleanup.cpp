// The cleanup rungs on the process backend against real bubblewrap (docs/tools.md "The cleanup ladder", issue 26):
// RECLAIM as the guest's own principal, hostile layouts included; RESET to the creation-time
// snapshot; the CLEANUP suite green on both rungs; NL-1 over the engine inventory (the state
// root and the sandbox cgroups).
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "maf/sandbox/conformance/conformance.hpp"
#include "process_fixture.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using maf::sandbox::process::test::Fixture;
using Ids = std::vector<std::string>;

namespace {

const std::string kWork = "/maf-sandbox/work";

FunctionFingerprint inventory_of(const process::ProcessBackendConfig& config) {
  return FunctionFingerprint("process: the state root " + config.root.string() + " and its sandbox cgroups",
                             [config] { return std::optional<EngineFingerprint>(EngineFingerprint{process::process_engine_inventory(config)}); });
}

bool guest_sees(Fixture& f, Sandbox& sb, const std::string& path) {
  return f.exec(sb, std::vector<std::string>{"sh", "-c", "test -e \"$1\" || test -L \"$1\"", "sh", path}, "/").exit_code == 0;
}

}  // namespace

TEST_CASE("cleanup ladder, process: RECLAIM and SNAPSHOT are declared, and the CLEANUP suite is green on both rungs (RC-1…RC-8, RS-1…RS-4)") {
  Fixture f;
  const auto& declared = f.backend->declarations().capabilities;
  REQUIRE(declared.contains(Capability::Reclaim));
  REQUIRE(declared.contains(Capability::Snapshot));
  auto sb = f.acquire();
  PosixGuestSubject subject(f.run, sb, declared, Egress::Closed);
  std::vector<ProbeResult> results;
  try {
    results = check_cleanup(subject);
  } catch (const ConformanceFailure& e) {
    FAIL(e.what());
  }
  CHECK(ids_with(results, Outcome::Skip).empty());
  CHECK(ids_with(results, Outcome::Pass).size() == probes(Suite::Cleanup).size());
}

TEST_CASE("cleanup ladder: RC-7 premise: a plain rm -rf as the guest fails on a tree it made read-only; reclaim removes it") {
  Fixture f;
  auto sb = f.acquire();
  const std::string build = "mkdir -p ro/sub && touch ro/sub/f && chmod 0555 ro/sub ro";
  REQUIRE(f.exec(*sb, build).exit_code == 0);
  // What the probe would see from a reclaim without the recovery step: the guest is not
  // root, so its own read-only directory keeps rm out (the probe can fail on this backend).
  CHECK(f.exec(*sb, std::vector<std::string>{"rm", "-rf", "--", kWork + "/ro"}, "/").exit_code != 0);
  REQUIRE(guest_sees(f, *sb, kWork + "/ro/sub/f"));
  f.run([&] { return sb->reclaim(kWork + "/ro", ".", 20s); });
  CHECK_FALSE(guest_sees(f, *sb, kWork + "/ro"));
}

TEST_CASE("cleanup ladder, process: reclaim never deletes more than the guest could — a host directory bound read-only stays whole") {
  const fs::path host_dir = fs::temp_directory_path() / ("maf-reclaim-host-" + std::to_string(::getpid()));
  fs::create_directories(host_dir / "nested");
  std::ofstream(host_dir / "nested" / "precious.txt") << "host data";
  fs::permissions(host_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec |
                                fs::perms::group_read | fs::perms::others_read);
  {
    Fixture f([&](process::ProcessBackendConfig& c) { c.extra_ro_binds = {{host_dir.string(), "/opt/hostdata"}}; });
    auto sb = f.acquire();
    REQUIRE(guest_sees(f, *sb, "/opt/hostdata/nested/precious.txt"));
    try {
      f.run([&] { return sb->reclaim("/opt/hostdata/nested", ".", 20s); });
      FAIL("reclaim of a read-only bind returned");
    } catch (const OSError& e) {
      CHECK_THAT(e.what(), Catch::Contains("/opt/hostdata/nested") && Catch::Contains("refused to remove"));
    }
    // A link inside a call directory pointing at the bind, and one at the guest's own root:
    // unlinked, neither followed.
    REQUIRE(f.exec(*sb, "mkdir -p call && ln -s /opt/hostdata call/to-host && ln -s / call/to-root && "
                        "touch sibling-marker").exit_code == 0);
    f.run([&] { return sb->reclaim(kWork + "/call", ".", 20s); });
    CHECK_FALSE(guest_sees(f, *sb, kWork + "/call"));
    CHECK(guest_sees(f, *sb, kWork + "/sibling-marker"));
    CHECK(guest_sees(f, *sb, "/usr/bin/sh"));
  }
  CHECK(fs::is_regular_file(host_dir / "nested" / "precious.txt"));
  fs::remove_all(host_dir);
}

TEST_CASE("cleanup ladder, process: a background process that recreates files does not outlive its command, so a reclaim stays done") {
  Fixture f;
  auto sb = f.acquire();
  // The loop is backgrounded and the command returns; on this backend the command's pid
  // namespace dies with it, taking the loop along (docs/backends/process.md "RECLAIM").
  REQUIRE(f.exec(*sb, "mkdir -p busy && (while :; do mkdir -p busy/again; touch busy/again/f; done) & "
                      "sleep 0.2; echo started").exit_code == 0);
  f.run([&] { return sb->reclaim(kWork + "/busy", ".", 20s); });
  CHECK_FALSE(guest_sees(f, *sb, kWork + "/busy"));
  CHECK(f.guest_processes() == 0);
  CHECK_FALSE(guest_sees(f, *sb, kWork + "/busy"));
}

TEST_CASE("cleanup ladder, process: a directory swapped for a link while reclaim runs never takes what the link points at") {
  Fixture f;
  auto sb = f.acquire();
  REQUIRE(f.exec(*sb, "mkdir -p keep call/d && echo precious > keep/precious.txt && "
                      "for i in $(seq 1 200); do mkdir -p call/d/x$i; touch call/d/x$i/f; done").exit_code == 0);
  // A second guest command swaps call/d between a directory and a link to keep/, as fast as it
  // can, for a bounded number of rounds, while the reclaim walks the tree.
  std::thread swapper([&] {
    BlockingRunner own;
    own([&] {
      return sb->exec("for i in $(seq 1 300); do mv call/d call/d.$i 2>/dev/null; ln -sfn ../keep call/d; "
                      "rm -f call/d; mkdir -p call/d; done; true",
                      ".", 60s);
    });
  });
  try {
    f.run([&] { return sb->reclaim(kWork + "/call", ".", 60s); });
  } catch (const OSError&) {
    // A tree growing under the walk may refuse removal ("Directory not empty"); that is a
    // reported failure, never a deletion elsewhere.
  }
  swapper.join();
  CHECK(f.exec(*sb, "cat keep/precious.txt").stdout_bytes == "precious\n");
}

TEST_CASE("cleanup ladder, process RESET: a file written after acquire is gone, the guest's broken tree is whole again, and a running command is stopped") {
  Fixture f;
  auto sb = f.acquire();
  REQUIRE(f.exec(*sb, "echo after > new.txt && mkdir -p /maf-sandbox/work/deep/er && echo x > /top-level.txt").exit_code == 0);
  // The guest breaks its own tree: the dynamic loader's /lib64 link is gone, so nothing
  // dynamically linked starts until the reset.
  REQUIRE(f.exec(*sb, std::vector<std::string>{"/usr/bin/rm", "-f", "/lib64"}, "/").exit_code == 0);
  CHECK_THROWS_AS(f.exec(*sb, "true"), OSError);  // bwrap: execvp sh: No such file or directory
  f.run([&] { return sb->reset(20s); });
  CHECK(f.exec(*sb, "true").exit_code == 0);
  CHECK_FALSE(guest_sees(f, *sb, kWork + "/new.txt"));
  CHECK_FALSE(guest_sees(f, *sb, kWork + "/deep"));
  CHECK_FALSE(guest_sees(f, *sb, "/top-level.txt"));
  // The restored tree is the guest's again: it can write its work base and its root.
  CHECK(f.exec(*sb, "echo y > again.txt && echo z > /again-top.txt && cat again.txt").stdout_bytes == "y\n");
  // A reset stops what still runs in the sandbox (it would write into the restored tree).
  std::optional<int> exit_code;
  std::thread runner([&] {
    BlockingRunner own;
    try {
      exit_code = own([&] { return sb->exec("sleep 60", ".", 120s); }).exit_code;
    } catch (const std::exception&) {
      exit_code = -1;
    }
  });
  for (int i = 0; i < 400 && f.guest_processes() == 0; ++i) std::this_thread::sleep_for(25ms);
  REQUIRE(f.guest_processes() > 0);
  f.run([&] { return sb->reset(20s); });
  runner.join();
  CHECK(exit_code.value_or(0) != 0);
  CHECK(f.guest_processes() == 0);
}

TEST_CASE("cleanup ladder, process RESET: a sandbox with no snapshot (made before the backend kept one) is an OSError naming it") {
  Fixture f;
  auto sb = f.acquire();
  const fs::path dir = f.sandbox_paths().at(0);
  REQUIRE(fs::is_directory(dir / "snapshot"));
  fs::remove_all(dir / "snapshot");
  try {
    f.run([&] { return sb->reset(20s); });
    FAIL("reset without a snapshot returned");
  } catch (const OSError& e) {
    CHECK_THAT(e.what(), Catch::Contains("no snapshot") && Catch::Contains(dir.filename().string()));
  }
  CHECK(f.exec(*sb, "true").exit_code == 0);  // the root is untouched
}

TEST_CASE("cleanup ladder: NL-1 process: acquire, work, dispose leaves the state root and the cgroups as they were") {
  Fixture f;
  auto keep = f.acquire();  // another conversation's sandbox, live throughout: not the call's to remove
  auto inventory = inventory_of(f.config);
  const SandboxKey call{"tenant", "conv-nl", "agent", "call-1"};
  const auto r = assert_nothing_left_behind(inventory, [&] {
    auto sb = f.acquire(call, f.spec());
    f.run([&] { return sb->write_file("in.txt", "data"); });
    REQUIRE(f.exec(*sb, "cat in.txt > out.txt && (sleep 30 &) && true").exit_code == 0);
    sb.reset();
    if (auto failure = f.run([&] { return f.backend->dispose(call, std::nullopt, std::nullopt); }))
      throw OSError(failure->to_string());
  });
  CHECK(r.passed());
  // The broken double of DISPOSE: the same call without the disposal fails, naming the
  // sandbox directory it left.
  const SandboxKey leaked{"tenant", "conv-nl", "agent", "call-2"};
  const auto broken = run_nothing_left_behind(inventory, [&] {
    auto sb = f.acquire(leaked, f.spec());
    REQUIRE(f.exec(*sb, "true").exit_code == 0);
  });
  CHECK(broken.failed());
  CHECK_THAT(broken.message, Catch::Contains("state:maf-sandbox-process-"));
}
