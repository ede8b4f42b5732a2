// Attached identity (docs/policy.md CRED-1…CRED-5): the spec's shape and its refusals, the
// JSON form, the router's max_identity_scope at ensure_can_serve and at acquire, and the
// backend's one way to ask the host for a value.
#include <catch2/catch.hpp>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include "message_of.hpp"
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/spec_json.hpp"
#include "maf/sandbox/sync.hpp"
#include "unit/policy_fakes.hpp"

using namespace maf::sandbox;
using maf::sandbox::test::message_of;

namespace {

AttachedCredential credential(std::string name, std::vector<std::string> hosts) {
  AttachedCredential::Fields f;
  f.name = std::move(name);
  f.hosts = std::move(hosts);
  return AttachedCredential(std::move(f));
}

SandboxSpec::Fields allowing(std::vector<EgressEntry> hosts) {
  SandboxSpec::Fields f;
  f.kind = "agent";
  f.egress = Egress::Allowlist;
  f.egress_allow = std::move(hosts);
  return f;
}

SandboxSpec with_github_token(CredentialLifetime lifetime = CredentialLifetime::Sandbox,
                              CredentialSharing sharing = CredentialSharing::Sandbox) {
  auto f = allowing({"api.github.com", "pypi.org"});
  AttachedCredential::Fields c;
  c.name = "github";
  c.hosts = {"api.github.com"};
  c.lifetime = lifetime;
  c.sharing = sharing;
  f.attached_identity.push_back(AttachedCredential(std::move(c)));
  return SandboxSpec(std::move(f));
}

BackendDeclarations brokering() {
  auto d = maf::sandbox::test::generous_declarations();
  d.capabilities.insert(Capability::AttachedIdentity);
  d.egress_modes.insert(Egress::Allowlist);
  return d;
}

/// A backend that asks its source at acquire, as Docker does, and keeps what it was given.
class BrokeringFake : public maf::sandbox::test::PolicyFakeBackend {
public:
  BrokeringFake() : PolicyFakeBackend("broker", "microvm", brokering()) {}
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec,
                                                              AcquirePlan plan) override {
    for (auto& v : supply_credentials(key, spec)) supplied.push_back(v.reveal());
    co_return co_await PolicyFakeBackend::do_acquire(std::move(key), std::move(spec), std::move(plan));
  }
  std::vector<std::string> supplied;
};

}  // namespace

TEST_CASE("CRED-1: a credential makes the spec require attached_identity; defaults fill in") {
  const auto spec = with_github_token();
  CHECK(spec.requires_capabilities().contains(Capability::AttachedIdentity));
  const auto& c = spec.attached_identity().at(0);
  CHECK(c.header() == "Authorization");
  CHECK(c.format() == "Bearer {value}");
  CHECK(c.env() == "GITHUB");
  CHECK(c.scope() == IdentityScope::Sandbox);
  CHECK_FALSE(SandboxSpec(allowing({"pypi.org"})).requires_capabilities().contains(Capability::AttachedIdentity));
}

TEST_CASE("CRED-2: bad shapes are a ValueError naming the credential") {
  CHECK_THAT(message_of<ValueError>([] { credential("github", {}); }),
             Catch::Contains("'github'") && Catch::Contains("bound to no host"));
  CHECK_THAT(message_of<ValueError>([] { credential("1bad", {"a.example"}); }), Catch::Contains("'1bad'"));
  CHECK_THAT(message_of<ValueError>([] { credential("wide", {"*.example.com"}); }),
             Catch::Contains("'wide'") && Catch::Contains("allow_wildcard"));
  CHECK_THAT(message_of<ValueError>([] {
               AttachedCredential::Fields f{.name = "smuggle", .hosts = {"a.example"}, .header = "Content-Length"};
               AttachedCredential{f};
             }),
             Catch::Contains("'smuggle'") && Catch::Contains("Content-Length"));
  CHECK_THAT(message_of<ValueError>([] {
               AttachedCredential::Fields f{.name = "crlf", .hosts = {"a.example"}, .format = "Bearer {value}\r\nX: y"};
               AttachedCredential{f};
             }),
             Catch::Contains("'crlf'") && Catch::Contains("control"));
  CHECK_THAT(message_of<ValueError>([] {
               AttachedCredential::Fields f{.name = "twice", .hosts = {"a.example"}, .format = "{value}{value}"};
               AttachedCredential{f};
             }),
             Catch::Contains("exactly once"));
  CHECK_THAT(message_of<ValueError>([] {
               AttachedCredential::Fields f{.name = "proxyvar", .hosts = {"a.example"}, .env = "HTTPS_PROXY"};
               AttachedCredential{f};
             }),
             Catch::Contains("'HTTPS_PROXY'"));
  // A host the spec does not allow: the credential and the host are named.
  CHECK_THAT(message_of<ValueError>([] {
               auto f = allowing({"pypi.org"});
               f.attached_identity.push_back(credential("github", {"api.github.com"}));
               SandboxSpec{f};
             }),
             Catch::Contains("'github'") && Catch::Contains("'api.github.com'") && Catch::Contains("egress_allow"));
  // Closed egress has no host at all.
  CHECK_THROWS_AS([] {
    SandboxSpec::Fields f;
    f.kind = "agent";
    f.attached_identity.push_back(credential("github", {"api.github.com"}));
    SandboxSpec{f};
  }(), ValueError);
  CHECK_THAT(message_of<ValueError>([] {
               auto f = allowing({"a.example"});
               f.attached_identity.push_back(credential("one", {"a.example"}));
               f.attached_identity.push_back(credential("one", {"a.example"}));
               SandboxSpec{f};
             }),
             Catch::Contains("named twice"));
  // Hosts match case-insensitively; a wildcard opted into is a wider scope.
  auto f = allowing({"API.example.com", "*.tenant.example"});
  f.attached_identity.push_back(credential("case", {"api.EXAMPLE.com"}));
  AttachedCredential::Fields w{.name = "wild", .hosts = {"*.tenant.example"}, .allow_wildcard = true};
  f.attached_identity.push_back(AttachedCredential(w));
  const SandboxSpec spec(f);
  CHECK(spec.attached_identity().at(1).scope() == IdentityScope::Shared);
}

TEST_CASE("CRED-1: the JSON form round-trips and names a bad entry") {
  const auto spec = with_github_token();
  const auto j = spec_to_json(spec);
  CHECK(j.at("attached_identity").at(0).at("name") == "github");
  CHECK(j.dump().find("value\"") == std::string::npos);  // no value field exists to fill
  CHECK(spec_from_json(j).attached_identity() == spec.attached_identity());
  auto bad = j;
  bad["attached_identity"][0]["value"] = "s3cr3t";
  CHECK_THAT(message_of<ValueError>([&] { spec_from_json(bad); }),
             Catch::Contains("attached_identity[0]") && Catch::Contains("unknown key 'value'"));
  bad = j;
  bad["attached_identity"][0]["lifetime"] = "forever";
  CHECK_THAT(message_of<ValueError>([&] { spec_from_json(bad); }),
             Catch::Contains("('github').lifetime") && Catch::Contains("forever"));
  bad = j;
  bad["attached_identity"][0]["hosts"] = nlohmann::json::array({"evil.example"});
  CHECK_THAT(message_of<ValueError>([&] { spec_from_json(bad); }),
             Catch::Contains("'github'") && Catch::Contains("'evil.example'"));
}

TEST_CASE("CRED-5: the default max_identity_scope refuses any credential, at ensure_can_serve and at acquire") {
  auto backend = std::make_shared<BrokeringFake>();
  SandboxRouter router({backend}, RouterOptions{});
  const auto spec = with_github_token();
  const auto msg = message_of<SandboxIdentityScopeDenied>([&] { router.ensure_can_serve(spec); });
  CHECK_THAT(msg, Catch::Contains("'github'") && Catch::Contains("'sandbox'") && Catch::Contains("'none'"));
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return router.acquire(SandboxKey{"s", "t", "a", ""}, spec); }), SandboxIdentityScopeDenied);
  CHECK(backend->acquired.empty());
  CHECK_NOTHROW(router.ensure_can_serve(SandboxSpec(allowing({"pypi.org"}))));
}

TEST_CASE("CRED-5: the scope ladder: call < sandbox < shared") {
  auto backend = std::make_shared<BrokeringFake>();
  RouterOptions o;
  o.max_identity_scope = IdentityScope::Sandbox;
  SandboxRouter router({backend}, o);
  CHECK_NOTHROW(router.ensure_can_serve(with_github_token()));
  CHECK_THAT(message_of<SandboxIdentityScopeDenied>(
                 [&] { router.ensure_can_serve(with_github_token(CredentialLifetime::Sandbox, CredentialSharing::Key)); }),
             Catch::Contains("'shared'") && Catch::Contains("'github'"));
  o.max_identity_scope = IdentityScope::Call;
  SandboxRouter narrow({backend}, o);
  CHECK_THROWS_AS(narrow.ensure_can_serve(with_github_token()), SandboxIdentityScopeDenied);
  // Lifetime `call` passes the ceiling but needs a backend that swaps values live (CRED-3).
  CHECK_THAT(message_of<SandboxCapabilityNotSupported>(
                 [&] { narrow.ensure_can_serve(with_github_token(CredentialLifetime::Call)); }),
             Catch::Contains("'github'") && Catch::Contains("lifetime 'call'"));
}

TEST_CASE("CRED-4: the backend asks the host's source at acquire; no source or a failing one refuses") {
  BlockingRunner run;
  const auto spec = with_github_token();
  RouterOptions o;
  o.max_identity_scope = IdentityScope::Sandbox;
  {
    auto backend = std::make_shared<BrokeringFake>();
    SandboxRouter router({backend}, o);  // no source: refused, nothing written anywhere
    CHECK_THAT(message_of<SandboxCapabilityNotSupported>(
                   [&] { run([&] { return router.acquire(SandboxKey{"s", "t", "a", ""}, spec); }); }),
               Catch::Contains("no credential source") && Catch::Contains("'github'"));
  }
  std::vector<CredentialRequest> asked;
  auto backend = std::make_shared<BrokeringFake>();
  SandboxRouter router({backend}, o);
  router.attach_credential_source([&](const CredentialRequest& r) {
    asked.push_back(r);
    return SecretValue("ghp_the-real-value");
  });
  run([&] { return router.acquire(SandboxKey{"s", "t", "a", ""}, spec); });
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].credential == "github");
  CHECK(asked[0].hosts == std::vector<std::string>{"api.github.com"});
  CHECK(asked[0].scope == "s");
  CHECK(backend->supplied == std::vector<std::string>{"ghp_the-real-value"});

  auto failing = std::make_shared<BrokeringFake>();
  SandboxRouter refusing({failing}, o);
  refusing.attach_credential_source(
      [](const CredentialRequest&) -> SecretValue { throw std::runtime_error("vault said ghp_leak"); });
  const auto msg = message_of<SandboxCredentialUnavailable>(
      [&] { run([&] { return refusing.acquire(SandboxKey{"s", "t", "b", ""}, spec); }); });
  CHECK_THAT(msg, Catch::Contains("'github'"));
  CHECK(msg.find("ghp_leak") == std::string::npos);  // the source's words may hold the value
  auto crlf = std::make_shared<BrokeringFake>();
  SandboxRouter crlf_router({crlf}, o);
  crlf_router.attach_credential_source([](const CredentialRequest&) { return SecretValue("line\r\nX-Injected: 1"); });
  CHECK_THROWS_AS(run([&] { return crlf_router.acquire(SandboxKey{"s", "t", "c", ""}, spec); }),
                  SandboxCredentialUnavailable);
}

TEST_CASE("CRED-1: a backend that does not declare attached_identity refuses a credentialed spec, never falls back") {
  // The process backend, WSLC and ACAS declare no ATTACHED_IDENTITY: the router (and ACQ-1 on
  // a direct acquire) refuses before the backend runs, so nothing can be written into a guest.
  auto d = brokering();
  d.capabilities = d.capabilities.difference(CapabilitySet{Capability::AttachedIdentity});
  auto backend = std::make_shared<maf::sandbox::test::PolicyFakeBackend>("plain", "microvm", d);
  RouterOptions o;
  o.max_identity_scope = IdentityScope::Shared;
  SandboxRouter router({backend}, o);
  CHECK_THAT(message_of<SandboxCapabilityNotSupported>([&] { router.ensure_can_serve(with_github_token()); }),
             Catch::Contains("attached_identity") && Catch::Contains("'plain'"));
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return backend->acquire(SandboxKey{"s", "t", "a", ""}, with_github_token()); }),
                  SandboxCapabilityNotSupported);
  CHECK(backend->acquired.empty());
}
