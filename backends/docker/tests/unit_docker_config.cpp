// Offline tests of the Docker backend (no engine): configuration and declarations.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::docker;

TEST_CASE("docker.md §2: the config refuses unknown keys and bad values by name") {
  CHECK(parse_docker_config(nlohmann::json::object()).docker_path == "docker");
  CHECK(parse_docker_config(nullptr).pids_limit == 512);
  CHECK_THROWS_WITH(parse_docker_config({{"dockr_path", "x"}}), Catch::Contains("dockr_path"));
  CHECK_THROWS_AS(parse_docker_config({{"pids_limit", 0}}), ValueError);
  CHECK_THROWS_WITH(parse_docker_config({{"command_timeout_seconds", -1}}), Catch::Contains("command_timeout_seconds"));
  CHECK_THROWS_AS(parse_docker_config({{"cap_drop_all", "yes"}}), ValueError);
  auto c = parse_docker_config({{"docker_path", "/usr/bin/docker"}, {"memory", "512m"}, {"cpus", 2}, {"cap_drop_all", true},
                                {"command_timeout_seconds", 1.5}});
  CHECK(c.docker_path == "/usr/bin/docker");
  CHECK(c.memory == "512m");
  CHECK(c.cap_drop_all);
  CHECK(c.command_timeout() == std::chrono::milliseconds(1500));
}

TEST_CASE("D-3: --cpus is formatted like Python's str(float)") {
  DockerConfig c;
  CHECK_FALSE(c.cpus_argument().has_value());
  c.cpus = 1;
  CHECK(c.cpus_argument() == "1.0");
  c.cpus = 0.5;
  CHECK(c.cpus_argument() == "0.5");
  c.cpus = 2.25;
  CHECK(c.cpus_argument() == "2.25");
}

TEST_CASE("D-5: an empty egress_proxy_image is unset; a named one enables ALLOWLIST on either transport") {
  CHECK_FALSE(parse_docker_config({{"egress_proxy_image", ""}}).egress_proxy_image);
  auto c = parse_docker_config({{"egress_proxy_image", "maf-sandbox-egress-proxy:local"},
                                {"egress_proxy_args", {"--resolve", "allowed.test=172.30.0.2"}},
                                {"egress_inhibit_ipv4_fallback", true}});
  CHECK(c.egress_proxy_image == "maf-sandbox-egress-proxy:local");
  CHECK(c.egress_proxy_args == std::vector<std::string>{"--resolve", "allowed.test=172.30.0.2"});
  CHECK(c.egress_inhibit_ipv4_fallback);
  CHECK(DockerSandboxBackend(c).declarations().egress_modes == EgressSet{Egress::Closed, Egress::Allowlist});
  CHECK(DockerSandboxBackend(DockerConfig{}).declarations().egress_modes == EgressSet{Egress::Closed});
  // Both transports carry the egress plane: the Engine-API one declares ALLOWLIST too.
  auto api = parse_docker_config({{"egress_proxy_image", "p:1"}, {"transport", "api"}});
  CHECK(DockerSandboxBackend(api).declarations().egress_modes == EgressSet{Egress::Closed, Egress::Allowlist});
  CHECK_THROWS_WITH(parse_docker_config({{"egress_proxy_args", "--resolve"}}), Catch::Contains("egress_proxy_args"));
}

TEST_CASE("D-5 §10: the plain constructor declares constants and no os family, with no engine call") {
  DockerConfig c;
  c.docker_path = "/nonexistent/docker";  // never run: the constructor makes no call
  DockerSandboxBackend backend(c);
  CHECK(backend.name() == "docker");
  CHECK(backend.isolation() == "container");
  const auto& d = backend.declarations();
  CHECK(d.egress_modes == EgressSet{Egress::Closed});
  CHECK(d.capabilities.contains(Capability::HostTools));
  CHECK_FALSE(d.capabilities.contains(Capability::FilesList));
  CHECK_FALSE(d.capabilities.contains(Capability::RunCode));
  CHECK(d.os_families.empty());
  CHECK(d.limits.files_in.max_bytes_per_file() == 64 * 1024 * 1024);
  CHECK(d.limits.files_out.max_files() == 256);
  CHECK(backend.supports_reap());
}

TEST_CASE("D-7: names are derived from every key field and the kind") {
  SandboxKey conversation{"s", "t", "a", ""};
  SandboxKey call{"s", "t", "a", "c1"};
  const auto n = DockerSandboxBackend::container_name(conversation, "k");
  CHECK(n.rfind(kContainerPrefix, 0) == 0);
  CHECK(n.size() == std::string(kContainerPrefix).size() + 12);
  CHECK(n != DockerSandboxBackend::container_name(call, "k"));
  CHECK(n != DockerSandboxBackend::container_name(conversation, "k2"));
  CHECK(DockerSandboxBackend::container_name({"a|b", "c", "", ""}, "k") !=
        DockerSandboxBackend::container_name({"a", "b|c", "", ""}, "k"));
}
