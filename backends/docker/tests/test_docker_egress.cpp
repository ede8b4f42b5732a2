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
#include "forwarding_transport.hpp"
#include "key_attribution.hpp"
#include "maf/sandbox/docker/api_transport.hpp"
#include "maf/sandbox/docker/cli_transport.hpp"
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

const ProbeResult& result_of(const std::vector<ProbeResult>& results, const std::string& id) {
  auto it = std::find_if(results.begin(), results.end(), [&](const ProbeResult& r) { return r.id == id; });
  REQUIRE(it != results.end());
  return *it;
}

/// The real transport this test's configuration names.
std::shared_ptr<docker::DockerTransport> real_transport(const docker::DockerConfig& config) {
  return config.transport == docker::DockerTransportKind::Api ? docker::make_api_transport(config)
                                                              : docker::make_cli_transport(config);
}

/// The test-only switches of issue 22 over the real transport: the proxy created as a router
/// (forwarding on, no reverse-path filter) and/or told to serve anyway
/// (--unsafe-allow-forwarding), and/or the workload keeping NET_RAW.
struct Weakening {
  bool proxy_routes = false;
  bool tell_proxy_to_serve = false;
  bool workload_keeps_net_raw = false;
};

/// The real transport with a Weakening applied to what it creates. Every other operation is
/// forwarded unchanged, exec_stream included (the base class's default refuses, and the
/// backend declares exec_stream whatever its transport) — except the create split:
/// creates_unstarted() keeps the base's false, so every create comes through
/// create_and_start, where the weakening is applied.
class RouterProxyTransport : public ForwardingTransport {
public:
  RouterProxyTransport(std::shared_ptr<docker::DockerTransport> real, Weakening weakening)
      : ForwardingTransport(std::move(real)), w_(weakening) {}

  Aw<docker::CreateResult> create_and_start(docker::CreateRequest q) override {
    const bool proxy = std::any_of(q.labels.begin(), q.labels.end(),
                                   [](const auto& l) { return l.first == "maf-sandbox.role" && l.second == "proxy"; });
    if (proxy && w_.proxy_routes)
      q.sysctls = {{"net.ipv4.ip_forward", "1"},
                   {"net.ipv4.conf.all.rp_filter", "0"},
                   {"net.ipv4.conf.default.rp_filter", "0"}};
    if (proxy && w_.tell_proxy_to_serve) q.command.push_back("--unsafe-allow-forwarding");
    if (!proxy && w_.workload_keeps_net_raw) q.cap_drop.clear();
    co_return co_await real_->create_and_start(std::move(q));
  }

private:
  Weakening w_;
};

/// EG-1…EG-3 from a fresh ALLOWLIST sandbox of `scope`, the raw-frame tool planted.
std::vector<ProbeResult> run_eg(Scope& scope) {
  auto sandbox = scope.acquire(allowlist_spec({"allowed.test"}));
  PosixGuestSubject subject(scope.run, sandbox, scope.backend->declarations().capabilities, Egress::Allowlist);
  subject.set_raw_frame_tool(MAF_RAWFRAME_TOOL);
  return run_egress(subject, EgressTargets{"http://allowed.test/", "http://denied.test/", std::chrono::seconds(20)});
}

}  // namespace

TEST_CASE("D-31 D-5 D-27 D-8 EG-1 EG-2 EG-3 issue-22: ALLOWLIST through the proxy — EG passes, direct paths stay severed, teardown by "
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

  // Issue 22: the proxy is no router, and the workload cannot write raw frames.
  const auto sysctls = nlohmann::json::parse(docker_cli({"inspect", "-f", "{{json .HostConfig.Sysctls}}", name + "-proxy"}));
  CHECK(sysctls.value("net.ipv4.ip_forward", "") == "0");
  CHECK(sysctls.value("net.ipv6.conf.all.forwarding", "") == "0");
  CHECK(sysctls.value("net.ipv4.conf.all.rp_filter", "") == "1");
  CHECK(docker_cli({"inspect", "-f", "{{json .HostConfig.CapDrop}}", name}).find("NET_RAW") != std::string::npos);

  // EG-1 / EG-2 through the proxy, by name; EG-3 (raw frames below HTTP) from the guest.
  PosixGuestSubject subject(scope.run, sandbox, scope.backend->declarations().capabilities, Egress::Allowlist);
  subject.set_raw_frame_tool(MAF_RAWFRAME_TOOL);
  EgressTargets targets{"http://allowed.test/", "http://denied.test/", std::chrono::seconds(20)};
  auto eg = run_egress(subject, targets);
  INFO(join_lines(failed(eg)));
  CHECK(failed(eg).empty());
  CHECK(result_of(eg, "EG-3").outcome == Outcome::Pass);  // run, not skipped

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

TEST_CASE("D-4: with a proxy configured, CLOSED and an empty ALLOWLIST still get --network none", "[once]") {
  // [once]: building no topology is decided above the transport seam (egress_topology.cpp);
  // `none` reaching the container is test_docker_lifecycle's D-4, per transport (docker.md,
  // "Engine tests per transport").
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

TEST_CASE("issue-22 EG-3: the probe fails against a proxy that forwards and a workload that keeps NET_RAW", "[once]") {
  // [once]: a double of the probe, not of a transport — whether EG-3 can fail does not
  // depend on which transport created the forwarding proxy (docker.md, "Engine tests per transport").
  // The failing double: the same backend and topology with both layers removed. If the probe
  // could not see a routed raw frame, it would pass here too and prove nothing elsewhere.
  LocalServers servers;
  auto config = servers.config();
  Scope scope(config, std::make_shared<RouterProxyTransport>(real_transport(config), Weakening{true, true, true}));
  const auto eg = run_eg(scope);
  INFO(join_lines(failed(eg)));
  CHECK(result_of(eg, "EG-1").outcome == Outcome::Pass);  // HTTP through the proxy still works
  CHECK(result_of(eg, "EG-2").outcome == Outcome::Pass);  // and the allowlist still holds at HTTP
  CHECK(result_of(eg, "EG-3").outcome == Outcome::Fail);
  CHECK_THAT(result_of(eg, "EG-3").message, Catch::Contains("received a datagram"));
}

TEST_CASE("issue-22 EG-3: the proxy's namespace alone stops raw frames from a workload that keeps NET_RAW",
          "[once]") {
  // [once]: with the sysctls in place the kernel stops the frames; the sysctls reaching the
  // proxy, and EG-3 with both layers, are the main case's, per transport (docker.md,
  // "Engine tests per transport").
  LocalServers servers;
  auto config = servers.config();
  Scope scope(config, std::make_shared<RouterProxyTransport>(real_transport(config), Weakening{false, false, true}));
  auto sandbox = scope.acquire(allowlist_spec({"allowed.test"}));
  PosixGuestSubject subject(scope.run, sandbox, scope.backend->declarations().capabilities, Egress::Allowlist);
  subject.set_raw_frame_tool(MAF_RAWFRAME_TOOL);
  const auto eg = run_egress(subject, EgressTargets{"http://allowed.test/", "http://denied.test/", std::chrono::seconds(20)});
  INFO(join_lines(failed(eg)));
  CHECK(failed(eg).empty());
  CHECK(result_of(eg, "EG-3").outcome == Outcome::Pass);
  // The premise: this guest really writes frames (it kept NET_RAW and knows the proxy).
  const auto sent = subject.send_raw_frames(servers.allowed_ip, 9, "192.0.2.254", "premise", std::chrono::seconds(20));
  INFO(sent.detail);
  CHECK(sent.result == RawFrameAttempt::Result::Sent);
  // The double forwards exec_stream too (the base class's default would refuse it).
  std::string streamed;
  const auto ended = scope.run([&] {
    return sandbox->exec_stream(Command("echo hi"), [&](OutputStream, std::string_view bytes) { streamed.append(bytes); });
  });
  CHECK(ended.exit_code == 0);
  CHECK(streamed == "hi\n");
}

TEST_CASE("issue-22: a proxy that refuses to start is reported in its own words, at once") {
  // The proxy as an engine that ignored the --sysctl set would run it: forwarding on, and no
  // --unsafe-allow-forwarding. Its own check refuses; acquire says so, not "never listened".
  LocalServers servers;
  auto config = servers.config();
  Scope scope(config, std::make_shared<RouterProxyTransport>(real_transport(config), Weakening{true, false, false}));
  CHECK_THROWS_WITH(scope.acquire(allowlist_spec({"allowed.test"})),
                    Catch::Contains("exited") && Catch::Contains("refusing to start") &&
                        Catch::Contains("net.ipv4.ip_forward=1"));
}

TEST_CASE("issue-22: a wildcard allow entry is served, one label deep, never the base or deeper names", "[once]") {
  // [once]: the matching is the proxy's; the entry reaches it as the main case shows per
  // transport (docker.md, "Engine tests per transport").
  LocalServers servers;
  auto config = servers.config();
  for (const char* name : {"api.allowed.test", "a.b.allowed.test"})
    config.egress_proxy_args.insert(config.egress_proxy_args.end(),
                                    {"--resolve", std::string(name) + "=" + servers.allowed_ip});
  Scope scope(config);
  auto sandbox = scope.acquire(allowlist_spec({"*.allowed.test"}));  // refused at start-up before issue 22
  PosixGuestSubject subject(scope.run, sandbox, scope.backend->declarations().capabilities, Egress::Allowlist);
  CHECK(subject.fetch_url("http://api.allowed.test/", std::chrono::seconds(10)).http_code == "200");
  CHECK(subject.fetch_url("http://a.b.allowed.test/", std::chrono::seconds(10)).http_code == "403");
  CHECK(subject.fetch_url("http://allowed.test/", std::chrono::seconds(10)).http_code == "403");
  CHECK(subject.fetch_url("http://denied.test/", std::chrono::seconds(10)).http_code == "403");
}
