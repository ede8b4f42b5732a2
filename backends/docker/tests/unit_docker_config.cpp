// Offline tests of the Docker backend (no engine): configuration and declarations.
#include <stdlib.h>

#include <filesystem>
#include <fstream>

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

TEST_CASE("C-10 issue-45: method/path rules are declared from the configuration only with a proxy image that "
          "says it terminates; the new keys parse and refuse by name") {
  auto c = parse_docker_config({{"egress_proxy_image", "p:1"},
                                {"egress_proxy_terminates", true},
                                {"egress_upstream_ca_file", "/etc/ca.pem"}});
  CHECK(c.egress_proxy_terminates);
  CHECK(c.egress_upstream_ca_file == std::optional<std::string>("/etc/ca.pem"));
  const auto caps = DockerSandboxBackend(c).declarations().capabilities;
  CHECK(caps.contains(Capability::EgressMethods));
  CHECK(caps.contains(Capability::EgressPaths));
  // No proxy image: no ALLOWLIST, so no rules either, whatever the flag says.
  const auto bare = DockerSandboxBackend(parse_docker_config({{"egress_proxy_terminates", true}})).declarations();
  CHECK_FALSE(bare.capabilities.contains(Capability::EgressPaths));
  CHECK_FALSE(DockerSandboxBackend(parse_docker_config({{"egress_proxy_image", "p:1"}}))
                  .declarations()
                  .capabilities.contains(Capability::EgressMethods));
  CHECK_THROWS_WITH(parse_docker_config({{"egress_proxy_terminates", "yes"}}), Catch::Contains("egress_proxy_terminates"));
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

namespace {

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("D-27: egress_event_log appends one JSON line per event; an unwritable path is refused by name at parse") {
  char tmpl[] = "/tmp/maf-egress-log-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/events.jsonl";

  CHECK_FALSE(parse_docker_config(nlohmann::json::object()).egress_observer);
  auto c = parse_docker_config({{"egress_event_log", path}});
  REQUIRE(c.egress_observer);
  CHECK(std::filesystem::exists(path));  // opened at parse, before any event

  EgressEvent attributed;
  attributed.key = SandboxKey{"s", "t", "a", ""};
  attributed.proxy = "maf-sandbox-docker-0123456789ab-proxy";
  attributed.decisions = {{"ALLOW", "allowed.test", 80}, {"DENY", "denied.test", 443}};
  EgressEvent anonymous;
  anonymous.proxy = "p2";
  anonymous.decisions = {{"DENY", std::string("bad\xff\"host"), 1}};  // guest-influenced bytes
  anonymous.truncated = true;
  auto copy = c.egress_observer;  // copies share the one descriptor
  c.egress_observer(attributed);
  copy(anonymous);

  const auto lines = json_lines(path);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["proxy"] == attributed.proxy);
  CHECK(lines[0]["key"]["scope"] == "s");
  CHECK(lines[0]["key"]["call_id"] == "");
  CHECK(lines[0]["decisions"].size() == 2);
  CHECK(lines[0]["decisions"][1]["decision"] == "DENY");
  CHECK(lines[0]["decisions"][1]["port"] == 443);
  CHECK(lines[0]["truncated"] == false);
  CHECK(lines[1]["key"].is_null());
  CHECK(lines[1]["truncated"] == true);
  CHECK(lines[1]["decisions"][0]["host"].get<std::string>().find("\"host") != std::string::npos);

  // Appends, never truncates: a second parse of the same path keeps the earlier lines.
  parse_docker_config({{"egress_event_log", path}}).egress_observer(attributed);
  CHECK(json_lines(path).size() == 3);

  CHECK_THROWS_AS(parse_docker_config({{"egress_event_log", dir + "/missing/events.jsonl"}}), ValueError);
  CHECK_THROWS_WITH(parse_docker_config({{"egress_event_log", dir + "/missing/events.jsonl"}}),
                    Catch::Contains(dir + "/missing/events.jsonl") && Catch::Contains("egress_event_log"));
  CHECK_THROWS_WITH(parse_docker_config({{"egress_event_log", dir}}), Catch::Contains(dir));  // a directory
  CHECK_THROWS_AS(parse_docker_config({{"egress_event_log", ""}}), ValueError);
  CHECK_THROWS_AS(parse_docker_config({{"egress_event_log", 7}}), ValueError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("issue 49: snapshots, snapshot_budget_bytes and snapshot_ttl_seconds parse; bad values are refused by name") {
  const auto plain = parse_docker_config(nlohmann::json::object());
  CHECK_FALSE(plain.snapshots);
  CHECK(plain.snapshot_budget_bytes == (std::uint64_t{1} << 30));
  CHECK(plain.snapshot_ttl == std::chrono::hours(24));
  const auto c = parse_docker_config({{"snapshots", true}, {"snapshot_budget_bytes", 1048576}, {"snapshot_ttl_seconds", 60}});
  CHECK(c.snapshots);
  CHECK(c.snapshot_budget_bytes == 1048576);
  CHECK(c.snapshot_ttl == std::chrono::seconds(60));
  CHECK_THROWS_WITH(parse_docker_config({{"snapshots", "yes"}}), Catch::Contains("snapshots") && Catch::Contains("\"yes\""));
  CHECK_THROWS_WITH(parse_docker_config({{"snapshot_budget_bytes", 0}}), Catch::Contains("snapshot_budget_bytes"));
  CHECK_THROWS_WITH(parse_docker_config({{"snapshot_ttl_seconds", -5}}), Catch::Contains("snapshot_ttl_seconds") &&
                                                                           Catch::Contains("-5"));
}
