// The snapshot fidelity ladder (docs/snapshots.md SNAP-1, SNAP-2): its order and spellings,
// the spec's minimum, and the refusal — typed, naming what was asked and what is declared —
// at ensure_can_serve, at the router's acquire and at a direct acquire (ACQ-1), never a
// weaker snapshot substituted. Also the NVI gates of SNAP-8/SNAP-9 every backend shares.
#include <catch2/catch.hpp>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include "message_of.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/snapshot.hpp"
#include "maf/sandbox/spec_json.hpp"
#include "maf/sandbox/sync.hpp"
#include "unit/policy_fakes.hpp"

using namespace maf::sandbox;
using maf::sandbox::test::generous_declarations;
using maf::sandbox::test::message_of;
using maf::sandbox::test::PolicyFakeBackend;

namespace {

BackendDeclarations keeping(std::optional<SnapshotFidelity> fidelity) {
  BackendDeclarations d = generous_declarations();
  d.capabilities.insert(Capability::Snapshot);
  d.snapshot_fidelity = fidelity;
  return d;
}

SandboxSpec asking(std::optional<SnapshotFidelity> fidelity) {
  return SandboxSpec({.kind = "bisect", .min_snapshot_fidelity = fidelity});
}

RouterOptions low_floor() { return RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{}); }

const SandboxKey kKey{"scope", "thread", "agent", ""};

}  // namespace

TEST_CASE("SNAP-1: the ladder is work_tree < filesystem < memory, parsed exactly") {
  CHECK(snapshot_fidelity_ladder_text() == "work_tree < filesystem < memory");
  CHECK(parse_snapshot_fidelity("filesystem") == SnapshotFidelity::Filesystem);
  CHECK_THROWS_AS(parse_snapshot_fidelity("disk"), ValueError);
  CHECK_THROWS_AS(parse_snapshot_fidelity("Memory"), ValueError);
  CHECK(meets_fidelity(SnapshotFidelity::Memory, SnapshotFidelity::WorkTree));
  CHECK(meets_fidelity(SnapshotFidelity::Filesystem, SnapshotFidelity::Filesystem));
  CHECK_FALSE(meets_fidelity(SnapshotFidelity::WorkTree, SnapshotFidelity::Filesystem));
  CHECK_FALSE(meets_fidelity(SnapshotFidelity::Filesystem, SnapshotFidelity::Memory));
}

TEST_CASE("SNAP-2: asking a fidelity asks SNAPSHOT; the JSON spec carries it and refuses a wrong value") {
  CHECK(asking(SnapshotFidelity::WorkTree).requires_capabilities().contains(Capability::Snapshot));
  CHECK_FALSE(asking(std::nullopt).requires_capabilities().contains(Capability::Snapshot));
  const auto spec = spec_from_json(nlohmann::json::parse(R"({"kind":"k","min_snapshot_fidelity":"filesystem"})"));
  CHECK(spec.min_snapshot_fidelity() == SnapshotFidelity::Filesystem);
  CHECK(spec_to_json(spec).at("min_snapshot_fidelity") == "filesystem");
  CHECK(spec_from_json(spec_to_json(spec)).min_snapshot_fidelity() == SnapshotFidelity::Filesystem);
  CHECK_FALSE(spec_to_json(asking(std::nullopt)).contains("min_snapshot_fidelity"));
  CHECK_THAT(message_of<ValueError>([] {
               spec_from_json(nlohmann::json::parse(R"({"kind":"k","min_snapshot_fidelity":"disk"})"));
             }),
             Catch::Contains("min_snapshot_fidelity") && Catch::Contains("disk"));
}

TEST_CASE("SNAP-2: a backend below the asked fidelity is refused at ensure_can_serve, typed, naming both rungs") {
  SandboxRouter router({std::make_shared<PolicyFakeBackend>("fs", "none", keeping(SnapshotFidelity::Filesystem))},
                       low_floor());
  CHECK_NOTHROW(router.ensure_can_serve(asking(SnapshotFidelity::WorkTree)));
  CHECK_NOTHROW(router.ensure_can_serve(asking(SnapshotFidelity::Filesystem)));
  try {
    router.ensure_can_serve(asking(SnapshotFidelity::Memory));
    FAIL("memory fidelity was served by a filesystem backend");
  } catch (const SandboxSnapshotFidelityNotSupported& e) {
    CHECK(e.asked() == "memory");
    CHECK(e.declared() == "filesystem");
    CHECK_THAT(std::string(e.what()), Catch::Contains("'memory'") && Catch::Contains("'fs'") &&
                                          Catch::Contains("'filesystem'") && Catch::Contains("bisect") &&
                                          Catch::Contains("work_tree < filesystem < memory"));
    // A policy refusal like the isolation floor's: one catch for every refusal.
    CHECK(dynamic_cast<const SandboxPolicyRefusal*>(&e) != nullptr);
    CHECK(dynamic_cast<const PermissionError*>(&e) != nullptr);
  }
}

TEST_CASE("SNAP-2: silence keeps no snapshot: any fidelity is refused, named 'none'") {
  SandboxRouter router({std::make_shared<PolicyFakeBackend>("quiet", "none", keeping(std::nullopt))}, low_floor());
  try {
    router.ensure_can_serve(asking(SnapshotFidelity::WorkTree));
    FAIL("a backend declaring no fidelity served one");
  } catch (const SandboxSnapshotFidelityNotSupported& e) {
    CHECK(e.declared() == "none");
    CHECK_THAT(std::string(e.what()), Catch::Contains("keeps no snapshot"));
  }
  CHECK_NOTHROW(router.ensure_can_serve(asking(std::nullopt)));
}

TEST_CASE("SNAP-2: PER_SPEC picks the backend that keeps enough, never a weaker one in its place") {
  auto weak = std::make_shared<PolicyFakeBackend>("weak", "none", keeping(SnapshotFidelity::WorkTree));
  auto strong = std::make_shared<PolicyFakeBackend>("strong", "none", keeping(SnapshotFidelity::Memory));
  RouterOptions options = low_floor();
  options.selection = Selection::PerSpec;
  SandboxRouter router({weak, strong}, options);
  CHECK(router.select(asking(SnapshotFidelity::Filesystem))->name() == "strong");
  CHECK(router.select(asking(SnapshotFidelity::WorkTree))->name() == "weak");
}

TEST_CASE("SNAP-2: the router's acquire and a direct acquire refuse before any backend code runs") {
  auto backend = std::make_shared<PolicyFakeBackend>("wt", "none", keeping(SnapshotFidelity::WorkTree));
  SandboxRouter router({backend}, low_floor());
  BlockingRunner run;
  const SandboxSpec spec = asking(SnapshotFidelity::Filesystem);
  CHECK_THROWS_AS(run([&] { return router.acquire(kKey, spec); }), SandboxSnapshotFidelityNotSupported);
  CHECK_THROWS_AS(run([&] { return backend->acquire(kKey, spec); }), SandboxSnapshotFidelityNotSupported);
  CHECK(backend->acquired.empty());
}

TEST_CASE("SNAP-8: fork is refused for a backend without SNAPSHOT, and for a source of another backend") {
  auto plain = std::make_shared<PolicyFakeBackend>("plain", "none", generous_declarations());
  auto other = std::make_shared<PolicyFakeBackend>("other", "none", keeping(SnapshotFidelity::WorkTree));
  BlockingRunner run;
  const SandboxSpec spec = asking(std::nullopt);
  auto source = run([&] { return plain->acquire(kKey, spec); });
  const SandboxKey fork_key{"scope", "thread", "agent-b", ""};
  CHECK_THAT(message_of<NotImplementedError>([&] { run([&] { return plain->fork(source, "s1", fork_key, spec); }); }),
             Catch::Contains("'snapshot'"));
  CHECK_THAT(message_of<ValueError>([&] { run([&] { return other->fork(source, "s1", fork_key, spec); }); }),
             Catch::Contains("'plain'") && Catch::Contains("'other'"));
  CHECK(other->acquired.empty());
}

TEST_CASE("SNAP-9: pause and the snapshot operations are gated on their capabilities") {
  auto plain = std::make_shared<PolicyFakeBackend>("plain", "none", generous_declarations());
  BlockingRunner run;
  auto sandbox = run([&] { return plain->acquire(kKey, asking(std::nullopt)); });
  CHECK_THAT(message_of<NotImplementedError>([&] { run([&] { return sandbox->pause(); }); }), Catch::Contains("'pause'"));
  CHECK_THAT(message_of<NotImplementedError>([&] { run([&] { return sandbox->snapshot(); }); }),
             Catch::Contains("'snapshot'"));
  CHECK_FALSE(sandbox->paused());
}
