// Offline tests of transport selection and the Engine-API transport's endpoint binding
// (issue 9; docker.md §3.1, D-29): what is refused is refused when the backend is made,
// by name, before any engine call.
#include <cstdlib>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "maf/sandbox/docker/api_transport.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sync.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::docker;

namespace {
DockerConfig api_config(std::string host) {
  DockerConfig c;
  c.transport = DockerTransportKind::Api;
  c.docker_host = std::move(host);
  return c;
}

/// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) {
    if (const char* o = std::getenv(name.c_str())) old = o;
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};
}  // namespace

TEST_CASE("docker.md §2 (issue 9): the transport key is cli or api; docker_host belongs to api") {
  CHECK(parse_docker_config(nlohmann::json::object()).transport == DockerTransportKind::Cli);
  CHECK(parse_docker_config({{"transport", "api"}}).transport == DockerTransportKind::Api);
  CHECK(parse_docker_config({{"transport", "cli"}}).transport == DockerTransportKind::Cli);
  CHECK_THROWS_WITH(parse_docker_config({{"transport", "http"}}), Catch::Contains("transport"));
  CHECK_THROWS_AS(parse_docker_config({{"transport", 1}}), ValueError);
  CHECK(parse_docker_config({{"transport", "api"}, {"docker_host", "unix:///run/d.sock"}}).docker_host ==
        "unix:///run/d.sock");
  CHECK_THROWS_WITH(parse_docker_config({{"docker_host", "unix:///run/d.sock"}}), Catch::Contains("docker_host"));
  CHECK_THROWS_AS(parse_docker_config({{"transport", "api"}, {"docker_host", ""}}), ValueError);
}

TEST_CASE("D-29 (api): an endpoint the API transport cannot speak is refused at creation, by name") {
  CHECK_THROWS_WITH(make_api_transport(api_config("https://engine.example:2376")),
                    Catch::Contains("https://engine.example:2376") && Catch::Contains("TLS"));
  CHECK_THROWS_WITH(make_api_transport(api_config("ssh://me@engine.example")), Catch::Contains("ssh://me@engine"));
  CHECK_THROWS_AS(make_api_transport(api_config("npipe:////./pipe/docker_engine")), ValueError);
  CHECK_THROWS_AS(make_api_transport(api_config("unix://relative.sock")), ValueError);
  {
    ScopedEnv verify("DOCKER_TLS_VERIFY", "1");
    CHECK_THROWS_WITH(make_api_transport(api_config("tcp://engine.example:2376")),
                      Catch::Contains("tcp://engine.example:2376") && Catch::Contains("DOCKER_TLS_VERIFY"));
    // The backend constructor binds the transport, so the refusal comes from it too.
    CHECK_THROWS_AS(DockerSandboxBackend(api_config("tcp://engine.example:2376")), ValueError);
  }
  ScopedEnv verify("DOCKER_TLS_VERIFY", nullptr);
  CHECK_NOTHROW(make_api_transport(api_config("tcp://127.0.0.1:2375")));
  CHECK_NOTHROW(make_api_transport(api_config("unix:///nonexistent/docker.sock")));  // no engine call yet
}

TEST_CASE("D-29 (api): DOCKER_HOST is read when the transport is made, never later") {
  std::shared_ptr<DockerTransport> transport;
  {
    ScopedEnv host("DOCKER_HOST", "unix:///bound/at/creation.sock");
    DockerConfig c;
    c.transport = DockerTransportKind::Api;
    transport = make_transport(c);
  }
  ScopedEnv later("DOCKER_HOST", "unix:///changed/later.sock");
  BlockingRunner run;
  CHECK(run([&] { return transport->endpoint(); }) == "unix:///bound/at/creation.sock");
  // An explicit docker_host wins over the environment.
  auto configured = make_transport(api_config("unix:///configured.sock"));
  CHECK(run([&] { return configured->endpoint(); }) == "unix:///configured.sock");
  ScopedEnv unset("DOCKER_HOST", nullptr);
  DockerConfig c;
  c.transport = DockerTransportKind::Api;
  auto fallback = make_transport(c);
  CHECK(run([&] { return fallback->endpoint(); }) == "unix:///var/run/docker.sock");
}
