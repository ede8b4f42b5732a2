// SandboxRouter policy: construction (C-60…C-63), the ordered checks (C-65…C-68), acquire
// and disposal (C-69…C-76), concurrency of the policy methods and of whole conversations
// (C-77; both also run under TSan, label `tsan`).
#include <catch2/catch.hpp>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_future.hpp>

#include <future>
#include <thread>

#include "message_of.hpp"
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"
#include "unit/policy_fakes.hpp"

using namespace maf::sandbox;
using maf::sandbox::test::message_of;
using maf::sandbox::test::generous_declarations;
using maf::sandbox::test::PolicyFakeBackend;

namespace {

std::shared_ptr<PolicyFakeBackend> fake(std::string name, std::string rung,
                                        BackendDeclarations d = generous_declarations()) {
  return std::make_shared<PolicyFakeBackend>(std::move(name), std::move(rung), std::move(d));
}

RouterOptions floor_at(Isolation rung) { return RouterOptions::lowered_floor(rung, LowerIsolationFloor{}); }

SandboxSpec spec_of(SandboxSpec::Fields f) {
  if (f.kind.empty()) f.kind = "bicep";
  return SandboxSpec(std::move(f));
}

}  // namespace

TEST_CASE("C-60: the floor and deny lists are typed; unknown values refuse at parse time") {
  CHECK_THROWS_AS(parse_isolation("quantum"), ValueError);
  CHECK_THROWS_AS(CapabilitySet::parse(std::vector<std::string>{"exec", "network"}), ValueError);
  RouterOptions o;
  CHECK(o.min_isolation == Isolation::MicroVm);  // default floor
}

TEST_CASE("C-61: no backends -> disabled router; ensure_can_serve is silent") {
  SandboxRouter router({});
  CHECK_FALSE(router.enabled());
  CHECK(router.backend() == nullptr);
  CHECK_NOTHROW(router.ensure_can_serve(spec_of({})));
}

TEST_CASE("C-62: a selected name that is not registered names the registered backends") {
  auto msg = message_of<NoSandboxBackend>([] {
    SandboxRouter({fake("zeta", "microvm"), fake("alpha", "microvm")}, RouterOptions{.selected = "docker"});
  });
  CHECK_THAT(msg, Catch::Contains("'docker'") && Catch::Contains("alpha, zeta"));
}

TEST_CASE("C-62: FIXED selection defaults to the first registered backend") {
  auto a = fake("a", "vm"), b = fake("b", "vm");
  SandboxRouter router({a, b});
  CHECK(router.backend() == a);
  SandboxRouter named({a, b}, RouterOptions{.selected = "b"});
  CHECK(named.backend() == b);
}

TEST_CASE("C-62: an unknown or legacy rung is refused naming backend, raw value and ladder") {
  for (const char* raw : {"process", "MICROVM", "quantum"}) {
    auto msg = message_of<SandboxBackendNotPermitted>([&] { SandboxRouter({fake("odd", raw)}, floor_at(Isolation::None)); });
    CHECK_THAT(msg, Catch::Contains("'odd'") && Catch::Contains(std::string("'") + raw + "'") &&
                        Catch::Contains("none < runtime < os_process"));
  }
}

TEST_CASE("C-62: a backend below the host floor is refused at construction, with the remedy") {
  auto msg = message_of<SandboxBackendNotPermitted>([] { SandboxRouter({fake("docker", "container")}); });
  CHECK_THAT(msg, Catch::Contains("'docker'") && Catch::Contains("'container'") && Catch::Contains("'microvm'") &&
                      Catch::Contains("minimum-isolation floor") && Catch::Contains("lower the floor explicitly") &&
                      Catch::Contains("none < runtime"));
  CHECK_NOTHROW(SandboxRouter({fake("docker", "container")}, floor_at(Isolation::Container)));
}

TEST_CASE("C-62: unselected backends are not floor-checked") {
  CHECK_NOTHROW(SandboxRouter({fake("vm", "vm"), fake("weak", "none")}, RouterOptions{.selected = "vm"}));
}

TEST_CASE("C-63 [gap]: PER_SPEC refuses unknown rungs of any backend at construction") {
  CHECK_THROWS_AS(SandboxRouter({fake("a", "vm"), fake("b", "process")}, RouterOptions{.selection = Selection::PerSpec}),
                  SandboxBackendNotPermitted);
  CHECK_THROWS_AS(SandboxRouter({fake("a", "vm")}, RouterOptions{.selected = "a", .selection = Selection::PerSpec}),
                  ValueError);
}

TEST_CASE("C-63: PER_SPEC picks the first backend in registration order that passes") {
  BackendDeclarations no_files = generous_declarations();
  no_files.capabilities = {Capability::Exec, Capability::FilesIn};
  auto first = fake("first", "container", no_files);
  auto second = fake("second", "container");
  SandboxRouter router({first, second}, RouterOptions{.min_isolation = Isolation::Container, .selection = Selection::PerSpec});
  CHECK(router.backend() == nullptr);
  CHECK(router.select(spec_of({})) == first);
  CHECK(router.select(spec_of({.requires_capabilities = {Capability::Exec, Capability::FilesOut}})) == second);
}

TEST_CASE("C-63 [gap]: PER_SPEC with no qualifying backend raises the first backend's refusal") {
  auto first = fake("first", "container");
  auto second = fake("second", "vm");
  SandboxRouter router({first, second}, RouterOptions{.min_isolation = Isolation::Container, .selection = Selection::PerSpec});
  auto msg = message_of<SandboxEgressNotEnforced>([&] { router.ensure_can_serve(spec_of({.egress = Egress::Unrestricted})); });
  CHECK_THAT(msg, Catch::Contains("'first'"));
}

TEST_CASE("C-64: a runtime failure never falls back to another backend") {
  auto a = fake("a", "vm", BackendDeclarations{});  // enforces no egress
  auto b = fake("b", "vm");
  SandboxRouter router({a, b});
  CHECK_THROWS_AS(router.ensure_can_serve(spec_of({})), SandboxEgressNotEnforced);
}

TEST_CASE("C-65 #1: host-denied capabilities refuse first, naming kind, members and the deny list") {
  // The backend is also below the floor: #1 must win.
  SandboxRouter router({fake("b", "container")},
                       RouterOptions{.min_isolation = Isolation::Container,
                                     .denied_capabilities = {Capability::FilesOut, Capability::Exec, Capability::HostTools}});
  auto msg = message_of<SandboxCapabilityDenied>(
      [&] { router.ensure_can_serve(spec_of({.requires_capabilities = {Capability::FilesOut, Capability::Exec},
                                             .min_isolation = Isolation::Vm})); });
  CHECK_THAT(msg, Catch::Contains("'bicep'") && Catch::Contains("exec, files_out") &&
                      Catch::Contains("denied_capabilities: exec, files_out, host_tools"));
}

TEST_CASE("C-65 #3 / C-66: the effective floor is the stricter of host and spec; a spec never lowers it") {
  SandboxRouter router({fake("docker", "container")}, floor_at(Isolation::Container));
  CHECK_NOTHROW(router.ensure_can_serve(spec_of({.min_isolation = Isolation::None})));
  auto msg = message_of<SandboxBackendNotPermitted>(
      [&] { router.ensure_can_serve(spec_of({.min_isolation = Isolation::MicroVm})); });
  CHECK_THAT(msg, Catch::Contains("'bicep'") && Catch::Contains("requires at least 'microvm'") &&
                      Catch::Contains("'docker'") && Catch::Contains("'container'") && Catch::Contains("ladder"));
}

TEST_CASE("C-65 #4: missing capabilities name backend, missing members, kind and declared set") {
  BackendDeclarations d = generous_declarations();
  d.capabilities = {Capability::Exec, Capability::FilesIn};
  SandboxRouter router({fake("wslc", "container", d)}, floor_at(Isolation::Container));
  auto msg = message_of<SandboxCapabilityNotSupported>([&] {
    router.ensure_can_serve(spec_of({.requires_capabilities = {Capability::Exec, Capability::FilesOut, Capability::FilesList}}));
  });
  CHECK_THAT(msg, Catch::Contains("'wslc'") && Catch::Contains("files_list, files_out") &&
                      Catch::Contains("'bicep'") && Catch::Contains("declares: exec, files_in"));
  d.capabilities = {};
  SandboxRouter none({fake("bare", "container", d)}, floor_at(Isolation::Container));
  CHECK_THAT(message_of<SandboxCapabilityNotSupported>([&] { none.ensure_can_serve(spec_of({})); }),
             Catch::Contains("declares: nothing"));
}

TEST_CASE("C-65 #5: OS family: silence refuses only a spec that asks") {
  BackendDeclarations d = generous_declarations();
  d.os_families = {};
  SandboxRouter router({fake("silent", "container", d)}, floor_at(Isolation::Container));
  CHECK_NOTHROW(router.ensure_can_serve(spec_of({})));
  auto msg = message_of<SandboxOsFamilyNotSupported>(
      [&] { router.ensure_can_serve(spec_of({.requires_os_family = OsFamily::Windows})); });
  CHECK_THAT(msg, Catch::Contains("'silent'") && Catch::Contains("no guest whose shape it states") &&
                      Catch::Contains("'windows'"));
  SandboxRouter posix({fake("px", "container")}, floor_at(Isolation::Container));
  CHECK_NOTHROW(posix.ensure_can_serve(spec_of({.requires_os_family = OsFamily::Posix})));
  CHECK_THAT(message_of<SandboxOsFamilyNotSupported>(
                 [&] { posix.ensure_can_serve(spec_of({.requires_os_family = OsFamily::Windows})); }),
             Catch::Contains("guests of family posix"));
}

TEST_CASE("C-65 #7: transfer limits: files_in checked before files_out, each naming direction and both limits") {
  BackendDeclarations d = generous_declarations();
  d.limits = SandboxLimits{TransferLimits(1024, 4096, 4), TransferLimits(1024, 4096, 4)};
  SandboxRouter router({fake("tight", "container", d)}, floor_at(Isolation::Container));
  auto msg = message_of<SandboxTransferLimitsNotPermitted>([&] { router.ensure_can_serve(spec_of({})); });
  CHECK_THAT(msg, Catch::Contains("files_in") && Catch::Contains("max_bytes_per_file=8388608") &&
                      Catch::Contains("max_bytes_per_file=1024") && Catch::Contains("'tight'") &&
                      Catch::Contains("'bicep'"));
  msg = message_of<SandboxTransferLimitsNotPermitted>(
      [&] { router.ensure_can_serve(spec_of({.files_in = TransferLimits(10, 10, 1)})); });
  CHECK_THAT(msg, Catch::Contains("files_out"));
  CHECK_NOTHROW(router.ensure_can_serve(
      spec_of({.files_in = TransferLimits(10, 10, 1), .files_out = TransferLimits(1024, 4096, 4)})));
}

TEST_CASE("C-65 #8 / C-67: egress is served only by membership; never substituted") {
  SandboxRouter router({fake("docker", "container")}, floor_at(Isolation::Container));
  CHECK_NOTHROW(router.ensure_can_serve(spec_of({})));
  auto msg = message_of<SandboxEgressNotEnforced>(
      [&] { router.ensure_can_serve(spec_of({.egress_allow = {std::string("pypi.org")}, .egress = Egress::Allowlist})); });
  CHECK_THAT(msg, Catch::Contains("'docker'") && Catch::Contains("'allowlist'") && Catch::Contains("'bicep'") &&
                      Catch::Contains("enforces: closed"));
  // A backend enforcing only unrestricted does not serve closed (no "more open" substitution
  // either way).
  BackendDeclarations open = generous_declarations();
  open.egress_modes = {Egress::Unrestricted};
  SandboxRouter open_router({fake("open", "container", open)}, floor_at(Isolation::Container));
  CHECK_THROWS_AS(open_router.ensure_can_serve(spec_of({})), SandboxEgressNotEnforced);
}

TEST_CASE("C-24 / C-65 #8: a backend declaring nothing enforces nothing, even closed") {
  SandboxRouter router({fake("silent", "vm", BackendDeclarations{})});
  CHECK_THAT(message_of<SandboxEgressNotEnforced>([&] { router.ensure_can_serve(spec_of({})); }),
             Catch::Contains("enforces: nothing"));
}

TEST_CASE("C-65: checks run in order — capability (#4) before OS family (#5) before limits (#7) before egress (#8)") {
  BackendDeclarations d{};  // default: exec+files_in, no families, default limits, no egress
  d.limits = SandboxLimits{TransferLimits(1, 1, 1), TransferLimits(1, 1, 1)};
  SandboxRouter router({fake("b", "vm", d)});
  SandboxSpec::Fields all_wrong{.kind = "k",
                                .requires_capabilities = {Capability::Exec, Capability::FilesOut},
                                .requires_os_family = OsFamily::Posix};
  CHECK_THROWS_AS(router.ensure_can_serve(SandboxSpec(all_wrong)), SandboxCapabilityNotSupported);
  all_wrong.requires_capabilities = kDefaultCapabilities;
  CHECK_THROWS_AS(router.ensure_can_serve(SandboxSpec(all_wrong)), SandboxOsFamilyNotSupported);
  all_wrong.requires_os_family.reset();
  CHECK_THROWS_AS(router.ensure_can_serve(SandboxSpec(all_wrong)), SandboxTransferLimitsNotPermitted);
  all_wrong.files_in = all_wrong.files_out = TransferLimits(1, 1, 1);
  CHECK_THROWS_AS(router.ensure_can_serve(SandboxSpec(all_wrong)), SandboxEgressNotEnforced);
}

TEST_CASE("C-68 [gap]: isolation scope is checked after egress; silence reads as {conversation}") {
  BackendDeclarations d = generous_declarations();
  d.isolation_scopes = {};
  SandboxRouter router({fake("b", "vm", d)});
  CHECK_NOTHROW(router.ensure_can_serve(spec_of({})));
  auto msg = message_of<SandboxCapabilityNotSupported>(
      [&] { router.ensure_can_serve(spec_of({.isolation_scope = IsolationScope::Call})); });
  CHECK_THAT(msg, Catch::Contains("isolation scope 'call'") && Catch::Contains("serves: conversation"));
  // A host minimum scope raises the spec's.
  SandboxRouter strict({fake("b", "vm", d)}, RouterOptions{.min_isolation_scope = IsolationScope::Call});
  CHECK_THROWS_AS(strict.ensure_can_serve(spec_of({})), SandboxCapabilityNotSupported);
  // Egress still wins when both are wrong (order).
  CHECK_THROWS_AS(router.ensure_can_serve(spec_of({.egress = Egress::Unrestricted, .isolation_scope = IsolationScope::Call})),
                  SandboxEgressNotEnforced);
}

TEST_CASE("C-9 / C-68: method rules need EGRESS_METHODS and, when declared, known method tokens") {
  BackendDeclarations d = generous_declarations();
  d.egress_modes = {Egress::Allowlist};
  SandboxRouter no_methods({fake("b", "vm", d)});
  SandboxSpec get_only({.kind = "k",
                        .egress_allow = {EgressRule("h.test", std::vector<std::string>{"GET"})},
                        .egress = Egress::Allowlist});
  CHECK_THROWS_WITH(no_methods.ensure_can_serve(get_only), Catch::Contains("egress_methods"));
  d.capabilities.insert(Capability::EgressMethods);
  SandboxRouter any_token({fake("b", "vm", d)});
  CHECK_NOTHROW(any_token.ensure_can_serve(get_only));
  d.egress_method_tokens = std::set<std::string>{"get"};
  SandboxRouter lower_only({fake("b", "vm", d)});
  CHECK_THROWS_WITH(lower_only.ensure_can_serve(get_only), Catch::Contains("'GET'"));
}

TEST_CASE("C-69: acquire with no backend raises NoSandboxBackend; otherwise runs the checks first") {
  BlockingRunner run;
  SandboxRouter empty({});
  CHECK_THROWS_WITH(run([&] { return empty.acquire(SandboxKey{"s", "t", "a", ""}, spec_of({})); }),
                    Catch::Contains("no sandbox backend is configured"));
  auto b = fake("b", "vm");
  SandboxRouter router({b});
  CHECK_THROWS_AS(run([&] { return router.acquire(SandboxKey{"s", "t", "a", ""}, spec_of({.egress = Egress::Unrestricted})); }),
                  SandboxEgressNotEnforced);
  CHECK(b->acquired.empty());  // refused before the backend was touched
  run([&] { return router.acquire(SandboxKey{"s", "t", "a", "c"}, spec_of({})); });
  REQUIRE(b->acquired.size() == 1);
  CHECK(b->acquired[0].first.call_id == "c");
  CHECK(b->acquired[0].second == "bicep");
}

TEST_CASE("C-70: deny lists cannot be softened by any declaration") {
  BackendDeclarations d = generous_declarations();
  d.capabilities = CapabilitySet{Capability::HostTools, Capability::Exec, Capability::FilesIn};
  SandboxRouter router({fake("b", "vm", d)}, RouterOptions{.denied_capabilities = {Capability::HostTools}});
  CHECK_THROWS_AS(router.ensure_can_serve(spec_of({.requires_capabilities = {Capability::Exec, Capability::HostTools}})),
                  SandboxCapabilityDenied);
}

TEST_CASE("C-71: dispose asks every backend, swallows failures, never raises") {
  BlockingRunner run;
  auto a = fake("a", "vm"), b = fake("b", "none");
  a->throw_on_dispose = true;
  b->dispose_failure = DisposalFailure{"refused", "still there"};
  SandboxRouter router({a, b});
  CHECK_NOTHROW(run([&] { return router.dispose(SandboxKey{"s", "t", "a", ""}); }));
  CHECK(a->disposed.size() == 1);
  CHECK(b->disposed.size() == 1);
}

TEST_CASE("C-72: dispose_kind narrows to the kind and reports confirmation") {
  BlockingRunner run;
  auto a = fake("a", "vm");
  SandboxRouter router({a});
  CHECK(run([&] { return router.dispose_kind(SandboxKey{"s", "t", "a", ""}, "python"); }));
  REQUIRE(a->disposed.size() == 1);
  CHECK(a->disposed[0].second == "python");
  a->dispose_failure = DisposalFailure{"timeout", "no answer"};
  CHECK_FALSE(run([&] { return router.dispose_kind(SandboxKey{"s", "t", "a", ""}, "python"); }));
  a->dispose_failure.reset();
  a->throw_on_dispose = true;
  CHECK_FALSE(run([&] { return router.dispose_kind(SandboxKey{"s", "t", "a", ""}, "python"); }));
}

TEST_CASE("C-73: dispose_scope sums counts and folds failures; a raising backend counts as unknown") {
  BlockingRunner run;
  auto a = fake("a", "vm"), b = fake("b", "vm"), c = fake("c", "vm");
  a->purge = ScopePurge{2, std::nullopt};
  b->purge = ScopePurge{1, DisposalFailure{"refused", "one left"}};
  c->throw_on_purge = true;
  SandboxRouter router({a, b, c});
  ScopePurge p = run([&] { return router.dispose_scope("s", "t"); });
  CHECK(p.disposed == 3);
  REQUIRE(p.undisposed);
  CHECK(p.undisposed->code == "refused");
  CHECK_THAT(p.undisposed->detail, Catch::Contains("one left") && Catch::Contains("purge exploded"));
  CHECK(c->purged.size() == 1);
}

TEST_CASE("C-74: with_scope disposes after the body and never masks the body's exception") {
  BlockingRunner run;
  auto a = fake("a", "vm");
  SandboxRouter router({a});
  int seen_inside = -1;
  ScopePurge p = run([&] {
    return router.with_scope("s", "t", [&]() -> boost::asio::awaitable<void> {
      seen_inside = static_cast<int>(a->purged.size());
      co_return;
    });
  });
  CHECK(seen_inside == 0);
  CHECK(p.disposed == 1);
  CHECK(a->purged.size() == 1);
  a->throw_on_purge = true;  // even a failing purge must not replace the body's error
  CHECK_THROWS_WITH(run([&] {
                      return router.with_scope("s", "t", []() -> boost::asio::awaitable<void> {
                        throw std::logic_error("body failed");
                        co_return;
                      });
                    }),
                    "body failed");
  CHECK(a->purged.size() == 2);
}

TEST_CASE("C-75: SandboxPurger delegates to dispose_scope") {
  BlockingRunner run;
  auto a = fake("a", "vm");
  a->purge = ScopePurge{4, std::nullopt};
  SandboxRouter router({a});
  SandboxPurger purger(router);
  CHECK(run([&] { return purger.purge_scoped_thread("s", "t"); }).disposed == 4);
}

TEST_CASE("C-76: enabled and backend properties") {
  auto a = fake("a", "vm");
  SandboxRouter router({a});
  CHECK(router.enabled());
  CHECK(router.backend() == a);
}

TEST_CASE("C-77: policy checks may run concurrently from many threads") {
  auto a = fake("a", "vm");
  SandboxRouter router({a});
  SandboxSpec ok = spec_of({});
  SandboxSpec bad = spec_of({.egress = Egress::Unrestricted});
  std::atomic<int> refusals{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        router.ensure_can_serve(ok);
        try {
          router.ensure_can_serve(bad);
        } catch (const SandboxEgressNotEnforced&) {
          ++refusals;
        }
      }
    });
  for (auto& th : threads) th.join();
  CHECK(refusals == 8000);
}

namespace {

// One conversation as a host runs it: acquire through the router, use the sandbox (when it
// can exec: the fake's serves files only), dispose. Returns what it read back, or "" when the
// fake served it.
boost::asio::awaitable<std::string> conversation(SandboxRouter& router, SandboxKey key, SandboxSpec spec) {
  auto acquiring = router.acquire(key, std::move(spec));
  std::shared_ptr<Sandbox> sandbox = co_await std::move(acquiring);
  std::string read_back;
  if (sandbox->capabilities().contains(Capability::Exec)) {
    // GCC 12: no temporaries inside a co_await expression.
    const std::string name = key.thread_id + "/" + key.agent_id + ".txt";
    const std::string content = key.agent_id;
    Command touch{std::vector<std::string>{"touch", name + ".done"}};
    co_await sandbox->write_file(name, content);
    co_await sandbox->exec(std::move(touch));
    const std::string here = ".";
    read_back = co_await sandbox->read_file(name, here, 1024);
  }
  co_await router.dispose(key);
  co_return read_back;
}

}  // namespace

TEST_CASE("C-77 / C-69 / C-71 / C-73: whole conversations run concurrently through one router") {
  // PER_SPEC over a fake without EXEC (serves the exec-free kind) and the in-process double
  // (serves the rest): every conversation is selected, acquired, used and disposed on a
  // four-thread pool while a purger sweeps the scope from a plain thread with its own runner.
  BackendDeclarations no_exec = generous_declarations();
  no_exec.capabilities.erase(Capability::Exec);
  auto files_only = fake("files-only", "none", no_exec);
  auto in_process = std::make_shared<testing::InProcessSandboxBackend>();
  RouterOptions options = floor_at(Isolation::None);
  options.selection = Selection::PerSpec;
  SandboxRouter router({files_only, in_process}, options);

  constexpr int kThreads = 4, kConversations = 64;
  boost::asio::thread_pool pool(kThreads);
  std::vector<std::future<std::string>> results;
  for (int i = 0; i < kConversations; ++i) {
    const bool needs_exec = i % 2 == 0;
    SandboxKey key{"scope", "t" + std::to_string(i % kThreads), "a" + std::to_string(i), ""};
    SandboxSpec spec = needs_exec ? spec_of({.kind = "runner", .requires_capabilities = {Capability::Exec}})
                                  : spec_of({.kind = "reader", .requires_capabilities = {Capability::FilesIn}});
    results.push_back(boost::asio::co_spawn(pool, conversation(router, key, std::move(spec)),
                                            boost::asio::use_future));
  }
  std::vector<ScopePurge> purges;  // Catch2 assertions are not thread-safe: checked after the join
  std::thread purger([&] {
    BlockingRunner run;
    for (int i = 0; i < 20; ++i)
      purges.push_back(run([&] { return router.dispose_scope("scope", "t" + std::to_string(i % kThreads)); }));
  });
  for (int i = 0; i < kConversations; ++i) {
    const std::string read_back = results[static_cast<std::size_t>(i)].get();
    CHECK(read_back == (i % 2 == 0 ? "a" + std::to_string(i) : ""));
  }
  purger.join();
  pool.join();

  CHECK(purges == std::vector<ScopePurge>(20, ScopePurge{2, std::nullopt}));  // each backend reports one
  CHECK(in_process->keys().size() == kConversations / 2);    // selection went by the spec
  CHECK(files_only->acquired.size() == kConversations / 2);
  CHECK(in_process->disposed().size() == kConversations);    // C-71: dispose asks every backend
  CHECK(files_only->disposed.size() == kConversations);
  CHECK(in_process->purged().size() == 20);
  CHECK(in_process->sandbox()->commands().size() == kConversations / 2);
  CHECK(in_process->sandbox()->contents().size() == kConversations / 2);  // the double records, never runs, a touch
}
