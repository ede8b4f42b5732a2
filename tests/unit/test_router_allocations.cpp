// The router's check path allocates nothing for a spec that passes (issue 14): a host calls
// ensure_can_serve before every tool call, so it must cost a few comparisons, not a trip
// through the allocator. Allocation counts are deterministic, unlike timings, so this is a
// test and the timings live in bench/core/.
//
// This executable replaces the global operator new: every allocation in the process (the
// shared core included, which resolves operator new to this definition) bumps a counter
// while counting is switched on around the call under test.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

#include "maf/sandbox/async.hpp"
#include "unit/policy_fakes.hpp"

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};

void* counted_allocation(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

// Allocations made by `f`. Catch's own bookkeeping stays outside the counted window.
template <class F>
long allocations_during(F&& f) {
  g_allocations.store(0);
  g_counting.store(true);
  f();
  g_counting.store(false);
  return g_allocations.load();
}

}  // namespace

// The array forms are replaced too so nothing slips past the counter. Not inlined: GCC would
// otherwise pair the inlined malloc/free against new/delete and warn
// (-Wmismatched-new-delete) about a mismatch the replacement itself makes correct.
[[gnu::noinline]] void* operator new(std::size_t size) { return counted_allocation(size); }
[[gnu::noinline]] void* operator new[](std::size_t size) { return counted_allocation(size); }
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace maf::sandbox;
using maf::sandbox::test::generous_declarations;
using maf::sandbox::test::PolicyFakeBackend;

namespace {

// Names longer than any small-string buffer, so a name() on the pass path would show up.
std::shared_ptr<PolicyFakeBackend> fake(const std::string& name, std::string rung,
                                        BackendDeclarations d = generous_declarations()) {
  return std::make_shared<PolicyFakeBackend>("backend-with-a-name-too-long-for-sso-" + name, std::move(rung),
                                             std::move(d));
}

}  // namespace

TEST_CASE("the counter sees allocations made inside the shared core") {
  // Guards the test itself: if operator new were not interposed for libmaf-sandbox.so, the
  // zero counts below would prove nothing.
  // The argument is built outside the window; only the core's own vectors are counted.
  std::vector<EgressEntry> entries{std::string("api.example.com"), std::string("pypi.org")};
  const long n = allocations_during([&] { (void)canonicalize_egress_allow(std::move(entries)); });
  CHECK(n > 0);
}

TEST_CASE("C-65: ensure_can_serve on a passing spec allocates nothing (FIXED, one backend)") {
  // "hardened_container" is longer than the small-string buffer: reading the rung from the
  // backend on every check (isolation() returns std::string) would allocate.
  SandboxRouter router({fake("only", "hardened_container")},
                       RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{}));
  const SandboxSpec spec({.kind = "python-with-a-long-workload-kind-name",
                          .requires_capabilities = {Capability::Exec, Capability::FilesOut},
                          .requires_os_family = OsFamily::Posix});
  CHECK(allocations_during([&] { router.ensure_can_serve(spec); }) == 0);
  CHECK(allocations_during([&] {
          for (int i = 0; i < 100; ++i) router.ensure_can_serve(spec);
        }) == 0);
  CHECK(allocations_during([&] { (void)router.select(spec); }) == 0);
}

TEST_CASE("C-63: PER_SPEC passing on the last of 16 backends allocates nothing, refusals included") {
  // Fifteen backends refuse, each for a different check, before the sixteenth serves: the
  // refusals must not build messages (or exceptions) that nobody will read.
  std::vector<std::shared_ptr<SandboxBackend>> backends;
  for (int i = 0; i < 15; ++i) {
    BackendDeclarations d = generous_declarations();
    std::string rung = "container";
    switch (i % 5) {
      case 0: rung = "os_process"; break;                         // below the floor
      case 1: d.capabilities = {Capability::Exec}; break;         // lacks FILES_OUT
      case 2: d.os_families = {OsFamily::Windows}; break;         // wrong guest family
      case 3: d.egress_modes = {}; break;                         // enforces no egress
      case 4: d.isolation_scopes = {IsolationScope::Call}; break; // no conversation scope
    }
    backends.push_back(fake(std::to_string(i), rung, d));
  }
  auto last = fake("last", "hardened_container");
  backends.push_back(last);
  SandboxRouter router(std::move(backends),
                       RouterOptions{.min_isolation = Isolation::Container, .selection = Selection::PerSpec});
  const SandboxSpec spec({.kind = "python-with-a-long-workload-kind-name",
                          .requires_capabilities = {Capability::Exec, Capability::FilesOut},
                          .requires_os_family = OsFamily::Posix});
  REQUIRE(router.select(spec) == last);
  CHECK(allocations_during([&] { router.ensure_can_serve(spec); }) == 0);
  CHECK(allocations_during([&] { (void)router.select(spec); }) == 0);
}
