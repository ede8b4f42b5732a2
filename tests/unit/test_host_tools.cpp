// The host-tool registry and one run's dispatch (docs/host-tools.md HT-R1…R6), and the two
// router refusals a spec's host tools make reachable (C-65 #2, C-70).
#include <catch2/catch.hpp>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/host_tools.hpp"
#include "unit/policy_fakes.hpp"

using namespace maf::sandbox;
using maf::sandbox::test::generous_declarations;
using maf::sandbox::test::PolicyFakeBackend;
using nlohmann::json;

namespace {

HostFunction echo() {
  return [](const json& a, const HostToolCallContext&) { return json{{"echo", a}}; };
}

HostTool declared(std::string name, std::optional<Identity> identity = Identity::App,
                  std::optional<Integrity> source = Integrity::Trusted, std::optional<std::string> sink = std::nullopt) {
  return HostTool{.name = std::move(name),
                  .parameters = json{{"type", "object"}},
                  .declaration = HostToolDeclaration(source, std::move(sink), identity),
                  .function = echo()};
}

std::string refusal_of(const DispatchResult& r) {
  REQUIRE_FALSE(r.ok());
  return *r.refusal;
}

}  // namespace

TEST_CASE("HT-R1: an empty registry dispatches nothing; only registered names are callable") {
  HostToolRegistry registry;
  registry.aggregate();
  HostToolRun run(registry);
  CHECK_THAT(refusal_of(run.dispatch("lookup", json::object())), Catch::Contains("'lookup' is not a registered host tool"));
}

TEST_CASE("HT-R2: require_declared refuses an undeclared function at registration, naming it") {
  HostToolRegistry registry({.require_declared = true});
  HostTool bare{.name = "bare", .function = echo()};
  CHECK_THROWS_WITH(registry.add(bare), Catch::Contains("'bare'") && Catch::Contains("declaration"));
  CHECK_THROWS_AS(registry.add(bare), HostToolNotDeclared);
  CHECK(registry.size() == 0);
  registry.add(declared("ok"));  // a declared one passes the same gate
  CHECK(registry.names() == std::vector<std::string>{"ok"});
}

TEST_CASE("HT-R2: without require_declared an undeclared tool registers and fails safe in the aggregate") {
  HostToolRegistry registry;
  registry.add(HostTool{.name = "bare", .function = echo()});
  const auto a = registry.aggregate();
  CHECK(a.has_undeclared);
  CHECK(a.result_integrity == Integrity::Untrusted);  // nobody said what it brings in
  CHECK(a.identities == IdentitySet{Identity::App});  // it runs with the app's authority
}

TEST_CASE("HT-R3: only APP by default; USER needs allowed_identities and a mint callback; nullopt always passes") {
  HostToolRegistry app_only;
  CHECK_THROWS_AS(app_only.add(declared("as_user", Identity::User)), HostToolIdentityNotAllowed);
  CHECK_THROWS_WITH(app_only.add(declared("as_user", Identity::User)), Catch::Contains("allowed_identities: app"));
  app_only.add(declared("pure", std::nullopt));  // exercises no authority
  HostToolRegistry no_mint({.allowed_identities = {Identity::App, Identity::User}});
  CHECK_THROWS_WITH(no_mint.add(declared("as_user", Identity::User)), Catch::Contains("mint_user_identity"));
  HostToolRegistry with_mint({.allowed_identities = {Identity::App, Identity::User},
                              .mint_user_identity = [](const std::string& tool) { return "token-for-" + tool; }});
  with_mint.add(declared("as_user", Identity::User));
  CHECK(with_mint.aggregate().requires_approval);
}

TEST_CASE("HT-R3: a USER tool is refused in an unapproved run and gets the minted identity in an approved one") {
  HostToolRegistry registry({.allowed_identities = {Identity::App, Identity::User},
                             .mint_user_identity = [](const std::string& tool) { return "token-for-" + tool; }});
  HostTool t = declared("whoami", Identity::User);
  t.function = [](const json&, const HostToolCallContext& c) { return json(c.user_identity.value_or("none")); };
  registry.add(t);
  registry.aggregate();
  HostToolRun unapproved(registry, false);
  CHECK_THAT(refusal_of(unapproved.dispatch("whoami", json::object())), Catch::Contains("not approved"));
  HostToolRun approved(registry, true);
  const auto r = approved.dispatch("whoami", json::object());
  REQUIRE(r.ok());
  CHECK(*r.value_json == "\"token-for-whoami\"");
}

TEST_CASE("HT-R1: bad registrations are ValueErrors naming the value; a duplicate is refused, never replaced") {
  HostToolRegistry registry;
  registry.add(declared("lookup"));
  CHECK_THROWS_WITH(registry.add(declared("lookup")), Catch::Contains("'lookup' is already registered"));
  CHECK_THROWS_WITH(registry.add(declared("two words")), Catch::Contains("'two words'"));
  CHECK_THROWS_AS(registry.add(declared("")), ValueError);
  HostTool no_function = declared("nofn");
  no_function.function = nullptr;
  CHECK_THROWS_WITH(registry.add(no_function), Catch::Contains("'nofn' has no function"));
  HostTool bad_schema = declared("badschema");
  bad_schema.parameters = json{{"type", 17}};
  CHECK_THROWS_AS(registry.add(bad_schema), ValueError);
  CHECK(registry.names() == std::vector<std::string>{"lookup"});
  CHECK_THROWS_WITH(HostToolRegistry({.max_dispatches_per_run = 0}), Catch::Contains("max_dispatches_per_run"));
}

TEST_CASE("HT-R5: taking the aggregate seals the registry; an unsealed registry cannot run") {
  HostToolRegistry registry;
  registry.add(declared("a", Identity::App, Integrity::Trusted, "internal"));
  registry.add(declared("b", std::nullopt, std::nullopt, "internal"));
  registry.add(declared("c", std::nullopt, Integrity::Untrusted, "public-web"));
  CHECK_THROWS_WITH(HostToolRun(registry), Catch::Contains("not sealed"));
  const auto a = registry.aggregate();
  CHECK(registry.sealed());
  CHECK_THROWS_WITH(registry.add(declared("late")), Catch::Contains("sealed"));
  CHECK(a.names == std::vector<std::string>{"a", "b", "c"});
  CHECK(a.result_integrity == Integrity::Untrusted);  // the weakest source
  CHECK(a.outbound_caps == std::vector<std::string>{"internal", "public-web"});
  CHECK(a.identities == IdentitySet{Identity::App});
  CHECK_FALSE(a.requires_approval);
  CHECK_FALSE(a.has_undeclared);
}

TEST_CASE("HT-R4: the dispatch cap counts refusals too, and exhaustion is a refusal, not an exception") {
  HostToolRegistry registry({.max_dispatches_per_run = 2});
  registry.add(declared("lookup"));
  registry.aggregate();
  HostToolRun run(registry);
  CHECK_FALSE(run.dispatch("nope", json::object()).ok());
  CHECK(run.dispatch("lookup", json::object()).ok());
  CHECK_THAT(refusal_of(run.dispatch("lookup", json::object())), Catch::Contains("dispatch cap (2) is exhausted"));
  HostToolRun fresh(registry);  // per run, not per registry
  CHECK(fresh.dispatch("lookup", json::object()).ok());
}

TEST_CASE("HT-R4: response caps — per response, per run in bytes and in count — framing counted") {
  HostToolRegistry registry({.response_limits = TransferLimits(40, 60, 2)});
  HostTool big = declared("big");
  int calls = 0;
  big.function = [&calls](const json& a, const HostToolCallContext&) {
    ++calls;
    return json(std::string(a.value("n", 0), 'x'));
  };
  registry.add(big);
  registry.aggregate();
  HostToolRun run(registry);
  CHECK_THAT(refusal_of(run.dispatch("big", json{{"n", 39}})), Catch::Contains("over the per-response cap of 40"));
  CHECK(run.dispatch("big", json{{"n", 20}}, 8).ok());  // 22 + 8 = 30 bytes
  CHECK_THAT(refusal_of(run.dispatch("big", json{{"n", 30}}, 8)), Catch::Contains("byte budget of 60"));
  CHECK(run.dispatch("big", json{{"n", 10}}, 8).ok());  // 12 + 8: 50 of 60, 2 of 2 delivered
  const int before = calls;
  CHECK_THAT(refusal_of(run.dispatch("big", json{{"n", 1}})), Catch::Contains("delivered-response cap (2)"));
  CHECK(calls == before);  // knowable before the call, so refused before the body ran
  CHECK(run.delivered() == 2);
  CHECK(run.delivered_bytes() == 50);
}

TEST_CASE("HT-R6: arguments are validated host-side against the schema before the body runs") {
  HostToolRegistry registry;
  bool ran = false;
  HostTool t = declared("lookup");
  t.parameters = json::parse(R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]})");
  t.function = [&ran](const json& a, const HostToolCallContext&) {
    ran = true;
    return a["id"];
  };
  registry.add(t);
  registry.aggregate();
  HostToolRun run(registry);
  CHECK_THAT(refusal_of(run.dispatch("lookup", json{{"id", "seven"}})), Catch::Contains("/id"));
  CHECK_THAT(refusal_of(run.dispatch("lookup", json::array())), Catch::Contains("must be a JSON object"));
  CHECK_FALSE(ran);
  const auto ok = run.dispatch("lookup", json{{"id", 7}});
  REQUIRE(ok.ok());
  CHECK(*ok.value_json == "7");
}

TEST_CASE("HT-R6: a function that throws is a fixed refusal; its detail never reaches the guest") {
  HostToolRegistry registry;
  HostTool t = declared("flaky");
  t.function = [](const json&, const HostToolCallContext&) -> json { throw std::runtime_error("db password=hunter2"); };
  registry.add(t);
  registry.aggregate();
  HostToolRun run(registry);
  const auto sentence = refusal_of(run.dispatch("flaky", json::object()));
  CHECK_THAT(sentence, Catch::Contains("'flaky' failed"));
  CHECK_THAT(sentence, !Catch::Contains("hunter2"));
}

TEST_CASE("HT-R1: a guest-chosen name is echoed bounded") {
  HostToolRegistry registry;
  registry.aggregate();
  HostToolRun run(registry);
  const auto sentence = refusal_of(run.dispatch(std::string(5000, 'n'), json::object()));
  CHECK(sentence.size() < 300);
  CHECK_THAT(sentence, Catch::Contains("(truncated)"));
}

TEST_CASE("HT-R1 / OBS: each dispatch is a HostToolDispatchEvent; a throwing observer changes nothing") {
  std::vector<HostToolDispatchEvent> seen;
  auto recorder = make_observer([&seen](const SandboxEvent& e) {
    if (const auto* d = std::get_if<HostToolDispatchEvent>(&e)) seen.push_back(*d);
  });
  auto thrower = make_observer([](const SandboxEvent&) { throw std::runtime_error("observer bug"); });
  HostToolRegistry registry({.observers = {thrower, recorder}});
  registry.add(declared("lookup"));
  registry.aggregate();
  EventContext context;
  context.call_id = "call-7";
  HostToolRun run(registry, false, context);
  CHECK(run.dispatch("lookup", json::object()).ok());
  CHECK_FALSE(run.dispatch("missing", json::object()).ok());
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].tool == "lookup");
  CHECK(seen[0].identity == Identity::App);
  CHECK(seen[0].outcome == DispatchOutcome::Ok);
  CHECK(seen[0].context.call_id == "call-7");
  CHECK(seen[1].outcome == DispatchOutcome::Refused);
}

TEST_CASE("HT-R5: a spec with host tools requires HOST_TOOLS and carries the aggregate's identities") {
  HostToolRegistry registry;
  registry.add(declared("lookup"));
  SandboxSpec spec({.kind = "k", .host_tools = registry.aggregate()});
  CHECK(spec.requires_capabilities().contains(Capability::HostTools));
  CHECK(spec.identities() == IdentitySet{Identity::App});
  CHECK(SandboxSpec({.kind = "plain"}).identities().empty());
}

TEST_CASE("C-65 #2: denied_identities refuses a spec whose host tools exercise a denied identity") {
  BackendDeclarations d = generous_declarations();
  d.capabilities.insert(Capability::HostTools);
  SandboxRouter router({std::make_shared<PolicyFakeBackend>("b", "vm", d)},
                       RouterOptions{.denied_identities = {Identity::App}});
  HostToolRegistry registry;
  registry.add(declared("lookup"));
  SandboxSpec spec({.kind = "lookup-kind", .host_tools = registry.aggregate()});
  CHECK_THROWS_AS(router.ensure_can_serve(spec), SandboxIdentityDenied);
  CHECK_THROWS_WITH(router.ensure_can_serve(spec), Catch::Contains("'lookup-kind'") && Catch::Contains("app"));
  HostToolRegistry pure;
  pure.add(declared("pure", std::nullopt));  // no authority: nothing to deny
  CHECK_NOTHROW(router.ensure_can_serve(SandboxSpec({.kind = "pure-kind", .host_tools = pure.aggregate()})));
}

TEST_CASE("C-70: denied_capabilities={HOST_TOOLS} refuses a spec with host tools though it never named the capability") {
  BackendDeclarations d = generous_declarations();
  d.capabilities.insert(Capability::HostTools);
  SandboxRouter router({std::make_shared<PolicyFakeBackend>("b", "vm", d)},
                       RouterOptions{.denied_capabilities = {Capability::HostTools}});
  HostToolRegistry registry;
  registry.add(declared("lookup", std::nullopt));
  CHECK_THROWS_AS(router.ensure_can_serve(SandboxSpec({.kind = "k", .host_tools = registry.aggregate()})),
                  SandboxCapabilityDenied);
}
