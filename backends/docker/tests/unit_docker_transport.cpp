// Offline tests of transport selection and the Engine-API transport's endpoint binding
// (issue 9; D-29): what is refused is refused when the backend is made,
// by name, before any engine call.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "maf/sandbox/docker/api_transport.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/docker/transport_choice.hpp"
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

TEST_CASE("docker.md §2 (issues 9, 24): the transport key is auto (the default), cli or api; docker_host is "
          "read by api and auto") {
  CHECK(parse_docker_config(nlohmann::json::object()).transport == DockerTransportKind::Auto);
  CHECK(parse_docker_config({{"transport", "auto"}}).transport == DockerTransportKind::Auto);
  CHECK(parse_docker_config({{"transport", "api"}}).transport == DockerTransportKind::Api);
  CHECK(parse_docker_config({{"transport", "cli"}}).transport == DockerTransportKind::Cli);
  CHECK_THROWS_WITH(parse_docker_config({{"transport", "http"}}), Catch::Contains("transport") && Catch::Contains("http"));
  CHECK_THROWS_AS(parse_docker_config({{"transport", 1}}), ValueError);
  CHECK(parse_docker_config({{"transport", "api"}, {"docker_host", "unix:///run/d.sock"}}).docker_host ==
        "unix:///run/d.sock");
  CHECK(parse_docker_config({{"docker_host", "unix:///run/d.sock"}}).docker_host == "unix:///run/d.sock");
  CHECK_THROWS_WITH(parse_docker_config({{"transport", "cli"}, {"docker_host", "unix:///run/d.sock"}}),
                    Catch::Contains("docker_host"));
  CHECK_THROWS_AS(parse_docker_config({{"transport", "api"}, {"docker_host", ""}}), ValueError);
}

namespace {
/// A unix socket listening for the length of a test: an endpoint this process can open.
struct ListeningSocket {
  std::string path = "/tmp/maf-docker-choice-" + std::to_string(::getpid()) + ".sock";
  int fd = -1;
  ListeningSocket() {
    ::unlink(path.c_str());
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 4) == 0);
  }
  ~ListeningSocket() {
    ::close(fd);
    ::unlink(path.c_str());
  }
};
}  // namespace

TEST_CASE("issue 24: auto binds the Engine API on a local socket this process can open, the CLI otherwise") {
  const ListeningSocket local;
  const ScopedEnv no_context("DOCKER_CONTEXT", nullptr);
  const ScopedEnv no_config("DOCKER_CONFIG", "/nonexistent-maf-docker-config");
  DockerConfig c;  // auto
  SECTION("named transports resolve to themselves") {
    c.transport = DockerTransportKind::Cli;
    CHECK(choose_transport(c).kind == DockerTransportKind::Cli);
    c.transport = DockerTransportKind::Api;
    CHECK(choose_transport(c).kind == DockerTransportKind::Api);
  }
  SECTION("DOCKER_HOST a unix socket that accepts: the API") {
    const ScopedEnv host("DOCKER_HOST", ("unix://" + local.path).c_str());
    const auto choice = choose_transport(c);
    CHECK(choice.kind == DockerTransportKind::Api);
    CHECK_THAT(choice.reason, Catch::Contains(local.path));
  }
  SECTION("DOCKER_HOST a unix socket nobody listens on, or tcp: the CLI") {
    const ScopedEnv host("DOCKER_HOST", "unix:///nonexistent-maf/docker.sock");
    CHECK(choose_transport(c).kind == DockerTransportKind::Cli);
    const ScopedEnv tcp("DOCKER_HOST", "tcp://engine.example:2375");
    CHECK(choose_transport(c).kind == DockerTransportKind::Cli);
  }
  SECTION("a docker_path that is not docker's client: the CLI, even on an open socket") {
    const ScopedEnv host("DOCKER_HOST", ("unix://" + local.path).c_str());
    c.docker_path = "/opt/other/engine-client";
    const auto choice = choose_transport(c);
    CHECK(choice.kind == DockerTransportKind::Cli);
    CHECK_THAT(choice.reason, Catch::Contains("/opt/other/engine-client"));
  }
  SECTION("a configured docker_host: the API, the only transport that reads it") {
    c.docker_host = "unix://" + local.path;
    CHECK(choose_transport(c).kind == DockerTransportKind::Api);
  }
  SECTION("a named context (DOCKER_CONTEXT or the client's config.json): the CLI, which resolves it") {
    const ScopedEnv no_host("DOCKER_HOST", nullptr);
    {
      const ScopedEnv context("DOCKER_CONTEXT", "remote-box");
      CHECK_THAT(choose_transport(c).reason, Catch::Contains("remote-box"));
      CHECK(choose_transport(c).kind == DockerTransportKind::Cli);
    }
    const std::string dir = "/tmp/maf-docker-config-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/config.json") << R"({"currentContext": "ssh-box"})";
    const ScopedEnv config("DOCKER_CONFIG", dir.c_str());
    CHECK(choose_transport(c).kind == DockerTransportKind::Cli);
    CHECK_THAT(choose_transport(c).reason, Catch::Contains("ssh-box"));
    std::filesystem::remove_all(dir);
  }
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
