// ALLOWLIST egress through the shim on a real engine, with local servers only (wslc.md
// W-31…W-37, T-1's egress, T-5's connect fault; conformance EG and EC). No traffic leaves
// the machine: two busybox httpd servers answer 200 on an `--internal` network of the test's
// own, which plays wslc's `bridge` (the shim's WSLC_SHIM_BRIDGE_NETWORK), so `wslc network
// connect bridge` gives the proxy its outbound leg there. The proxy knows the servers as
// allowed.test and denied.test through --resolve pins baked into a test image built through
// the shim (`wslc build`, C-21) FROM the real proxy image (scripts/egress-proxy-image;
// MAF_SANDBOX_EGRESS_PROXY_IMAGE overrides the tag): wslc runs the proxy image's own
// entrypoint (W-32), so the pins travel in the image, not the argv. A missing proxy image
// fails, it never skips.
#include <maf/sandbox/conformance/conformance.hpp>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/observer.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using namespace wslc_test;

namespace {

/// The names of what LocalServers makes; as a base, its destructor also runs when
/// LocalServers' constructor fails halfway, so nothing is left behind either way.
struct ServerResources {
  std::string suffix = random_hex(4);
  std::string network = "maf-wslc-egress-test-" + suffix;
  std::string allowed = "maf-wslc-egress-test-allowed-" + suffix;
  std::string denied = "maf-wslc-egress-test-denied-" + suffix;
  std::string proxy_image = "maf-sandbox-test/wslc-egress-proxy:" + suffix;
  std::filesystem::path context = std::filesystem::temp_directory_path() / ("maf-wslc-egress-" + suffix);

  ~ServerResources() {
    ::unsetenv("WSLC_SHIM_BRIDGE_NETWORK");
    ::unsetenv("WSLC_SHIM_IGNORE_SYSCTL");
    docker_cli({"rm", "-f", allowed, denied});
    docker_cli({"network", "rm", network});
    docker_cli({"rmi", "-f", proxy_image});
    std::error_code ignored;
    std::filesystem::remove_all(context, ignored);
  }
};

/// The servers' network (the shim's `bridge`), the two local servers and the pinned proxy
/// image; removed when the test ends.
struct LocalServers : ServerResources {
  std::string allowed_ip, denied_ip;

  /// `unsafe_forwarding`: the pinned image also passes --unsafe-allow-forwarding (the EG-3
  /// double of issue 22: a proxy that serves inside a router).
  explicit LocalServers(bool unsafe_forwarding = false) {
    int code = -1;
    docker_cli({"image", "inspect", base_proxy_image()}, &code);
    INFO("the proxy image " << base_proxy_image() << " is missing; run scripts/egress-proxy-image");
    REQUIRE(code == 0);
    docker_cli({"network", "create", "--internal", network}, &code);
    REQUIRE(code == 0);
    ::setenv("WSLC_SHIM_BRIDGE_NETWORK", network.c_str(), 1);
    for (const auto& name : {allowed, denied}) {
      docker_cli({"run", "-d", "--name", name, "--network", network, kImage, "sh", "-c",
                  "mkdir -p /www && echo ok >/www/index.html && exec httpd -f -p 80 -h /www"},
                 &code);
      REQUIRE(code == 0);
    }
    const std::string ip = "{{(index .NetworkSettings.Networks \"" + network + "\").IPAddress}}";
    allowed_ip = docker_cli({"inspect", "-f", ip, allowed});
    denied_ip = docker_cli({"inspect", "-f", ip, denied});
    REQUIRE_FALSE(allowed_ip.empty());
    REQUIRE_FALSE(denied_ip.empty());
    std::filesystem::create_directories(context);
    std::ofstream(context / "Dockerfile")
        << "FROM " << base_proxy_image() << "\n"
        << R"(ENTRYPOINT ["/maf-sandbox-egress-proxy", "--resolve", "allowed.test=)" << allowed_ip
        << R"(", "--resolve", "denied.test=)" << denied_ip << "\""
        << (unsafe_forwarding ? R"(, "--unsafe-allow-forwarding")" : "") << "]\n";
    ::setenv("DOCKER_BUILDKIT", "0", 1);  // the classic builder: no buildx plugin needed
    const std::string built = run_out({MAF_WSLC_SHIM, "build", "-q", "-t", proxy_image, context.string()}, &code);
    INFO(built);
    REQUIRE(code == 0);
  }
  wslc::WslcConfig config() const {
    auto c = shim_config();
    c.egress_proxy_image = proxy_image;
    return c;
  }
};

/// `exec` only where a probe runs; otherwise no capability, so acquire skips the work-base
/// walk and the test stays short.
SandboxSpec allowlist_spec(const std::vector<std::string>& hosts, bool exec = true) {
  SandboxSpec::Fields f;
  f.kind = "egress";
  f.image = kImage;
  f.requires_capabilities = exec ? CapabilitySet{Capability::Exec} : CapabilitySet{};
  f.egress = Egress::Allowlist;
  for (const auto& h : hosts) f.egress_allow.emplace_back(h);
  return SandboxSpec(std::move(f));
}

std::string failed(const std::vector<ProbeResult>& results) {
  std::string out;
  for (const auto& r : results)
    if (!r.passed()) out += r.id + " " + std::string(to_string(r.outcome)) + ": " + r.message + "\n";
  return out;
}

bool exists(const std::vector<std::string>& inspect_args) {
  int code = -1;
  docker_cli(inspect_args, &code);
  return code == 0;
}

}  // namespace

TEST_CASE("W-31 W-32 W-34 EG-1 EG-2 EG-3 EC issue-22: ALLOWLIST through the shim's proxy; direct paths severed; W-36 W-37 teardown") {
  LocalServers servers;
  Engine engine(servers.config());
  REQUIRE(engine.backend->declarations().egress_modes == EgressSet{Egress::Closed, Egress::Allowlist});
  auto sandbox = engine.acquire(allowlist_spec({"allowed.test"}));

  // W-10, W-31: the allowlist is part of the name; the derived network and proxy exist.
  const std::string name = wslc::WslcSandboxBackend::container_name(engine.key(), "egress", kDefaultWorkDir,
                                                                    {"allowed.test"});
  CHECK(name != engine.name("egress"));
  const std::string net = name + "-net";
  CHECK(docker_cli({"network", "inspect", "-f",
                    "{{.Internal}} {{.EnableIPv6}} {{index .Options \"com.docker.network.bridge.inhibit_ipv4\"}}",
                    net}) == "true false true");
  // The shim's inhibit_ipv4: the internal bridge holds no address of this host.
  const std::string bridge = "br-" + docker_cli({"network", "inspect", "-f", "{{.Id}}", net}).substr(0, 12);
  int code = -1;
  const std::string bridge_v4 = run_out({"ip", "-4", "-o", "addr", "show", "dev", bridge}, &code);
  CHECK(code == 0);
  CHECK(bridge_v4.empty());
  CHECK(docker_cli({"inspect", "-f", "{{index .Config.Labels \"maf-sandbox.role\"}}", name + "-proxy"}) == "proxy");
  // Dual-homed: N-net and the network playing `bridge`; the workload on N-net alone.
  const std::string proxy_networks =
      docker_cli({"inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", name + "-proxy"});
  CHECK(proxy_networks.find(net) != std::string::npos);
  CHECK(proxy_networks.find(servers.network) != std::string::npos);
  CHECK(docker_cli({"inspect", "-f", "{{.HostConfig.NetworkMode}}", name}) == net);
  const std::string env = docker_cli({"inspect", "-f", "{{json .Config.Env}}", name});
  CHECK(env.find("\"HTTPS_PROXY=http://" + name + "-proxy:3128\"") != std::string::npos);

  // Issue 22: the proxy runs with forwarding off (the shim passes --sysctl to the engine).
  const std::string sysctls = docker_cli({"inspect", "-f", "{{json .HostConfig.Sysctls}}", name + "-proxy"});
  CHECK(sysctls.find("\"net.ipv4.ip_forward\":\"0\"") != std::string::npos);
  CHECK(sysctls.find("\"net.ipv6.conf.all.forwarding\":\"0\"") != std::string::npos);

  // EG-1 / EG-2 through the proxy, by name; EG-3 raw frames from a guest that keeps NET_RAW
  // (wslc has no --cap-drop, C-23): the proxy's namespace alone must stop them.
  PosixGuestSubject subject(engine.run, sandbox, engine.backend->declarations().capabilities, Egress::Allowlist);
  subject.set_raw_frame_tool(MAF_RAWFRAME_TOOL);
  EgressTargets targets{"http://allowed.test/", "http://denied.test/", std::chrono::seconds(20)};
  auto eg = run_egress(subject, targets);
  INFO(failed(eg));
  CHECK(failed(eg).empty());
  CHECK(std::any_of(eg.begin(), eg.end(), [](const ProbeResult& r) { return r.id == "EG-3" && r.outcome == Outcome::Pass; }));
  // The denied host gets the proxy's own 403, not a failed dial.
  CHECK(subject.fetch_url("http://denied.test/", std::chrono::seconds(10)).http_code == "403");

  // Direct paths: the servers by address (the proxy's outbound leg), the host (EC). EC's
  // probes attack exactly the direct paths an ALLOWLIST workload must not have either, so
  // the subject presents itself as CLOSED only to pass EC's gate.
  const auto direct = engine.sh(*sandbox, "for ip in " + servers.allowed_ip + " " + servers.denied_ip +
                                               "; do (nc -w 2 $ip 80 </dev/null >/dev/null 2>&1; echo $ip rc=$?) & done; "
                                               "wait");
  INFO(direct.stdout_bytes << direct.stderr_bytes);
  CHECK(direct.stdout_bytes.find(servers.allowed_ip + " rc=") != std::string::npos);  // the probe ran
  CHECK(direct.stdout_bytes.find(servers.denied_ip + " rc=") != std::string::npos);
  CHECK(direct.stdout_bytes.find("rc=0") == std::string::npos);
  PosixGuestSubject as_closed(engine.run, sandbox, engine.backend->declarations().capabilities, Egress::Closed);
  auto ec = run_egress_closed(as_closed);
  INFO(failed(ec));
  CHECK(failed(ec).empty());

  CHECK(engine.unsupported_calls() == 0);

  // W-36, W-37: one workload counted; proxy and network go with it, found by label.
  auto purge = engine.run([&] { return engine.backend->dispose_scope(engine.scope, engine.thread); });
  CHECK(purge.disposed == 1);
  CHECK_FALSE(purge.undisposed.has_value());
  CHECK_FALSE(exists({"network", "inspect", net}));
  CHECK_FALSE(exists({"container", "inspect", name + "-proxy"}));
  CHECK_FALSE(exists({"container", "inspect", name}));
}

namespace {
/// The NetworkDecisionEvents an observer set attached to the backend received.
struct DecisionRecorder {
  std::mutex mutex;
  std::vector<NetworkDecisionEvent> seen;
  std::shared_ptr<const ObserverSet> observers = std::make_shared<const ObserverSet>(
      std::vector<std::shared_ptr<SandboxObserver>>{make_observer([this](const SandboxEvent& event) {
        std::lock_guard lock(mutex);
        if (const auto* d = std::get_if<NetworkDecisionEvent>(&event)) seen.push_back(*d);
      })});
  std::vector<NetworkDecisionEvent> taken() {
    std::lock_guard lock(mutex);
    return std::exchange(seen, {});
  }
};
}  // namespace

TEST_CASE("OBS-7 W-32 W-36: the proxy's decisions reach the observers, keyed — at its replacement and at disposal") {
  LocalServers servers;
  Engine engine(servers.config());
  DecisionRecorder recorder;
  engine.backend->attach_observers(recorder.observers);
  const std::string proxy = wslc::WslcSandboxBackend::container_name(engine.key(), "egress", kDefaultWorkDir,
                                                                     {"allowed.test"}) +
                            "-proxy";
  auto check_one = [&](const NetworkDecisionEvent& e, const std::string& decision, const std::string& host) {
    CHECK(e.decision == decision);
    CHECK(e.host == host);
    CHECK(e.port == 80);
    CHECK(e.proxy == proxy);
    CHECK_FALSE(e.truncated);
    CHECK(e.context.backend == "wslc");
    CHECK(e.context.key == engine.key());
  };

  // An allowed request, then a re-acquire: the proxy is replaced (W-32 (2)), and what the old
  // one decided arrives before it is gone for good.
  auto sandbox = engine.acquire(allowlist_spec({"allowed.test"}));
  {
    PosixGuestSubject subject(engine.run, sandbox, engine.backend->declarations().capabilities, Egress::Allowlist);
    const auto allowed = subject.fetch_url("http://allowed.test/", std::chrono::seconds(20));
    INFO(allowed.http_code);
    REQUIRE(allowed.reached());
  }
  CHECK(recorder.taken().empty());  // nothing is read before a teardown
  sandbox = engine.acquire(allowlist_spec({"allowed.test"}));
  auto at_replacement = recorder.taken();
  REQUIRE(at_replacement.size() == 1);
  check_one(at_replacement[0], "ALLOW", "allowed.test");

  // A denied request, then the conversation's disposal: the new proxy's one decision.
  {
    PosixGuestSubject subject(engine.run, sandbox, engine.backend->declarations().capabilities, Egress::Allowlist);
    CHECK(subject.fetch_url("http://denied.test/", std::chrono::seconds(10)).http_code == "403");
  }
  auto purge = engine.run([&] { return engine.backend->dispose_scope(engine.scope, engine.thread); });
  CHECK(purge.disposed == 1);
  CHECK_FALSE(purge.undisposed.has_value());
  CHECK_FALSE(exists({"container", "inspect", proxy}));
  auto at_disposal = recorder.taken();
  REQUIRE(at_disposal.size() == 1);
  check_one(at_disposal[0], "DENY", "denied.test");
  CHECK(engine.unsupported_calls() == 0);  // `container logs --tail` is in the shim's surface
}

namespace {
/// The real proxy image, unpinned: enough where no request is ever proxied.
wslc::WslcConfig plain_proxy_config() {
  auto c = shim_config();
  c.egress_proxy_image = base_proxy_image();
  return c;
}
}  // namespace

TEST_CASE("W-31: with a proxy image, an empty ALLOWLIST is --network none and builds no proxy or network") {
  Engine engine(plain_proxy_config());
  auto sandbox = engine.acquire(allowlist_spec({}, /*exec=*/false));
  const std::string name = engine.name("egress");
  CHECK(docker_cli({"inspect", "-f", "{{.HostConfig.NetworkMode}}", name}) == "none");
  CHECK_FALSE(exists({"container", "inspect", name + "-proxy"}));
  CHECK_FALSE(exists({"network", "inspect", name + "-net"}));
  for (const auto& c : engine.calls()) CHECK(c["argv"][0] != "network");
}

TEST_CASE("W-33/T-5: a failed `network connect bridge` fails the acquire and removes the fresh proxy and network") {
  Engine engine(plain_proxy_config());
  ::setenv("WSLC_SHIM_FAULTS", "network-connect=E_FAIL", 1);
  CHECK_THROWS_WITH(engine.acquire(allowlist_spec({"allowed.test"}, /*exec=*/false)),
                    Catch::Contains("network connect bridge"));
  ::unsetenv("WSLC_SHIM_FAULTS");
  const std::string name = wslc::WslcSandboxBackend::container_name(engine.key(), "egress", kDefaultWorkDir,
                                                                    {"allowed.test"});
  CHECK_FALSE(exists({"container", "inspect", name}));
  CHECK_FALSE(exists({"container", "inspect", name + "-proxy"}));
  CHECK_FALSE(exists({"network", "inspect", name + "-net"}));
  CHECK(engine.unsupported_calls() == 0);
}

TEST_CASE("issue-22 W-33: through a wslc that drops --sysctl, the proxy refuses to start, in its own words") {
  LocalServers servers;
  ::setenv("WSLC_SHIM_IGNORE_SYSCTL", "1", 1);
  Engine engine(servers.config());
  CHECK_THROWS_WITH(engine.acquire(allowlist_spec({"allowed.test"})),
                    Catch::Contains("refused to start") && Catch::Contains("net.ipv4.ip_forward=1"));
}

TEST_CASE("issue-22 EG-3: the probe fails against a proxy that serves inside a router") {
  // The failing double: the shim drops the --sysctl set and the proxy is told to serve anyway.
  LocalServers servers(/*unsafe_forwarding=*/true);
  ::setenv("WSLC_SHIM_IGNORE_SYSCTL", "1", 1);
  Engine engine(servers.config());
  auto sandbox = engine.acquire(allowlist_spec({"allowed.test"}));
  PosixGuestSubject subject(engine.run, sandbox, engine.backend->declarations().capabilities, Egress::Allowlist);
  subject.set_raw_frame_tool(MAF_RAWFRAME_TOOL);
  EgressTargets targets{"http://allowed.test/", "http://denied.test/", std::chrono::seconds(20)};
  auto eg = run_egress(subject, targets);
  INFO(failed(eg));
  auto eg3 = std::find_if(eg.begin(), eg.end(), [](const ProbeResult& r) { return r.id == "EG-3"; });
  REQUIRE(eg3 != eg.end());
  CHECK(eg3->outcome == Outcome::Fail);
  CHECK_THAT(eg3->message, Catch::Contains("received a datagram"));
}
