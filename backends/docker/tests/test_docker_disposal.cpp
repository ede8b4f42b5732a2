// Disposal by label read back from the engine, and reap (D-26…D-28).
#include <thread>

#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;
using namespace docker_test;

namespace {
std::string names_in_scope(const std::string& scope) {
  return docker_cli({"ps", "-a", "--filter", "label=maf-sandbox.scope=" + scope, "--format", "{{.Names}}"});
}
}  // namespace

TEST_CASE("DX-2 D-26: a second backend instance's dispose_scope removes the first one's containers") {
  Scope s;
  s.acquire(spec_for(kImage, kAllCaps, "one"));
  s.acquire(spec_for(kImage, kAllCaps, "two"), "agent-2");
  REQUIRE_FALSE(names_in_scope(s.scope).empty());
  BlockingRunner run;
  docker::DockerSandboxBackend other(test_config());  // empty registry, plain constructor
  auto purge = run([&] { return other.dispose_scope(s.scope, s.thread); });
  CHECK(purge.disposed == 2);
  CHECK_FALSE(purge.undisposed.has_value());
  CHECK(names_in_scope(s.scope).empty());
}

TEST_CASE("D-6: labels that are long or carry separators are digested identically on create and on purge") {
  Scope s;
  s.scope = "e2e scope/with:separators " + random_hex() + std::string(80, 'x');
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  const std::string label =
      docker_cli({"container", "inspect", "--format", "{{index .Config.Labels \"maf-sandbox.scope\"}}", name});
  CHECK(label.rfind("sha256-", 0) == 0);
  CHECK(label.size() == 55);
  auto purge = s.run([&] { return s.backend->dispose_scope(s.scope, s.thread); });
  CHECK(purge.disposed == 1);
  CHECK(docker_cli({"ps", "-a", "--filter", "name=^" + name + "$", "--format", "{{.Names}}"}).empty());
}

TEST_CASE("dispose by kind leaves the key's other kinds; dispose by instance checks the owner") {
  Scope s;
  auto a = s.acquire(spec_for(kImage, kAllCaps, "alpha"));
  auto b = s.acquire(spec_for(kImage, kAllCaps, "beta"));
  CHECK_FALSE(s.run([&] { return s.backend->dispose(s.key(), std::string("alpha"), std::nullopt); }));
  CHECK(names_in_scope(s.scope) == docker::DockerSandboxBackend::container_name(s.key(), "beta"));
  // A short ID is refused; a foreign key's full ID removes nothing.
  CHECK(s.run([&] { return s.backend->dispose(s.key(), std::nullopt, b->instance_id().substr(0, 12)); }));
  CHECK_FALSE(
      s.run([&] { return s.backend->dispose(s.key("someone-else"), std::nullopt, b->instance_id()); }));
  CHECK_FALSE(names_in_scope(s.scope).empty());
  CHECK_FALSE(s.run([&] { return s.backend->dispose(s.key(), std::string("beta"), b->instance_id()); }));
  CHECK(names_in_scope(s.scope).empty());
}

TEST_CASE("D-28: reap removes only expired, qualifying sandboxes of the named scope") {
  Scope s;
  s.acquire(spec_for(kImage, kAllCaps));
  // A look-alike carrying every identity label but a foreign name is never touched.
  const std::string foreign = "maf-sandbox-wslc-" + random_hex(6);
  docker_cli({"run", "-d", "--network", "none", "--name", foreign, "--label", "maf-sandbox.scope=" + s.scope,
              "--label", "maf-sandbox.thread=t", "--label", "maf-sandbox.agent=a", "--label", "maf-sandbox.kind=k",
              kImage, "sleep", "infinity"});
  CHECK_THROWS_AS(s.run([&] { return s.backend->reap_detailed(std::chrono::seconds(0), s.scope); }), ValueError);
  // Nothing is an hour old.
  auto young = s.run([&] { return s.backend->reap_detailed(std::chrono::hours(1), s.scope); });
  CHECK(young.disposed == 0);
  CHECK(young.failures.empty());
  // Creation times have one-second resolution at worst: wait until the sandbox is older
  // than the one-second lifetime (an ordering precondition, not a timing assertion).
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  auto old = s.run([&] { return s.backend->reap_detailed(std::chrono::seconds(1), s.scope); });
  CHECK(old.disposed == 1);
  CHECK(old.failures.empty());
  CHECK(names_in_scope(s.scope) == foreign);
  docker_cli({"rm", "-f", foreign});
}
