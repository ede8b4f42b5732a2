// The Docker backend's OS-family declaration without an engine (docs/backends/docker.md "OS
// family"): what the plugin factory builds (deferred) contacts nothing until first use, and
// a cold acquire checks the declared family against the daemon before any container exists.
#include <catch2/catch.hpp>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/sync.hpp"
#include "recording_transport.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::docker;

namespace {

/// An engine whose daemon reports `os`; counts how often it was asked.
class OsEngine final : public docker_test::RecordingTransport {
public:
  explicit OsEngine(std::string os) : os_(std::move(os)) {}
  boost::asio::awaitable<std::string> server_os() override {
    ++asked;
    co_return os_;
  }
  int asked = 0;

private:
  std::string os_;
};

SandboxSpec spec() {
  return SandboxSpec({.kind = "shell", .image = "busybox:1", .requires_capabilities = {Capability::Exec}});
}

}  // namespace

TEST_CASE("D-5: deferred() makes no engine call, declares posix, and a cold acquire on a daemon that says windows is "
          "refused before any container is made") {
  auto engine = std::make_shared<OsEngine>("windows");
  auto backend = DockerSandboxBackend::deferred(DockerConfig{}, engine);
  CHECK(engine->calls.empty());
  CHECK(engine->asked == 0);
  CHECK(backend->declarations().os_families == OsFamilySet{OsFamily::Posix});

  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return backend->acquire(SandboxKey{"s", "t", "a", ""}, spec()); }),
                    Catch::Contains("'windows'") && Catch::Contains("posix"));
  CHECK(engine->asked == 1);
  for (const auto& call : engine->calls) CHECK_THAT(call, !Catch::StartsWith("run "));
}

TEST_CASE("D-5: the plain constructor declares no os family and never asks the daemon") {
  auto engine = std::make_shared<OsEngine>("windows");
  DockerSandboxBackend backend(DockerConfig{}, engine);
  CHECK(backend.declarations().os_families.empty());
  CHECK(engine->asked == 0);
}
