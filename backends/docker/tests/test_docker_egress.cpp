// ALLOWLIST egress on a real engine, on both transports, with local servers only (D-4,
// D-8, D-27, D-31, D-32, C-55; DX-12 adapted: no traffic leaves the machine). Two busybox
// httpd servers answer 200 on an `--internal` network that the proxy uses as its outbound
// network; the proxy knows them as allowed.test and denied.test through --resolve pins.
// Needs the proxy image (scripts/egress-proxy-image; MAF_SANDBOX_EGRESS_PROXY_IMAGE
// overrides the tag); a missing image fails, it never skips.
#include <maf/sandbox/conformance/conformance.hpp>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine_fixture.hpp"
#include "key_attribution.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/labels.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace docker_test;

namespace {

std::string proxy_image() {
  const char* env = std::getenv("MAF_SANDBOX_EGRESS_PROXY_IMAGE");
  return env && *env ? env : "maf-sandbox-egress-proxy:local";
}

/// The two local servers and their network; removed when the test ends.
struct LocalServers {
  std::string suffix = random_hex(4);
  std::string network = "maf-egress-test-" + suffix;
  std::string allowed = "maf-egress-test-allowed-" + suffix;
  std::string denied = "maf-egress-test-denied-" + suffix;
  std::string allowed_ip, denied_ip;

  LocalServers() {
    int code = -1;
    docker_cli({"network", "create", "--internal", network}, &code);
    REQUIRE(code == 0);
    for (const auto& name : {allowed, denied}) {
      docker_cli({"run", "-d", "--name", name, "--network", network, kImage, "sh", "-c",
                  "mkdir -p /www && echo ok >/www/index.html && exec httpd -f -p 80 -h /www"},
                 &code);
      REQUIRE(code == 0);
    }
    allowed_ip = ip_of(allowed);
    denied_ip = ip_of(denied);
  }
  ~LocalServers() {
    docker_cli({"rm", "-f", allowed, denied});
    docker_cli({"network", "rm", network});
  }
  std::string ip_of(const std::string& container) const {
    const auto ip = docker_cli({"inspect", "-f", "{{(index .NetworkSettings.Networks \"" + network + "\").IPAddress}}",
                                container});
    REQUIRE_FALSE(ip.empty());
    return ip;
  }
  docker::DockerConfig config() const {
    auto c = test_config();
    c.egress_proxy_image = proxy_image();
    c.outbound_network = network;
    c.egress_proxy_args = {"--resolve", "allowed.test=" + allowed_ip, "--resolve", "denied.test=" + denied_ip};
    c.egress_inhibit_ipv4_fallback = true;  // D-32: this engine may predate 28
    return c;
  }
};

SandboxSpec allowlist_spec(const std::vector<std::string>& hosts) {
  SandboxSpec::Fields f;
  f.kind = "egress";
  f.image = kImage;
  f.requires_capabilities = CapabilitySet{Capability::Exec};
  f.egress = Egress::Allowlist;
  for (const auto& h : hosts) f.egress_allow.emplace_back(h);
  return SandboxSpec(std::move(f));
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::vector<std::string> failed(const std::vector<ProbeResult>& results) {
  std::vector<std::string> out;
  for (const auto& r : results)
    if (!r.passed()) out.push_back(r.id + " " + std::string(to_string(r.outcome)) + ": " + r.message);
  return out;
}

}  // namespace

TEST_CASE("D-31 D-5 D-27 D-8: ALLOWLIST through the proxy — EG passes, direct paths stay severed, teardown by "
          "label publishes the proxy's decisions") {
  // Runs on both transports: each builds the same topology (MAF_DOCKER_TRANSPORT).
  LocalServers servers;
  auto config = servers.config();
  std::vector<docker::EgressEvent> events;  // outlives the scope, whose teardown may publish
  // The JSON-configured form too: the same events as lines of a file (egress_event_log).
  char log_dir[] = "/tmp/maf-egress-events-XXXXXX";
  REQUIRE(::mkdtemp(log_dir) != nullptr);
  const std::string log_path = std::string(log_dir) + "/events.jsonl";
  auto event_log = docker::parse_docker_config({{"egress_event_log", log_path}}).egress_observer;
  config.egress_observer = [&events, event_log](const docker::EgressEvent& e) {
    events.push_back(e);
    event_log(e);
  };
  Scope scope(config);
  REQUIRE(scope.backend->declarations().egress_modes == EgressSet{Egress::Closed, Egress::Allowlist});
  auto sandbox = scope.acquire(allowlist_spec({"allowed.test"}));

  // C-55: the allowlist is part of the name; the derived network and proxy exist.
  const std::string closed_name = docker::DockerSandboxBackend::container_name(scope.key(), "egress");
  support::NameQualifiers q;
  q.egress_allow = {"allowed.test"};
  const std::string name = support::sandbox_name(docker::kContainerPrefix, scope.key(), "egress", q);
  CHECK(name != closed_name);
  CHECK(docker_cli({"network", "inspect", "-f", "{{.Internal}} {{.EnableIPv6}}", name + "-net"}) == "true false");
  CHECK(docker_cli({"inspect", "-f", "{{index .Config.Labels \"maf-sandbox.role\"}}", name + "-proxy"}) == "proxy");
  CHECK(docker_cli({"inspect", "-f", "{{.HostConfig.NetworkMode}}", name}) == name + "-net");
  // D-8: the proxy carries the lossless attribution of this key.
  CHECK(docker_cli({"inspect", "-f", "{{index .Config.Labels \"maf-sandbox.key.v1\"}}", name + "-proxy"}) ==
        docker::detail::encode_key_v1(scope.key()));

  // EG-1 / EG-2 through the proxy, by name.
  PosixGuestSubject subject(scope.run, sandbox, scope.backend->declarations().capabilities, Egress::Allowlist);
  EgressTargets targets{"http://allowed.test/", "http://denied.test/", std::chrono::seconds(20)};
  auto eg = run_egress(subject, targets);
  INFO(join_lines(failed(eg)));
  CHECK(failed(eg).empty());

  // The proxy's answer to the denied host is its own 403, not a failed dial.
  auto denied = subject.fetch_url("http://denied.test/", std::chrono::seconds(10));
  CHECK(denied.http_code == "403");

  // Direct paths: the servers by address, the proxy's outbound leg, the host. EC's probes
  // attack exactly the direct paths an ALLOWLIST workload must not have either, so the
  // subject presents itself as CLOSED only to pass EC's gate.
  for (const auto& ip : {servers.allowed_ip, servers.denied_ip}) {
    auto direct = scope.sh(*sandbox, "nc -w 3 " + ip + " 80 </dev/null; echo rc=$?");
    INFO(ip << ": " << direct.stdout_bytes << direct.stderr_bytes);
    CHECK(direct.stdout_bytes.find("rc=0") == std::string::npos);
  }
  PosixGuestSubject as_closed(scope.run, sandbox, scope.backend->declarations().capabilities, Egress::Closed);
  auto ec = run_egress_closed(as_closed);
  INFO(join_lines(failed(ec)));
  CHECK(failed(ec).empty());

  // Teardown by label: one workload counted; proxy and network go with it.
  REQUIRE(events.empty());  // nothing is published before the proxy is removed
  auto purge = scope.run([&] { return scope.backend->dispose_scope(scope.scope, scope.thread); });
  CHECK(purge.disposed == 1);
  CHECK_FALSE(purge.undisposed.has_value());

  // D-27: the drained proxy's decisions, attributed by its key.v1 label (dispose_scope has
  // no key of its own to offer).
  REQUIRE(events.size() == 1);
  CHECK(events[0].key == scope.key());
  CHECK(events[0].proxy == name + "-proxy");
  CHECK_FALSE(events[0].truncated);
  const auto saw = [&](const std::string& decision, const std::string& host) {
    return std::any_of(events[0].decisions.begin(), events[0].decisions.end(),
                       [&](const docker::EgressDecision& d) { return d.decision == decision && d.host == host; });
  };
  CHECK(saw("ALLOW", "allowed.test"));
  CHECK(saw("DENY", "denied.test"));
  CHECK_FALSE(saw("ALLOW", "denied.test"));
  {
    std::ifstream in(log_path);
    std::string line;
    REQUIRE(std::getline(in, line));
    const auto logged = nlohmann::json::parse(line);
    CHECK(logged["proxy"] == name + "-proxy");
    CHECK(logged["key"]["thread_id"] == scope.key().thread_id);
    CHECK(logged["decisions"].size() == events[0].decisions.size());
    CHECK_FALSE(std::getline(in, line));  // one event, one line
  }
  std::filesystem::remove_all(log_dir);
  int code = -1;
  docker_cli({"network", "inspect", name + "-net"}, &code);
  CHECK(code != 0);
  docker_cli({"container", "inspect", name + "-proxy"}, &code);
  CHECK(code != 0);
}

TEST_CASE("D-4: with a proxy configured, CLOSED and an empty ALLOWLIST still get --network none") {
  LocalServers servers;
  Scope scope(servers.config());
  auto sandbox = scope.acquire(allowlist_spec({}));
  const std::string name = docker::DockerSandboxBackend::container_name(scope.key(), "egress");
  CHECK(docker_cli({"inspect", "-f", "{{.HostConfig.NetworkMode}}", name}) == "none");
  int code = -1;
  docker_cli({"container", "inspect", name + "-proxy"}, &code);
  CHECK(code != 0);
  PosixGuestSubject subject(scope.run, sandbox, scope.backend->declarations().capabilities, Egress::Closed);
  auto ec = run_egress_closed(subject);
  INFO(join_lines(failed(ec)));
  CHECK(failed(ec).empty());
}
