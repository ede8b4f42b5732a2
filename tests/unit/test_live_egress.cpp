// update_egress (docs/policy.md EGU-7…EGU-10) without an engine: the declaration, the typed
// refusals before anything changes, and the router's check of the new spec. The Docker engine
// test (test_docker_egress_l7) holds the proxy's side: tunnels closed, next request refused.
#include <catch2/catch.hpp>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include "message_of.hpp"
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"
#include "unit/policy_fakes.hpp"

using namespace maf::sandbox;
using maf::sandbox::test::message_of;

namespace {

/// A sandbox that can change its egress live and records what it was asked to apply.
class LiveFake : public testing::InProcessSandbox, public LiveEgress {
public:
  explicit LiveFake(std::optional<std::string> refusal = std::nullopt) : refusal_(std::move(refusal)) {}
  std::optional<std::string> live_egress_refusal() const override { return refusal_; }
  boost::asio::awaitable<EgressUpdateReport> apply_egress(SandboxSpec spec) override {
    applied.push_back(spec);
    co_return EgressUpdateReport{"applied", 2};
  }
  std::vector<SandboxSpec> applied;

private:
  std::optional<std::string> refusal_;
};

SandboxSpec allowing(std::vector<EgressEntry> hosts, Egress egress = Egress::Allowlist) {
  SandboxSpec::Fields f;
  f.kind = "agent";
  f.egress = egress;
  f.egress_allow = std::move(hosts);
  return SandboxSpec(std::move(f));
}

std::shared_ptr<maf::sandbox::test::PolicyFakeBackend> allowlist_backend() {
  auto d = maf::sandbox::test::generous_declarations();
  d.egress_modes.insert(Egress::Allowlist);
  return std::make_shared<maf::sandbox::test::PolicyFakeBackend>("fake", "microvm", d);
}

}  // namespace

TEST_CASE("EGU-7 EGU-10: a checked update reaches the sandbox with the whole new list and returns the spec in force") {
  SandboxRouter router({allowlist_backend()}, RouterOptions{});
  auto live = std::make_shared<LiveFake>();
  BlockingRunner run;
  const std::vector<EgressEntry> next{std::string("a.test"), std::string("c.test")};
  const auto current = allowing({"a.test", "b.test"});  // named: GCC 12 and temporaries into coroutines
  const auto result = run([&] { return update_egress(router, live, current, next); });
  REQUIRE(live->applied.size() == 1);
  CHECK(live->applied[0].egress_allow() == next);
  CHECK(result.spec.egress_allow() == next);
  CHECK(result.report.closed_tunnels == 2);
}

TEST_CASE("EGU-8: a sandbox that cannot change egress live is refused, typed, naming why") {
  SandboxRouter router({allowlist_backend()}, RouterOptions{});
  BlockingRunner run;
  const std::vector<EgressEntry> next{std::string("a.test")};
  const auto current = allowing({"a.test", "b.test"});
  std::shared_ptr<Sandbox> plain = std::make_shared<testing::InProcessSandbox>();
  REQUIRE(live_egress_refusal(*plain));
  CHECK_THAT(message_of<SandboxCapabilityNotSupported>(
                 [&] { run([&] { return update_egress(router, plain, current, next); }); }),
             Catch::Contains("declares no live egress update"));
  auto refusing = std::make_shared<LiveFake>("proxy image 'x' does not list the feature live-policy");
  CHECK_THAT(message_of<SandboxCapabilityNotSupported>(
                 [&] { run([&] { return update_egress(router, refusing, current, next); }); }),
             Catch::Contains("live-policy"));
  CHECK(refusing->applied.empty());
}

TEST_CASE("EGU-9 EGU-10: a rule change, a non-allowlist spec, a bad host and a router refusal change nothing") {
  BlockingRunner run;
  auto live = std::make_shared<LiveFake>();
  SandboxRouter router({allowlist_backend()}, RouterOptions{});
  const auto current = allowing({"a.test", "b.test"});
  // A method/path rule is fixed for the proxy's life.
  const std::vector<EgressEntry> ruled{EgressRule("a.test", std::vector<std::string>{"GET"}, std::nullopt)};
  CHECK_THAT(message_of<ValueError>([&] { run([&] { return update_egress(router, live, current, ruled); }); }),
             Catch::Contains("method/path rules cannot change"));
  // Only an allowlist changes live.
  const std::vector<EgressEntry> one{std::string("a.test")};
  const auto closed = allowing({}, Egress::Closed);
  CHECK_THAT(message_of<ValueError>([&] { run([&] { return update_egress(router, live, closed, one); }); }),
             Catch::Contains("not allowlist"));
  // The new list is a spec like any other: a bad host is named.
  const std::vector<EgressEntry> bad{std::string("a.test"), std::string("no such/host")};
  CHECK_THAT(message_of<ValueError>([&] { run([&] { return update_egress(router, live, current, bad); }); }),
             Catch::Contains("no such/host"));
  // The router holds the new spec to its policy as at acquire: here it denies a capability.
  RouterOptions strict;
  strict.denied_capabilities = CapabilitySet{Capability::Exec};
  SandboxRouter refusing({allowlist_backend()}, strict);
  CHECK_THROWS_AS(run([&] { return update_egress(refusing, live, current, one); }), PermissionError);
  CHECK(live->applied.empty());
}
