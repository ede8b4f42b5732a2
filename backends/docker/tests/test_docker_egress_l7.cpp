// Method and path rules on a real engine, on both transports (issue 45; C-9, C-10, D-31):
// the proxy terminates TLS for a host with a rule, with a per-sandbox CA the backend puts in
// the guest; real clients in the guest (curl, Python's urllib and requests, Node.js, git over
// HTTPS) reach what the
// rule allows and read a 403 for the rest. The upstream is an HTTPS server the test starts on
// an `--internal` network (the proxy's outbound network) with the test's own CA, which the
// proxy trusts through egress_upstream_ca_file and nothing else does. Needs the proxy image
// (scripts/egress-proxy-image; MAF_SANDBOX_EGRESS_PROXY_IMAGE overrides the tag) and the
// clients image (scripts/docker-test-images); a missing image fails, it never skips.
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "egress_topology.hpp"
#include "engine_fixture.hpp"
#include "forwarding_transport.hpp"
#include "l7_upstream.hpp"
#include "maf/sandbox/conformance/posix_guest_subject.hpp"
#include "maf/sandbox/conformance/suites.hpp"
#include "maf/sandbox/docker/api_transport.hpp"
#include "maf/sandbox/docker/cli_transport.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/live_egress.hpp"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sstream>

using namespace maf::sandbox;
using namespace docker_test;

namespace {

using l7_test::kClientsImage;
using l7_test::l7_targets;
using l7_test::rule_spec;
using Strings = std::vector<std::string>;

std::string proxy_image() {
  const char* env = std::getenv("MAF_SANDBOX_EGRESS_PROXY_IMAGE");
  return env && *env ? env : "maf-sandbox-egress-proxy:local";
}

void host_sh(const std::string& script) {
  INFO(script);
  REQUIRE(std::system(("bash -ec '" + script + "' >/dev/null 2>&1").c_str()) == 0);
}

/// The test's CA, an upstream certificate signed by it, a document tree with two bare git
/// repositories (one under /repo/, one outside it), and the upstream container serving them.
struct Upstream {
  std::string suffix = random_hex(4);
  std::string network = "maf-l7-test-" + suffix;
  std::string container = "maf-l7-test-up-" + suffix;
  std::string untrusted = "maf-l7-test-untrusted-" + suffix;  // a certificate from a CA nobody trusts
  std::string dir;
  std::string ip, untrusted_ip;

  Upstream() {
    char tmpl[] = "/tmp/maf-l7-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    std::filesystem::copy_file(MAF_TLS_UPSTREAM_PY, dir + "/tls_upstream.py");
    host_sh(std::string(MAF_L7_UPSTREAM_TREE) + " " + dir);
    int code = -1;
    docker_cli({"network", "create", "--internal", network}, &code);
    REQUIRE(code == 0);
    docker_cli({"run", "-d", "--name", container, "--network", network, "-v", dir + ":/srv:ro", kClientsImage,
                "python3", "/srv/tls_upstream.py", "443", "/srv/www", "/srv/up.pem", "/srv/up.key", "0.0.0.0"},
               &code);
    REQUIRE(code == 0);
    docker_cli({"run", "-d", "--name", untrusted, "--network", network, "-v", dir + ":/srv:ro", kClientsImage,
                "python3", "/srv/tls_upstream.py", "443", "/srv/www", "/srv/bad.pem", "/srv/bad.key", "0.0.0.0"},
               &code);
    REQUIRE(code == 0);
    for (const auto& c : {container, untrusted}) {
      for (int i = 0; i < 100 && docker_cli({"logs", c}).find("ready") == std::string::npos; ++i) ::usleep(100'000);
      INFO(docker_cli({"logs", c}));
      REQUIRE(docker_cli({"logs", c}).find("ready") != std::string::npos);
    }
    ip = ip_of(container);
    untrusted_ip = ip_of(untrusted);
  }
  std::string ip_of(const std::string& c) const {
    auto found = docker_cli({"inspect", "-f", "{{(index .NetworkSettings.Networks \"" + network + "\").IPAddress}}", c});
    REQUIRE_FALSE(found.empty());
    return found;
  }
  ~Upstream() {
    docker_cli({"rm", "-f", container, untrusted});
    docker_cli({"network", "rm", network});
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  /// Both streams: the upstream writes its request and header lines to stderr (docker_cli
  /// reads stdout alone, which holds only "ready").
  std::string log() const {
    std::string out;
    FILE* pipe = ::popen(("docker logs " + container + " 2>&1").c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    ::pclose(pipe);
    return out;
  }
  docker::DockerConfig config() const {
    auto c = test_config();
    c.egress_proxy_image = proxy_image();
    c.outbound_network = network;
    c.egress_proxy_args = {"--resolve", "allowed.test=" + ip, "--resolve", "other.test=" + ip, "--resolve",
                           "untrusted.test=" + untrusted_ip};
    c.egress_inhibit_ipv4_fallback = true;  // D-32: this engine may predate 28
    c.egress_upstream_ca_file = dir + "/testca.pem";
    return c;
  }
};

/// The doubles that show each EGRESS_L7 probe able to fail (docs/conformance.md "EGRESS_L7").
/// `pass_through`: the proxy terminates but checks nothing (--unsafe-pass-through), the CA's
/// key is shipped into the guest beside its certificate, and curl is told `insecure` — what
/// a naive interception would do. `withhold_ca`: the guest is never told of the CA.
class L7Double : public ForwardingTransport {
public:
  L7Double(std::shared_ptr<docker::DockerTransport> real, bool pass_through, bool withhold_ca)
      : ForwardingTransport(std::move(real)), pass_through_(pass_through), withhold_ca_(withhold_ca) {}
  Aw<docker::CreateResult> create_and_start(docker::CreateRequest q) override {
    const bool proxy = std::any_of(q.labels.begin(), q.labels.end(),
                                   [](const auto& l) { return l.first == "maf-sandbox.role" && l.second == "proxy"; });
    if (proxy && pass_through_) q.command.push_back("--unsafe-pass-through");
    if (!proxy && withhold_ca_)
      std::erase_if(q.env, [](const auto& kv) { return kv.first.find("CA") != std::string::npos || kv.first == "SSL_CERT_FILE"; });
    co_return co_await real_->create_and_start(std::move(q));
  }
  A archive_put(std::string c, std::string d, std::string tar) override {
    const bool ca = tar.find("egress-ca.pem") != std::string::npos;
    co_await real_->archive_put(c, d, std::move(tar));
    if (ca && pass_through_) {
      support::TarWriter w;
      w.add_file("etc/maf-sandbox/egress-ca.key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                 {.mode = 0644, .uid = 0, .gid = 0});
      w.add_file("root/.curlrc", "insecure\n", {.mode = 0644, .uid = 0, .gid = 0});
      co_await real_->archive_put(c, "/", std::move(w).finish());
    }
  }

private:
  bool pass_through_, withhold_ca_;
};

std::shared_ptr<docker::DockerTransport> real_transport(const docker::DockerConfig& config) {
  return config.transport == docker::DockerTransportKind::Api ? docker::make_api_transport(config)
                                                              : docker::make_cli_transport(config);
}

std::vector<std::string> failed_ids(const std::vector<conformance::ProbeResult>& results) {
  std::vector<std::string> ids;
  for (const auto& r : results)
    if (r.failed()) ids.push_back(r.id);
  return ids;
}

std::string describe(const std::vector<conformance::ProbeResult>& results) {
  std::string out;
  for (const auto& r : results) out += r.id + " " + std::string(to_string(r.outcome)) + ": " + r.message + "\n";
  return out;
}

}  // namespace

TEST_CASE("C-9 C-10 D-31 issue-45: a host with a method/path rule is terminated; curl, Python, Node and git in the guest "
          "reach what the rule allows and read a 403 for the rest") {
  Upstream up;
  auto config = up.config();
  std::vector<docker::EgressEvent> events;  // outlives the scope, whose teardown may publish
  config.egress_observer = [&events](const docker::EgressEvent& e) { events.push_back(e); };
  Scope scope(config);
  const auto caps = scope.backend->declarations().capabilities;
  REQUIRE(caps.contains(Capability::EgressMethods));  // create() read the image's features label
  REQUIRE(caps.contains(Capability::EgressPaths));
  auto sandbox = scope.acquire(rule_spec());
  auto sh = [&](const std::string& line) {
    auto r = scope.sh(*sandbox, line);
    return r.stdout_text() + r.stderr_text() + "|exit=" + std::to_string(r.exit_code);
  };

  // curl: allowed, refused path, refused method, the encoded-traversal family.
  CHECK(sh("curl -sS https://allowed.test/repo/x") == "hello-from-repo\n|exit=0");
  const auto path = sh("curl -sS -w ' %{http_code}' https://allowed.test/admin");
  CHECK_THAT(path, Catch::Contains("refused GET /admin on allowed.test: path /admin matches no path of rule "
                                   "allowed.test methods [GET] paths [/repo/]") &&
                       Catch::Contains(" 403"));
  CHECK_THAT(sh("curl -sS -w ' %{http_code}' -X DELETE https://allowed.test/repo/x"),
             Catch::Contains("method DELETE is not allowed") && Catch::Contains(" 403"));
  CHECK_THAT(sh("curl -sS --path-as-is https://allowed.test/repo/..%2fadmin"), Catch::Contains("an encoded '/'"));
  CHECK_THAT(sh("curl -sS --path-as-is https://allowed.test/repo/%2e%2e/admin"), Catch::Contains("an encoded '.'"));
  // A second request on the same kept-alive connection is checked too.
  CHECK_THAT(sh("curl -sS https://allowed.test/repo/x https://allowed.test/admin"),
             Catch::Contains("hello-from-repo\nmaf-sandbox egress proxy: refused GET /admin"));

  // Python's urllib: allowed, and the refusal readable from the HTTPError.
  CHECK(sh("python3 -c 'import urllib.request as u; print(u.urlopen(\"https://allowed.test/repo/x\").read().decode(), end=\"\")'") ==
        "hello-from-repo\n|exit=0");
  CHECK_THAT(sh("python3 -c 'import urllib.request as u, urllib.error as e\n"
                "try: u.urlopen(\"https://allowed.test/admin\")\n"
                "except e.HTTPError as x: print(x.code, x.read().decode(), end=\"\")'"),
             Catch::Contains("403 maf-sandbox egress proxy: refused GET /admin"));

  // Python's requests (REQUESTS_CA_BUNDLE, HTTPS_PROXY): allowed, and the 403 readable.
  CHECK(sh("python3 -c 'import requests; r = requests.get(\"https://allowed.test/repo/x\"); print(r.status_code, "
           "r.text, end=\"\")'") == "200 hello-from-repo\n|exit=0");
  CHECK_THAT(sh("python3 -c 'import requests; r = requests.post(\"https://allowed.test/repo/x\", data=b\"body\"); "
                "print(r.status_code, r.text, end=\"\")'"),
             Catch::StartsWith("403 maf-sandbox egress proxy: refused POST /repo/x on allowed.test: method POST"));

  // git over HTTPS (dumb protocol, GETs only): a clone under /repo/ works; one outside it, and
  // a push (WebDAV PROPFIND/PUT), are refused.
  CHECK_THAT(sh("cd /tmp && git clone -q https://allowed.test/repo/proj.git && cat proj/README"),
             Catch::EndsWith("hi\n|exit=0"));
  const auto outside = sh("cd /tmp && git clone -q https://allowed.test/other.git");
  CHECK_THAT(outside, Catch::Contains("403") && !Catch::EndsWith("|exit=0"));
  CHECK_THAT(sh("cd /tmp/proj && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m two && git push -q "
                "origin HEAD 2>&1"),
             !Catch::EndsWith("|exit=0"));
  // Node.js (bookworm's 18: its fetch ignores HTTPS_PROXY, so the script tunnels with CONNECT
  // itself, as undici's ProxyAgent does) trusts the per-sandbox CA through the variables the
  // backend sets (NODE_EXTRA_CA_CERTS; Debian's build also reads OpenSSL's SSL_CERT_FILE):
  // without them the same request fails verification, which shows where the trust came from.
  REQUIRE(scope.sh(*sandbox,
                   "cat > /tmp/get.js <<'EOF'\n"
           "const http = require(\"http\"), https = require(\"https\"), tls = require(\"tls\");\n"
           "const [method, target] = process.argv.slice(2), u = new URL(target);\n"
           "const proxy = new URL(process.env.HTTPS_PROXY);\n"
           "http.request({host: proxy.hostname, port: proxy.port, method: \"CONNECT\", path: u.hostname + \":443\"})\n"
           "  .on(\"connect\", (res, socket) => {\n"
           "    if (res.statusCode !== 200) { console.log(\"CONNECT\", res.statusCode); process.exit(2); }\n"
           "    https.request({method, host: u.hostname, port: 443, path: u.pathname,\n"
           "                   createConnection: () => tls.connect({socket, servername: u.hostname})}, (r) => {\n"
           "      let body = \"\"; r.on(\"data\", (d) => body += d);\n"
           "      r.on(\"end\", () => { console.log(r.statusCode, body.trim()); socket.destroy(); });\n"
           "    }).on(\"error\", (e) => { console.log(\"error\", e.code || e.message); process.exit(3); }).end();\n"
           "  }).on(\"error\", (e) => { console.log(\"proxy error\", e.message); process.exit(4); }).end();\n"
           "EOF")
              .exit_code == 0);
  CHECK(sh("node /tmp/get.js GET https://allowed.test/repo/x") == "200 hello-from-repo\n|exit=0");
  CHECK_THAT(sh("node /tmp/get.js GET https://allowed.test/admin"),
             Catch::StartsWith("403 maf-sandbox egress proxy: refused GET /admin on allowed.test: path /admin"));
  CHECK_THAT(sh("node /tmp/get.js DELETE https://allowed.test/repo/x"),
             Catch::StartsWith("403 maf-sandbox egress proxy: refused DELETE /repo/x") &&
                 Catch::Contains("method DELETE is not allowed"));
  CHECK_THAT(sh("env -u NODE_EXTRA_CA_CERTS -u SSL_CERT_FILE node /tmp/get.js GET https://allowed.test/repo/x"),
             Catch::StartsWith("error ") && Catch::EndsWith("|exit=3"));

  CHECK(up.log().find("/other.git") == std::string::npos);  // nothing refused reached the upstream
  CHECK(up.log().find("/admin") == std::string::npos);

  // A host allowed whole stays an opaque tunnel: the upstream's own certificate (the test CA).
  std::ifstream ca_file(up.dir + "/testca.pem");
  const std::string test_ca((std::istreambuf_iterator<char>(ca_file)), std::istreambuf_iterator<char>());
  scope.run([&] { return sandbox->write_file("testca.pem", test_ca); });
  CHECK(sh("curl -sS --cacert testca.pem https://other.test/open") == "anything\n|exit=0");

  // The CA: its certificate is in the guest and named by the variables; its key is nowhere a
  // guest, an inspect or a log can read (test by looking).
  CHECK_THAT(sh("head -1 /etc/maf-sandbox/egress-ca.pem; echo $SSL_CERT_FILE $REQUESTS_CA_BUNDLE $CURL_CA_BUNDLE "
                "$GIT_SSL_CAINFO $NODE_EXTRA_CA_CERTS"),
             Catch::StartsWith("-----BEGIN CERTIFICATE-----\n/etc/maf-sandbox/egress-ca-bundle.pem "
                               "/etc/maf-sandbox/egress-ca-bundle.pem /etc/maf-sandbox/egress-ca-bundle.pem "
                               "/etc/maf-sandbox/egress-ca-bundle.pem /etc/maf-sandbox/egress-ca.pem"));
  CHECK(sh("grep -rl 'PRIVATE KEY' /etc /tmp /root /home /run /srv /opt 2>/dev/null; env | grep -c 'PRIVATE KEY'; "
           "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c 'PRIVATE KEY'") == "0\n0\n|exit=1");
  support::NameQualifiers q;
  const SandboxSpec spec = rule_spec();
  for (const auto& e : spec.egress_allow()) q.egress_allow.push_back(docker::detail::entry_identity(e));
  const std::string name = support::sandbox_name(docker::kContainerPrefix, scope.key(), "l7", q);
  const std::string proxy = name + "-proxy";
  for (const auto& what : {docker_cli({"inspect", name}), docker_cli({"inspect", proxy}), docker_cli({"logs", proxy})})
    CHECK(what.find("PRIVATE KEY") == std::string::npos);
  // The guest cannot reach the proxy's container other than through port 3128: the key lives
  // in that process's memory only (nothing on its filesystem: FROM scratch, the binary and a
  // CA bundle). The decision log names method, canonical path and rule, never a body.
  const auto log = docker_cli({"logs", proxy});
  CHECK_THAT(log, Catch::Contains(R"("method":"DELETE","host":"allowed.test")") &&
                      Catch::Contains(R"("path":"/admin","rule":"allowed.test methods [GET] paths [/repo/]")"));

  // OBS-7: the teardown's drain turns those lines into decisions with method, path and rule.
  scope.run([&] { return scope.backend->dispose_scope(scope.scope, scope.thread); });
  bool refused_delete = false, allowed_get = false;
  for (const auto& e : events)
    for (const auto& d : e.decisions) {
      refused_delete |= d.decision == "DENY" && d.method == "DELETE" && d.path == "/repo/x" &&
                        d.rule == "allowed.test methods [GET] paths [/repo/]" &&
                        d.reason.find("method DELETE is not allowed") != std::string::npos;
      allowed_get |= d.decision == "ALLOW" && d.method == "GET" && d.path == "/repo/x";
    }
  CHECK(refused_delete);
  CHECK(allowed_get);
}

TEST_CASE("C-10 issue-45 [once]: a proxy image without the termination feature declares no method/path rules, and "
          "one configured to (deferred) is refused by name at acquire") {
  Upstream up;
  auto config = up.config();
  config.egress_proxy_image = kImage;  // a busybox image: no features label
  Scope scope(config);
  CHECK_FALSE(scope.backend->declarations().capabilities.contains(Capability::EgressPaths));
  CHECK_THROWS_AS(scope.acquire(rule_spec()), SandboxCapabilityNotSupported);  // ACQ-1
  // The plugin's form: no engine call at construction, the configuration's word taken, the
  // image's label checked at acquire all the same.
  config.egress_proxy_terminates = true;
  auto deferred = docker::DockerSandboxBackend::deferred(config);
  REQUIRE(deferred->declarations().capabilities.contains(Capability::EgressPaths));
  CHECK_THROWS_WITH(scope.run([&] { return deferred->acquire(scope.key("agent-2"), rule_spec()); }),
                    Catch::Contains("org.maf-sandbox.egress-proxy.features") && Catch::Contains(kImage));
  try {
    scope.run([&] { return deferred->dispose_scope(scope.scope, scope.thread); });
  } catch (...) {
  }
}

/// EGRESS_L7 from a fresh sandbox of `rule_spec()`, over `transport` (null: the real one).
std::vector<conformance::ProbeResult> run_l7(const Upstream& up, std::shared_ptr<docker::DockerTransport> transport,
                                             const std::string& agent) {
  Scope scope(up.config(), std::move(transport));
  auto sandbox = scope.acquire(rule_spec(), agent);
  conformance::PosixGuestSubject subject(scope.run, sandbox, scope.backend->declarations().capabilities,
                                         Egress::Allowlist);
  return conformance::run_egress_l7(subject, l7_targets());
}

TEST_CASE("EL-1 EL-2 EL-3 EL-4 EL-5 EL-6 EL-7 EL-8 EL-9 C-9 C-10 issue-45: EGRESS_L7 passes on the real proxy, and each "
          "probe fails against a double") {
  Upstream up;
  const auto config = up.config();
  const auto real = run_l7(up, nullptr, "agent-1");
  INFO(describe(real));
  CHECK(failed_ids(real).empty());
  CHECK(std::none_of(real.begin(), real.end(), [](const auto& r) { return r.outcome == conformance::Outcome::Skip; }));
  // EL-2…EL-9 against a proxy that passes the host through (and ships its key, and a curl
  // told to trust anything): each fails; EL-1, the positive control, still passes.
  const auto through = run_l7(up, std::make_shared<L7Double>(real_transport(config), true, false), "agent-double");
  INFO(describe(through));
  CHECK(failed_ids(through) == std::vector<std::string>{"EL-2", "EL-3", "EL-4", "EL-5", "EL-6", "EL-7", "EL-8", "EL-9"});
  // EL-1 against a backend that never tells the guest of its CA: nothing allowed is reached.
  const auto no_ca = run_l7(up, std::make_shared<L7Double>(real_transport(config), false, true), "agent-no-ca");
  INFO(describe(no_ca));
  const auto failed = failed_ids(no_ca);
  CHECK(std::find(failed.begin(), failed.end(), "EL-1") != failed.end());
}

// ---------------------------------------------------------------------------------------
// Brokered credentials (issue 46; docs/policy.md CRED-1…CRED-5, docs/backends/egress-proxy.md
// CRED-6…CRED-9), on the same upstream: the guest holds a placeholder, the bound host sees
// the host's value, every other place is searched for it.

namespace {

SandboxSpec credential_spec() {
  SandboxSpec::Fields f;
  f.kind = "cred";
  f.image = kClientsImage;
  f.requires_capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn};
  f.egress = Egress::Allowlist;
  f.egress_allow = {std::string("allowed.test"), std::string("other.test")};
  AttachedCredential::Fields c;
  c.name = "github";
  c.hosts = {"allowed.test"};
  c.env = "GITHUB_TOKEN";
  f.attached_identity.push_back(AttachedCredential(std::move(c)));
  return SandboxSpec(std::move(f));
}

/// A double that leaks (`leak`: the value also in the workload's environment, as a naive
/// backend would pass it) or loses (`strip`: no placeholder variable) the credential.
class CredentialDouble : public ForwardingTransport {
public:
  CredentialDouble(std::shared_ptr<docker::DockerTransport> real, std::string leak, bool strip)
      : ForwardingTransport(std::move(real)), leak_(std::move(leak)), strip_(strip) {}
  Aw<docker::CreateResult> create_and_start(docker::CreateRequest q) override {
    const bool proxy = std::any_of(q.labels.begin(), q.labels.end(),
                                   [](const auto& l) { return l.first == "maf-sandbox.role" && l.second == "proxy"; });
    if (!proxy && !leak_.empty()) q.env.emplace_back("GITHUB_TOKEN_VALUE", leak_);
    if (!proxy && strip_) std::erase_if(q.env, [](const auto& kv) { return kv.first == "GITHUB_TOKEN"; });
    co_return co_await real_->create_and_start(std::move(q));
  }

private:
  std::string leak_;
  bool strip_;
};

/// Whether `secret` is anywhere in the container's file system (docker export, read on the host).
bool in_filesystem(const std::string& container, const std::string& secret) {
  return std::system(("docker export " + container + " | grep -qaF -- '" + secret + "'").c_str()) == 0;
}

}  // namespace

std::string credential_container(const Scope& scope, const std::string& agent) {
  support::NameQualifiers q;
  const SandboxSpec spec = credential_spec();
  for (const auto& e : spec.egress_allow()) q.egress_allow.push_back(docker::detail::entry_identity(e));
  for (const auto& c : spec.attached_identity())
    q.egress_allow.push_back("credential " + c.name() + " env=" + c.env() + " " + c.header() + ": " + c.format() +
                             " hosts=" + docker::detail::join_hosts(c.hosts()));
  return support::sandbox_name(docker::kContainerPrefix, scope.key(agent), "cred", q);
}

/// ATTACHED_IDENTITY from a fresh sandbox of credential_spec() over `transport` (null: the
/// real one), the host's views searched by name.
std::vector<conformance::ProbeResult> run_ai(const Upstream& up, std::shared_ptr<docker::DockerTransport> transport,
                                             const std::string& agent, const std::string& value) {
  Scope scope(up.config(), std::move(transport));
  scope.backend->attach_credential_source([&](const CredentialRequest&) { return SecretValue(value); });
  auto sandbox = scope.acquire(credential_spec(), agent);
  const std::string name = credential_container(scope, agent);
  conformance::AttachedIdentityTargets t;
  t.bound_url = "https://allowed.test/repo/x";
  t.other_url = "https://other.test/open";
  t.env = "GITHUB_TOKEN";
  t.value = value;
  t.upstream_log = [&up] { return up.log(); };
  t.where_found = [&](const std::string& v) {
    std::vector<std::string> found;
    if (docker_cli({"inspect", name}).find(v) != std::string::npos) found.push_back("the workload's inspect");
    if (docker_cli({"inspect", name + "-proxy"}).find(v) != std::string::npos) found.push_back("the proxy's inspect");
    if (docker_cli({"logs", name + "-proxy"}).find(v) != std::string::npos) found.push_back("the proxy's log");
    if (in_filesystem(name, v)) found.push_back("the workload's file system");
    if (in_filesystem(name + "-proxy", v)) found.push_back("the proxy's file system");
    return found;
  };
  conformance::PosixGuestSubject subject(scope.run, sandbox, scope.backend->declarations().capabilities,
                                         Egress::Allowlist);
  return conformance::run_attached_identity(subject, t);
}

TEST_CASE("AI-1 AI-2 AI-3 AI-4 CRED-4 CRED-5 CRED-7 CRED-9 issue-46: ATTACHED_IDENTITY passes on Docker; the host's "
          "source is asked by name; the proxy's log and the drained events name the credential, never the value") {
  Upstream up;
  const auto results = run_ai(up, nullptr, "agent-1", "ghs_" + random_hex(16));
  INFO(describe(results));
  CHECK(failed_ids(results).empty());
  CHECK(std::none_of(results.begin(), results.end(), [](const auto& r) { return r.outcome == conformance::Outcome::Skip; }));

  auto config = up.config();
  std::vector<docker::EgressEvent> events;
  config.egress_observer = [&events](const docker::EgressEvent& e) { events.push_back(e); };
  // CRED-9: every line the library logs while it brokers, at every level, is searched too.
  std::ostringstream log_lines;
  auto previous = maf::sandbox::logger();
  auto capture = std::make_shared<spdlog::logger>("maf.sandbox", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_lines));
  capture->set_level(spdlog::level::trace);
  maf::sandbox::set_logger(capture);
  struct Restore {
    std::shared_ptr<spdlog::logger> logger;
    ~Restore() { maf::sandbox::set_logger(logger); }
  } restore{previous};
  Scope scope(config);
  REQUIRE(scope.backend->declarations().capabilities.contains(Capability::AttachedIdentity));
  const std::string secret = "ghs_" + random_hex(16);
  std::vector<CredentialRequest> asked;
  scope.backend->attach_credential_source([&](const CredentialRequest& r) {
    asked.push_back(r);
    return SecretValue(secret);
  });
  auto sandbox = scope.acquire(credential_spec());
  REQUIRE(asked.size() == 1);
  CHECK(asked[0].credential == "github");
  CHECK(asked[0].hosts == Strings{"allowed.test"});
  const auto refused = scope.sh(*sandbox, "curl -sS -H \"Authorization: Bearer $GITHUB_TOKEN\" https://other.test/open");
  CHECK_THAT(refused.stdout_text(), Catch::Contains("refused: credential 'github' toward other.test"));
  const std::string proxy = credential_container(scope, "agent-1") + "-proxy";
  const auto proxy_log = docker_cli({"logs", proxy});
  CHECK(proxy_log.find(secret) == std::string::npos);
  CHECK_THAT(proxy_log, Catch::Contains(R"("credentials":"github")") && Catch::Contains(R"("credential":"github")"));

  // A default router refuses the spec before any engine call (CRED-5).
  SandboxRouter refusing({scope.backend}, RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{}));
  CHECK_THROWS_AS(refusing.ensure_can_serve(credential_spec()), SandboxIdentityScopeDenied);

  // CRED-9: the drained decisions name the credential, never its value.
  scope.run([&] { return scope.backend->dispose_scope(scope.scope, scope.thread); });
  bool refused_named = false;
  for (const auto& e : events)
    for (const auto& d : e.decisions) {
      refused_named |= d.decision == "DENY" && d.reason.find("credential 'github'") != std::string::npos;
      CHECK(d.reason.find(secret) == std::string::npos);
    }
  CHECK(refused_named);
  CHECK_THAT(log_lines.str(), Catch::Contains("brokered credentials"));  // the capture saw the acquire
  CHECK(log_lines.str().find(secret) == std::string::npos);
}

TEST_CASE("AI-1 AI-2 AI-3 AI-4 issue-46: each ATTACHED_IDENTITY probe fails against a double") {
  Upstream up;
  const auto config = up.config();
  // A proxy that swaps toward any host: AI-2 fails, the rest hold.
  const auto through = run_ai(up, std::make_shared<L7Double>(real_transport(config), true, false), "agent-through",
                              "ghs_" + random_hex(16));
  INFO(describe(through));
  CHECK(failed_ids(through) == std::vector<std::string>{"AI-2"});
  // A backend that also puts the value in the workload's environment: AI-3 and AI-4 fail.
  const std::string leaked = "ghs_" + random_hex(16);
  const auto leaky = run_ai(up, std::make_shared<CredentialDouble>(real_transport(config), leaked, false), "agent-leaky",
                            leaked);
  INFO(describe(leaky));
  CHECK(failed_ids(leaky) == std::vector<std::string>{"AI-3", "AI-4"});
  // A backend that gives the guest no placeholder: AI-1 fails (nothing swapped), AI-3 too.
  const auto stripped = run_ai(up, std::make_shared<CredentialDouble>(real_transport(config), "", true), "agent-stripped",
                               "ghs_" + random_hex(16));
  INFO(describe(stripped));
  const auto stripped_ids = failed_ids(stripped);
  CHECK(std::find(stripped_ids.begin(), stripped_ids.end(), "AI-1") != stripped_ids.end());
}

// Issue 46 item 6: update_egress on a live Docker sandbox (docs/policy.md EGU-7…EGU-10;
// docs/backends/egress-proxy.md EGU-1, EGU-2). Two hosts allowed whole; a Python client in
// the guest holds a CONNECT tunnel to one; the update that drops it closes that tunnel and
// refuses curl's next request; widening brings it back; the router's refusal changes nothing.
namespace {

SandboxSpec whole_hosts_spec(std::vector<EgressEntry> allow, Egress egress = Egress::Allowlist) {
  SandboxSpec::Fields f;
  f.kind = "live";
  f.image = kClientsImage;
  f.requires_capabilities = CapabilitySet{Capability::Exec, Capability::FilesIn};
  f.egress = egress;
  f.egress_allow = std::move(allow);
  return SandboxSpec(std::move(f));
}

struct Collect : SandboxObserver {
  std::vector<NetworkDecisionEvent> seen;
  void on_event(const SandboxEvent& e) override {
    if (const auto* d = std::get_if<NetworkDecisionEvent>(&e)) seen.push_back(*d);
  }
};

/// What the guest saw of one narrowing: the held tunnel's fate and the next request's status.
struct Narrowed {
  std::string hold;  // "open" then "closed" when the update closed the tunnel
  std::string next;  // curl's output toward the dropped host after the update
  std::string kept;  // curl toward the host still allowed
  EgressUpdateResult result;
};

Narrowed narrow_live(Scope& scope, SandboxRouter& router, std::shared_ptr<Sandbox> sandbox, const SandboxSpec& spec) {
  // The holder tunnels to other.test:443 through the proxy the backend named in HTTPS_PROXY.
  REQUIRE(scope.sh(*sandbox, "cat > /tmp/hold.py <<'EOF'\n"
                             "import os, socket, urllib.parse\n"
                             "p = urllib.parse.urlparse(os.environ['HTTPS_PROXY'])\n"
                             "s = socket.create_connection((p.hostname, p.port))\n"
                             "s.sendall(b'CONNECT other.test:443 HTTP/1.1\\r\\nHost: other.test:443\\r\\n\\r\\n')\n"
                             "head = s.recv(4096)\n"
                             "open('/tmp/hold', 'w').write('open\\n' if b' 200 ' in head.split(b'\\r\\n')[0] + b' ' else 'refused\\n')\n"
                             "s.settimeout(30)\n"
                             "try:\n"
                             "    state = 'closed' if not s.recv(1) else 'data'\n"
                             "except socket.timeout:\n"
                             "    state = 'still-open'\n"
                             "except OSError:\n"
                             "    state = 'closed'\n"
                             "open('/tmp/hold', 'a').write(state + '\\n')\n"
                             "EOF\n"
                             "rm -f /tmp/hold; nohup python3 /tmp/hold.py >/dev/null 2>&1 &\n"
                             "for i in $(seq 100); do [ -s /tmp/hold ] && break; sleep 0.1; done; cat /tmp/hold")
                .stdout_text() == "open\n");
  Narrowed n{"", "", "", {spec, {}}};
  std::vector<EgressEntry> narrowed{std::string("allowed.test")};
  n.result = scope.run([&] { return update_egress(router, sandbox, spec, narrowed); });
  n.hold = scope.sh(*sandbox, "for i in $(seq 50); do [ $(wc -l </tmp/hold) -ge 2 ] && break; sleep 0.1; done; "
                              "cat /tmp/hold").stdout_text();
  auto r = scope.sh(*sandbox, "curl -sSk -w ' %{http_code}' https://other.test/open 2>&1");
  n.next = r.stdout_text() + r.stderr_text();
  r = scope.sh(*sandbox, "curl -sSk https://allowed.test/repo/x 2>&1");
  n.kept = r.stdout_text() + r.stderr_text();
  return n;
}

}  // namespace

TEST_CASE("EGU-1 EGU-2 EGU-7 EGU-8 EGU-9 EGU-10 issue-46: update_egress narrows a live Docker sandbox at once, "
          "closing its open tunnel; widening is router-checked; the change is an event; the guest cannot reach "
          "the channel") {
  Upstream up;
  Scope scope(up.config());
  auto collect = std::make_shared<Collect>();
  SandboxRouter router({scope.backend}, RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{}),
                       {collect});
  const auto spec = whole_hosts_spec({std::string("allowed.test"), std::string("other.test")});
  auto sandbox = scope.acquire(spec);
  REQUIRE_FALSE(live_egress_refusal(*sandbox).has_value());  // EGU-8: the image lists live-policy
  CHECK_THAT(scope.sh(*sandbox, "curl -sSk https://other.test/open").stdout_text(), Catch::Contains("anything"));

  // EGU-1: the channel is an abstract socket of the proxy's network namespace; the guest's
  // namespace has no such name, and the guest's path to the proxy speaks only HTTP.
  const auto reach = scope.sh(*sandbox, "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); "
                                        "s.connect(\"\\0maf-sandbox-control\")' 2>&1; echo exit=$?");
  CHECK_THAT(reach.stdout_text(), Catch::Contains("ConnectionRefusedError") && Catch::Contains("exit=1"));
  const auto forged = scope.sh(*sandbox, "python3 -c 'import os, socket, urllib.parse\n"
                                         "p = urllib.parse.urlparse(os.environ[\"HTTPS_PROXY\"])\n"
                                         "s = socket.create_connection((p.hostname, p.port))\n"
                                         "s.sendall(b\"{\\\"op\\\":\\\"update\\\",\\\"id\\\":1,\\\"allow\\\":\\\"evil.test\\\"}\\n\\n\")\n"
                                         "print(s.recv(100).split(b\"\\r\\n\")[0].decode())'");
  CHECK_THAT(forged.stdout_text(), Catch::StartsWith("HTTP/1.1 400"));

  // EGU-2: narrowing closes the open tunnel and refuses the next request; the kept host answers.
  const auto n = narrow_live(scope, router, sandbox, spec);
  CHECK(n.hold == "open\nclosed\n");
  CHECK(n.result.report.closed_tunnels >= 1);
  CHECK(n.result.report.allowing == "allowed.test");
  CHECK_THAT(n.next, Catch::Contains("403"));
  CHECK_THAT(n.kept, Catch::Contains("hello-from-repo"));
  // EGU-7: the change is an event, through the router's observers.
  const auto updated = std::find_if(collect->seen.begin(), collect->seen.end(),
                                    [](const auto& e) { return e.decision == "POLICY-UPDATED"; });
  REQUIRE(updated != collect->seen.end());
  CHECK(updated->host == "allowed.test");
  CHECK(updated->context.kind == "live");

  // EGU-10: widening is checked as a new spec — a router that would not serve it refuses,
  // and nothing changes; this router's widening lets the host through again.
  RouterOptions strict = RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{});
  strict.denied_capabilities = CapabilitySet{Capability::FilesIn};
  SandboxRouter refusing({scope.backend}, strict);
  std::vector<EgressEntry> wider{std::string("allowed.test"), std::string("other.test")};
  CHECK_THROWS_AS(scope.run([&] { return update_egress(refusing, sandbox, n.result.spec, wider); }), PermissionError);
  CHECK_THAT(scope.sh(*sandbox, "curl -sSk -w ' %{http_code}' https://other.test/open 2>&1").stdout_text(),
             Catch::Contains("403"));
  std::vector<EgressEntry> bad{std::string("allowed.test"), std::string("not a host")};
  CHECK_THROWS_AS(scope.run([&] { return update_egress(router, sandbox, n.result.spec, bad); }), ValueError);
  const auto widened = scope.run([&] { return update_egress(router, sandbox, n.result.spec, wider); });
  CHECK(widened.report.allowing == "allowed.test,other.test");
  CHECK_THAT(scope.sh(*sandbox, "curl -sSk https://other.test/open").stdout_text(), Catch::Contains("anything"));
  // EGU-9: a method/path rule cannot change live.
  std::vector<EgressEntry> ruled{EgressRule("allowed.test", Strings{"GET"}, std::nullopt), std::string("other.test")};
  CHECK_THROWS_AS(scope.run([&] { return update_egress(router, sandbox, widened.spec, ruled); }), ValueError);

  // EGU-8: a sandbox behind no proxy declares it cannot, and the call refuses, typed.
  auto closed = scope.acquire(whole_hosts_spec({}, Egress::Closed), "agent-2");
  REQUIRE(live_egress_refusal(*closed).has_value());
  CHECK_THAT(*live_egress_refusal(*closed), Catch::Contains("behind no egress proxy"));
  const auto closed_spec = whole_hosts_spec({}, Egress::Closed);  // named: GCC 12, temporaries into coroutines
  CHECK_THROWS_AS(scope.run([&] { return update_egress(router, closed, closed_spec, wider); }),
                  SandboxCapabilityNotSupported);
}

TEST_CASE("EGU-2 issue-46: the narrowing probe fails against a proxy whose control channel lies") {
  Upstream up;
  auto config = up.config();
  config.egress_proxy_args.push_back("--unsafe-broken-control");  // acknowledges, changes nothing
  Scope scope(config);
  SandboxRouter router({scope.backend}, RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{}));
  const auto spec = whole_hosts_spec({std::string("allowed.test"), std::string("other.test")});
  auto sandbox = scope.acquire(spec);
  const auto n = narrow_live(scope, router, sandbox, spec);
  CHECK(n.hold != "open\nclosed\n");                   // the tunnel outlived the update
  CHECK_THAT(n.next, !Catch::Contains("403"));          // and the next request went through
  CHECK(n.result.report.closed_tunnels == 0);
}
