// Method and path rules on wslc through the shim, on a real engine (issue 45; W-44, C-9, C-10):
// the proxy terminates TLS for a host with a rule, the backend reads the per-sandbox CA from
// its readiness line and puts it in the guest; real clients in the guest (curl, Python, Node,
// git) reach what the rule allows and read a 403 for the rest, and EGRESS_L7 passes. The
// upstream is an HTTPS server the test starts on an `--internal` network of its own, which
// plays wslc's `bridge` (WSLC_SHIM_BRIDGE_NETWORK), with the test's own CA — trusted by the
// proxy through egress_upstream_ca_file and by nothing else. The proxy knows the upstream's
// names through --resolve pins baked into an image built through the shim FROM the real proxy
// image (wslc runs the image's own entrypoint, W-32). EGRESS_L7's probes are shown able to
// fail against doubles in test_docker_egress_l7 (the same probes, the same proxy). A missing
// image fails, it never skips.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine_fixture.hpp"
#include "l7_upstream.hpp"
#include "maf/sandbox/conformance/posix_guest_subject.hpp"
#include "maf/sandbox/conformance/suites.hpp"
#include "maf/sandbox/egress_proxy/launch.hpp"
#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;
using namespace wslc_test;

namespace {

using l7_test::kClientsImage;
using l7_test::rule_spec;

/// What Upstream makes, removed by this base's destructor even when Upstream's constructor
/// fails halfway.
struct UpstreamResources {
  std::string suffix = random_hex(4);
  std::string network = "maf-wslc-l7-test-" + suffix;
  std::string container = "maf-wslc-l7-test-up-" + suffix;
  std::string untrusted = "maf-wslc-l7-test-untrusted-" + suffix;
  std::string proxy_image = "maf-sandbox-test/wslc-l7-proxy:" + suffix;
  std::string dir;
  std::filesystem::path context = std::filesystem::temp_directory_path() / ("maf-wslc-l7-" + suffix);

  ~UpstreamResources() {
    ::unsetenv("WSLC_SHIM_BRIDGE_NETWORK");
    docker_cli({"rm", "-f", container, untrusted});
    docker_cli({"network", "rm", network});
    docker_cli({"rmi", "-f", proxy_image});
    std::error_code ignored;
    std::filesystem::remove_all(context, ignored);
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
};

struct Upstream : UpstreamResources {
  Upstream() {
    int code = -1;
    for (const auto& image : {base_proxy_image(), kClientsImage}) {
      docker_cli({"image", "inspect", image}, &code);
      INFO("the image " << image << " is missing; run scripts/egress-proxy-image and scripts/docker-test-images");
      REQUIRE(code == 0);
    }
    char tmpl[] = "/tmp/maf-wslc-l7-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    std::filesystem::copy_file(MAF_TLS_UPSTREAM_PY, dir + "/tls_upstream.py");
    const std::string tree = run_out({MAF_L7_UPSTREAM_TREE, dir}, &code);
    INFO(tree);
    REQUIRE(code == 0);
    docker_cli({"network", "create", "--internal", network}, &code);
    REQUIRE(code == 0);
    ::setenv("WSLC_SHIM_BRIDGE_NETWORK", network.c_str(), 1);
    for (const auto& [name, stem] : {std::pair{container, "up"}, std::pair{untrusted, "bad"}}) {
      docker_cli({"run", "-d", "--name", name, "--network", network, "-v", dir + ":/srv:ro", kClientsImage, "python3",
                  "/srv/tls_upstream.py", "443", "/srv/www", std::string("/srv/") + stem + ".pem",
                  std::string("/srv/") + stem + ".key", "0.0.0.0"},
                 &code);
      REQUIRE(code == 0);
      for (int i = 0; i < 100 && docker_cli({"logs", name}).find("ready") == std::string::npos; ++i) ::usleep(100'000);
      INFO(docker_cli({"logs", name}));
      REQUIRE(docker_cli({"logs", name}).find("ready") != std::string::npos);
    }
    const std::string ip_format = "{{(index .NetworkSettings.Networks \"" + network + "\").IPAddress}}";
    const std::string ip = docker_cli({"inspect", "-f", ip_format, container});
    const std::string untrusted_ip = docker_cli({"inspect", "-f", ip_format, untrusted});
    REQUIRE_FALSE(ip.empty());
    REQUIRE_FALSE(untrusted_ip.empty());
    std::filesystem::create_directories(context);
    std::ofstream(context / "Dockerfile") << "FROM " << base_proxy_image() << "\n"
                                          << R"(ENTRYPOINT ["/maf-sandbox-egress-proxy", "--resolve", "allowed.test=)"
                                          << ip << R"(", "--resolve", "other.test=)" << ip
                                          << R"(", "--resolve", "untrusted.test=)" << untrusted_ip << "\"]\n";
    ::setenv("DOCKER_BUILDKIT", "0", 1);  // the classic builder: no buildx plugin needed
    const std::string built = run_out({MAF_WSLC_SHIM, "build", "-q", "-t", proxy_image, context.string()}, &code);
    INFO(built);
    REQUIRE(code == 0);
  }
  std::string log() const { return docker_cli({"logs", container}); }
  wslc::WslcConfig config() const {
    auto c = shim_config();
    c.egress_proxy_image = proxy_image;
    c.egress_proxy_terminates = true;
    c.egress_upstream_ca_file = dir + "/testca.pem";
    return c;
  }
};

std::string describe(const std::vector<conformance::ProbeResult>& results) {
  std::string out;
  for (const auto& r : results) out += r.id + " " + std::string(to_string(r.outcome)) + ": " + r.message + "\n";
  return out;
}

}  // namespace

TEST_CASE("W-44 C-9 C-10 issue-45: through the shim, curl, Python, Node and git reach what a rule allows and read a 403 "
          "for the rest; the CA's key is nowhere the guest or the engine shows") {
  Upstream up;
  Engine engine(up.config());
  REQUIRE(engine.backend->declarations().capabilities.contains(Capability::EgressPaths));
  auto sandbox = engine.acquire(rule_spec());
  auto sh = [&](const std::string& line) {
    auto r = engine.sh(*sandbox, line);
    return r.stdout_text() + r.stderr_text() + "|exit=" + std::to_string(r.exit_code);
  };

  CHECK(sh("curl -sS https://allowed.test/repo/x") == "hello-from-repo\n|exit=0");
  CHECK_THAT(sh("curl -sS -w ' %{http_code}' https://allowed.test/admin"),
             Catch::Contains("refused GET /admin on allowed.test: path /admin matches no path of rule "
                             "allowed.test methods [GET] paths [/repo/]") &&
                 Catch::Contains(" 403"));
  CHECK_THAT(sh("curl -sS -w ' %{http_code}' -X DELETE https://allowed.test/repo/x"),
             Catch::Contains("method DELETE is not allowed") && Catch::Contains(" 403"));
  CHECK_THAT(sh("curl -sS --path-as-is https://allowed.test/repo/%2e%2e/admin"), Catch::Contains("an encoded '.'"));
  CHECK(sh("python3 -c 'import urllib.request as u; print(u.urlopen(\"https://allowed.test/repo/x\").read().decode(), "
           "end=\"\")'") == "hello-from-repo\n|exit=0");
  CHECK(sh("python3 -c 'import requests; r = requests.get(\"https://allowed.test/admin\"); print(r.status_code)'") ==
        "403\n|exit=0");
  CHECK_THAT(sh("cd /tmp && git clone -q https://allowed.test/repo/proj.git && cat proj/README"),
             Catch::EndsWith("hi\n|exit=0"));
  CHECK_THAT(sh("cd /tmp && git clone -q https://allowed.test/other.git"), !Catch::EndsWith("|exit=0"));
  // Node (bookworm's 18 has no proxy support in fetch: the CONNECT is made by hand) trusts the
  // CA through the variables the backend set, and only through them.
  const std::string node_get =
      "node -e 'const u = new URL(process.argv[1]), p = new URL(process.env.HTTPS_PROXY);"
      "require(\"http\").request({host: p.hostname, port: p.port, method: \"CONNECT\", path: u.hostname + \":443\"})"
      ".on(\"connect\", (res, socket) => require(\"https\").request({host: u.hostname, port: 443, path: u.pathname,"
      " createConnection: () => require(\"tls\").connect({socket, servername: u.hostname})}, (r) => {"
      " let b = \"\"; r.on(\"data\", (d) => b += d); r.on(\"end\", () => { console.log(r.statusCode, b.trim());"
      " socket.destroy(); }); }).on(\"error\", (e) => { console.log(\"error\", e.code); process.exit(3); }).end())"
      ".end()' ";
  CHECK(sh(node_get + "https://allowed.test/repo/x") == "200 hello-from-repo\n|exit=0");
  CHECK_THAT(sh(node_get + "https://allowed.test/admin"), Catch::StartsWith("403 maf-sandbox egress proxy: refused GET"));
  CHECK_THAT(sh("env -u NODE_EXTRA_CA_CERTS -u SSL_CERT_FILE " + node_get + "https://allowed.test/repo/x"),
             Catch::StartsWith("error ") && Catch::EndsWith("|exit=3"));
  CHECK(up.log().find("/admin") == std::string::npos);  // nothing refused reached the upstream
  CHECK(up.log().find("/other.git") == std::string::npos);

  // The CA: its certificate in the guest, named by the variables; its key nowhere a guest, an
  // inspect or a log can read.
  CHECK_THAT(sh("head -1 /etc/maf-sandbox/egress-ca.pem; echo $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS"),
             Catch::StartsWith("-----BEGIN CERTIFICATE-----\n/etc/maf-sandbox/egress-ca-bundle.pem "
                               "/etc/maf-sandbox/egress-ca.pem"));
  CHECK(sh("grep -rl 'PRIVATE KEY' /etc /tmp /root /home /run /srv /opt 2>/dev/null; "
           "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 'PRIVATE KEY'") == "0\n|exit=1");
  std::vector<std::string> identities;
  const SandboxSpec spec = rule_spec();
  for (const auto& e : spec.egress_allow()) identities.push_back(egress_proxy::entry_identity(e));
  const std::string name =
      wslc::WslcSandboxBackend::container_name(engine.key(), "l7", kDefaultWorkDir, identities);
  for (const auto& what : {docker_cli({"inspect", name}), docker_cli({"inspect", name + "-proxy"}),
                           docker_cli({"logs", name + "-proxy"})})
    CHECK(what.find("PRIVATE KEY") == std::string::npos);
  CHECK_THAT(docker_cli({"logs", name + "-proxy"}),
             Catch::Contains(R"("method":"DELETE","host":"allowed.test")"));
}

TEST_CASE("EL-1 EL-2 EL-3 EL-4 EL-5 EL-6 EL-7 EL-8 EL-9 W-44 issue-45: EGRESS_L7 passes on wslc through the shim") {
  Upstream up;
  Engine engine(up.config());
  auto sandbox = engine.acquire(rule_spec());
  conformance::PosixGuestSubject subject(engine.run, sandbox, engine.backend->declarations().capabilities,
                                         Egress::Allowlist);
  const auto results = conformance::run_egress_l7(subject, l7_test::l7_targets());
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.outcome == conformance::Outcome::Pass);
  CHECK(results.size() == 9);
}
