// The ALLOWLIST topology's argv, order and failure handling against a scripted runner — no
// engine (wslc.md W-4, W-31…W-37; T-9 for the new verbs, T-5's failure paths offline).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

#include "maf/sandbox/egress_proxy/launch.hpp"
#include "maf/sandbox/egress_proxy/namespace_settings.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/wslc/backend.hpp"
#include "maf/sandbox/wslc/commands.hpp"
#include "maf/sandbox/wslc/errors.hpp"
#include "scripted_runner.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::wslc;
using wslc_test::ScriptedRunner;
using wslc_test::V;
using wslc_test::joined;

namespace {

WslcOutcome failure(const std::string& symbol) { return WslcOutcome{1, "", "injected\r\nError code: " + symbol + "\r\n"}; }

const std::string kReady = R"({"event":"listening","address":"0.0.0.0","port":3128,"allowing":["allowed.test"]})"
                           "\n";

WslcConfig proxy_config() {
  WslcConfig c;
  c.egress_proxy_image = "proxy:1";
  return c;
}

SandboxSpec allowlist(std::vector<EgressEntry> hosts) {
  SandboxSpec::Fields f;
  f.kind = "k";
  f.image = "img:1";
  f.requires_capabilities = CapabilitySet{};  // no work base walk: the topology alone
  f.egress = Egress::Allowlist;
  f.egress_allow = std::move(hosts);
  return SandboxSpec(std::move(f));
}

const SandboxKey kKey{"s", "t", "a", ""};

/// A runner that plays a fresh create behind the proxy: nothing listed until the workload
/// was run, then the workload running.
std::shared_ptr<ScriptedRunner> fresh_engine(const std::string& name) {
  auto r = std::make_shared<ScriptedRunner>();
  r->on("version", WslcOutcome{0, "wslc 2.9.4.0\r\n", ""});
  auto created = std::make_shared<bool>(false);
  r->on("container run -d --name " + name + " ", [created](const V&) {
    *created = true;
    return WslcOutcome{0, std::string(64, 'a') + "\r\n", ""};
  });
  r->on("container list", [created, name](const V&) {
    return WslcOutcome{0, *created ? R"([{"Id":")" + std::string(64, 'a') + R"(","Name":")" + name + R"(","State":2}])" : "[]",
                       ""};
  });
  r->on("container remove -f " + name + "-proxy", failure("WSLC_E_CONTAINER_NOT_FOUND"));
  r->on("container logs", WslcOutcome{0, kReady, ""});
  return r;
}

/// A runner that plays a reuse behind the proxy: the workload running, its network already
/// there, the proxy's log reading `proxy_log`.
std::shared_ptr<ScriptedRunner> reused_engine(const std::string& name, const std::string& proxy_log) {
  auto r = std::make_shared<ScriptedRunner>();
  r->on("version", WslcOutcome{0, "wslc 2.9.4.0\r\n", ""});
  r->on("container list", WslcOutcome{0, R"([{"Id":"ab","Name":")" + name + R"(","State":2}])", ""});
  r->on("network create", failure("ERROR_ALREADY_EXISTS"));
  r->on("container logs", WslcOutcome{0, proxy_log, ""});
  return r;
}

std::vector<std::pair<std::string, std::string>> key_labels() {
  std::vector<std::pair<std::string, std::string>> l;
  for (auto& [k, v] : support::key_selector(kKey, std::string_view("k"))) l.emplace_back(k, v);
  return l;
}

}  // namespace

TEST_CASE("T-9/W-32: golden argv of the topology verbs (C-10, C-17, C-18, C-20)") {
  const LabelList labels{{"maf-sandbox.scope", "s"}, {"maf-sandbox.kind", "k"}};
  CHECK(network_create_args("N-net", labels) ==
        V{"network", "create", "--internal", "-l", "maf-sandbox.scope=s", "-l", "maf-sandbox.kind=k", "N-net"});
  // Issue 22: the proxy's namespace never forwards (the shared --sysctl set, in order).
  V expected_proxy{"container", "run", "-d", "--name", "N-proxy", "--network", "N-net", "-e",
                   "MAF_SANDBOX_ALLOW=a.test,*.b.test"};
  for (const auto& [key, value] : maf::sandbox::egress_proxy::proxy_sysctls())
    expected_proxy.insert(expected_proxy.end(), {"--sysctl", key + "=" + value});
  expected_proxy.insert(expected_proxy.end(), {"-l", "maf-sandbox.scope=s", "-l", "maf-sandbox.kind=k", "-l",
                                               "maf-sandbox.role=proxy", "proxy:1"});
  CHECK(proxy_run_args("N-proxy", "N-net", {{"MAF_SANDBOX_ALLOW", "a.test,*.b.test"}}, labels, "proxy:1") ==
        expected_proxy);
  const auto run = proxy_run_args("N-proxy", "N-net", {{"MAF_SANDBOX_ALLOW", "a.test"}}, labels, "proxy:1");
  CHECK(std::find(run.begin(), run.end(), "net.ipv4.ip_forward=0") != run.end());
  CHECK(std::find(run.begin(), run.end(), "net.ipv6.conf.all.forwarding=0") != run.end());
  CHECK(network_connect_args("N-proxy") == V{"network", "connect", "bridge", "N-proxy"});
  CHECK(logs_args("N-proxy") == V{"container", "logs", "N-proxy"});
  CHECK(logs_args("N-proxy", 1000) == V{"container", "logs", "--tail", "1000", "N-proxy"});
  CHECK(run_args("N", labels, "img:1", "N-net", {{"HTTP_PROXY", "http://N-proxy:3128"}}) ==
        V{"container", "run", "-d", "--name", "N", "--network", "N-net", "-e", "HTTP_PROXY=http://N-proxy:3128", "-l",
          "maf-sandbox.scope=s", "-l", "maf-sandbox.kind=k", "img:1", "sleep", "infinity"});
}

TEST_CASE("W-32: readiness is the proxy's listening line on 3128, in wslc.md's words or the proxy's JSON") {
  CHECK(proxy_reports_listening(kReady));
  CHECK(proxy_reports_listening("listening on 3128\r\n"));
  CHECK(proxy_reports_listening("noise\n" + kReady));
  CHECK_FALSE(proxy_reports_listening(""));
  CHECK_FALSE(proxy_reports_listening("not listening on 3128\n"));
  CHECK_FALSE(proxy_reports_listening(R"({"event":"listening","port":8080})"));
  CHECK_FALSE(proxy_reports_listening(R"({"event":"listening","port":"3128"})"));
  CHECK_FALSE(proxy_reports_listening(R"({"event":"listening","port":31)"));  // a capped read's partial line
  CHECK_FALSE(proxy_reports_listening(R"({"event":["listening"],"port":3128})"));
}

TEST_CASE("W-4/W-8: a proxy image declares ALLOWLIST; without one, or with \"\", CLOSED only") {
  CHECK(WslcSandboxBackend(proxy_config()).declarations().egress_modes == EgressSet{Egress::Closed, Egress::Allowlist});
  CHECK(WslcSandboxBackend(WslcConfig{}).declarations().egress_modes == EgressSet{Egress::Closed});
  CHECK(parse_wslc_config({{"egress_proxy_image", "proxy:1"}}).egress_proxy_image == "proxy:1");
  CHECK_FALSE(parse_wslc_config({{"egress_proxy_image", ""}}).egress_proxy_image);
  CHECK_FALSE(parse_wslc_config({{"egress_proxy_image", nullptr}}).egress_proxy_image);
  CHECK_THROWS_WITH(parse_wslc_config({{"egress_proxy_image", 3}}), Catch::Contains("egress_proxy_image"));
}

TEST_CASE("W-10/W-31/T-10: the sorted allowlist is part of the name; closed and allowlisted never share one") {
  const std::string closed = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir);
  const std::string ab = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"a.test", "b.test"});
  CHECK(ab != closed);
  CHECK(WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"b.test", "a.test"}) == ab);
  CHECK(WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"a.test"}) != ab);
  support::NameQualifiers q;
  q.egress_allow = {"a.test", "b.test"};
  CHECK(ab == support::sandbox_name(kContainerPrefix, kKey, "k", q));
}

TEST_CASE("W-32: a fresh allowlisted acquire builds network, proxy, outbound leg, readiness, then the workload") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test"});
  auto runner = fresh_engine(name);
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  BlockingRunner run;
  auto sandbox = run([&] { return backend->acquire(kKey, allowlist({"allowed.test"})); });
  REQUIRE(sandbox);

  LabelList labels = key_labels();
  V net{"network", "create", "--internal"};
  for (auto& [k, v] : labels) net.insert(net.end(), {"-l", k + "=" + v});
  net.push_back(name + "-net");
  V proxy{"container", "run", "-d", "--name", name + "-proxy", "--network", name + "-net", "-e",
          "MAF_SANDBOX_ALLOW=allowed.test"};
  for (const auto& [k, v] : maf::sandbox::egress_proxy::proxy_sysctls()) proxy.insert(proxy.end(), {"--sysctl", k + "=" + v});
  for (auto& [k, v] : labels) proxy.insert(proxy.end(), {"-l", k + "=" + v});
  proxy.insert(proxy.end(), {"-l", "maf-sandbox.role=proxy", "proxy:1"});
  const std::string url = "http://" + name + "-proxy:3128";
  V workload{"container", "run", "-d", "--name", name, "--network", name + "-net", "-e", "HTTP_PROXY=" + url,
             "-e", "HTTPS_PROXY=" + url, "-e", "http_proxy=" + url, "-e", "https_proxy=" + url};
  for (auto& [k, v] : labels) workload.insert(workload.end(), {"-l", k + "=" + v});
  workload.insert(workload.end(), {"img:1", "sleep", "infinity"});

  const V expected{joined(version_args()),
                   "container list --format json --filter name=" + name,
                   "container list -a --format json --filter name=" + name,
                   joined(net),
                   "container remove -f " + name + "-proxy",
                   joined(proxy),
                   "network connect bridge " + name + "-proxy",
                   "container logs " + name + "-proxy",
                   joined(workload),
                   "container list --format json --filter name=" + name};
  CHECK(runner->verbs() == expected);
}

TEST_CASE("W-32: reuse replaces the proxy and adopts an existing network (ERROR_ALREADY_EXISTS)") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test"});
  auto runner = reused_engine(name, "listening on 3128\r\n");
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  BlockingRunner run;
  REQUIRE(run([&] { return backend->acquire(kKey, allowlist({"allowed.test"})); }));
  CHECK(runner->count("container remove -f " + name + "-proxy") == 1);
  CHECK(runner->count("container run -d --name " + name + "-proxy ") == 1);
  CHECK(runner->count("network connect bridge " + name + "-proxy") == 1);
  CHECK(runner->count("container run -d --name " + name + " ") == 0);  // the workload is reused
  CHECK(runner->count("network remove") == 0);
}

TEST_CASE("W-33: a proxy run failure raises with the build hint and removes the fresh network") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test"});
  auto runner = fresh_engine(name);
  runner->on("container run -d --name " + name + "-proxy", failure("WSLC_E_IMAGE_NOT_FOUND"));
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  BlockingRunner run;
  CHECK_THROWS_MATCHES(run([&] { return backend->acquire(kKey, allowlist({"allowed.test"})); }), WslcImageNotFound,
                       Catch::Matchers::Predicate<WslcImageNotFound>([](const WslcImageNotFound& e) {
                         return std::string(e.what()).find("wslc build -t proxy:1 <context>") != std::string::npos;
                       }));
  const V verbs = runner->verbs();
  REQUIRE(verbs.size() >= 2);
  CHECK(verbs[verbs.size() - 2] == "container remove -f " + name + "-proxy");
  CHECK(verbs.back() == "network remove --force " + name + "-net");
  CHECK(runner->count("container run -d --name " + name + " ") == 0);  // no workload
}

TEST_CASE("W-33: a failed outbound leg raises rather than running closed; the fresh network goes") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test"});
  auto runner = fresh_engine(name);
  runner->on("network connect", failure("E_INVALIDARG"));
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return backend->acquire(kKey, allowlist({"allowed.test"})); }),
                    Catch::Contains("network connect bridge") && Catch::Contains("E_INVALIDARG"));
  CHECK(runner->verbs().back() == "network remove --force " + name + "-net");
  CHECK(runner->count("container logs") == 0);
  CHECK(runner->count("container run -d --name " + name + " ") == 0);
}

TEST_CASE("W-32/W-33: a proxy that never reports readiness is polled 20 times, then raises; a reused sandbox keeps "
          "its network") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test"});
  auto runner = std::make_shared<ScriptedRunner>();
  runner->on("version", WslcOutcome{0, "wslc 2.9.4.0\r\n", ""});
  runner->on("container list", WslcOutcome{0, R"([{"Id":"ab","Name":")" + name + R"(","State":2}])", ""});
  runner->on("container logs", WslcOutcome{0, "starting\n", ""});
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return backend->acquire(kKey, allowlist({"allowed.test"})); }),
                    Catch::Contains("never reported `listening on 3128`") && Catch::Contains("starting"));
  CHECK(runner->count("container logs " + name + "-proxy") == 20);
  CHECK(runner->verbs().back() == "container remove -f " + name + "-proxy");  // the useless proxy goes
  CHECK(runner->count("network remove") == 0);  // the running workload still needs N-net
}

TEST_CASE("issue-22 W-33: a proxy that refused to start is reported in its own words at the first poll") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test"});
  auto runner = std::make_shared<ScriptedRunner>();
  runner->on("version", WslcOutcome{0, "wslc 2.9.4.0\r\n", ""});
  runner->on("container list", WslcOutcome{0, R"([{"Id":"ab","Name":")" + name + R"(","State":2}])", ""});
  const std::string refusal =
      "maf-sandbox-egress-proxy: refusing to start: this network namespace forwards IPv4 packets "
      "(net.ipv4.ip_forward=1)";
  runner->on("container logs", WslcOutcome{0, "", refusal + "\n"});
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return backend->acquire(kKey, allowlist({"allowed.test"})); }),
                    Catch::Contains("refused to start") && Catch::Contains(refusal));
  CHECK(runner->count("container logs " + name + "-proxy") == 1);
  CHECK(runner->verbs().back() == "container remove -f " + name + "-proxy");
}

TEST_CASE("W-33: a workload that fails to start after a fresh topology takes its proxy and network along") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test"});
  auto runner = fresh_engine(name);
  runner->on("container run -d --name " + name + " ", failure("E_FAIL"));  // the workload itself
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return backend->acquire(kKey, allowlist({"allowed.test"})); }), WslcCommandFailed);
  const V verbs = runner->verbs();
  REQUIRE(verbs.size() >= 2);
  CHECK(verbs[verbs.size() - 2] == "container remove -f " + name + "-proxy");
  CHECK(verbs.back() == "network remove --force " + name + "-net");
}

TEST_CASE("W-31: with a proxy image, an empty allowlist is --network none and builds nothing") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir);
  auto runner = fresh_engine(name);
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  BlockingRunner run;
  REQUIRE(run([&] { return backend->acquire(kKey, allowlist({})); }));
  CHECK(runner->count("network") == 0);
  CHECK(runner->count("container run -d --name " + name + " --network none ") == 1);
  CHECK(runner->count("container logs") == 0);
}

TEST_CASE("W-4/W-34: refused before any call — hosts without a proxy image, method rules, UNRESTRICTED") {
  auto runner = std::make_shared<ScriptedRunner>();
  BlockingRunner run;
  auto closed_only = std::make_shared<WslcSandboxBackend>(WslcConfig{}, runner);
  CHECK_THROWS_AS(run([&] { return closed_only->acquire(kKey, allowlist({"a.test"})); }), SandboxEgressNotEnforced);
  auto proxied = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  // A method rule requires egress_methods (C-9), which wslc does not declare: the core
  // refuses it as the router does (ACQ-1), naming the capability, before do_acquire.
  CHECK_THROWS_MATCHES(run([&] { return proxied->acquire(kKey, allowlist({EgressRule("a.test", V{"GET"})})); }),
                       SandboxCapabilityNotSupported,
                       Catch::Matchers::Message("backend 'wslc' does not support egress_methods, required by "
                                                "workload kind 'k' (it declares: exec, exec_stream, files_in, "
                                                "reclaim)"));
  SandboxSpec::Fields f;
  f.kind = "k";
  f.image = "img:1";
  f.egress = Egress::Unrestricted;
  CHECK_THROWS_AS(run([&] { return proxied->acquire(kKey, SandboxSpec(f)); }), SandboxEgressNotEnforced);
  CHECK(runner->calls.empty());
}

namespace {
const std::string kCaPem = "-----BEGIN CERTIFICATE-----\nMIIBsandboxCA\n-----END CERTIFICATE-----\n";
WslcConfig terminating_config() {
  WslcConfig c = proxy_config();
  c.egress_proxy_terminates = true;
  return c;
}
SandboxSpec rule_spec() {
  return allowlist({EgressRule("allowed.test", V{"GET"}, V{"/repo/"}), std::string("whole.test")});
}
}  // namespace

TEST_CASE("W-44 C-9 C-10 issue-45: egress_proxy_terminates declares method/path rules; without it, none") {
  CHECK(WslcSandboxBackend(terminating_config(), std::make_shared<ScriptedRunner>())
            .declarations()
            .capabilities.contains(Capability::EgressPaths));
  CHECK(WslcSandboxBackend(terminating_config(), std::make_shared<ScriptedRunner>())
            .declarations()
            .capabilities.contains(Capability::EgressMethods));
  CHECK_FALSE(WslcSandboxBackend(proxy_config(), std::make_shared<ScriptedRunner>())
                  .declarations()
                  .capabilities.contains(Capability::EgressPaths));
  // No proxy image: nothing to terminate with, whatever the flag says.
  WslcConfig no_proxy;
  no_proxy.egress_proxy_terminates = true;
  CHECK_FALSE(WslcSandboxBackend(no_proxy, std::make_shared<ScriptedRunner>())
                  .declarations()
                  .capabilities.contains(Capability::EgressMethods));
  CHECK_THROWS_WITH(parse_wslc_config(nlohmann::json{{"egress_proxy_terminates", "yes"}}),
                    Catch::Contains("egress_proxy_terminates") && Catch::Contains("\"yes\""));
  CHECK_THROWS_WITH(parse_wslc_config(nlohmann::json{{"egress_upstream_ca_file", ""}}),
                    Catch::Contains("egress_upstream_ca_file"));
  const auto parsed = parse_wslc_config(
      nlohmann::json{{"egress_proxy_terminates", true}, {"egress_upstream_ca_file", "/etc/up.pem"}});
  CHECK(parsed.egress_proxy_terminates);
  CHECK(parsed.egress_upstream_ca_file == "/etc/up.pem");
}

TEST_CASE("W-44 issue-45: a rule spec's proxy gets the rules, its workload the CA variables, and the CA from the "
          "readiness line lands in the guest over the guest's own bundle") {
  auto spec = rule_spec();
  std::vector<std::string> identities;
  for (const auto& e : spec.egress_allow()) identities.push_back(egress_proxy::entry_identity(e));
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, identities);
  // A changed rule is another container (C-55).
  CHECK(name != WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test", "whole.test"}));
  auto runner = fresh_engine(name);
  nlohmann::json ready = nlohmann::json::parse(kReady);
  ready["ca_certificate"] = kCaPem;
  runner->on("container logs", WslcOutcome{0, ready.dump() + "\n", ""});
  runner->on("container exec -w / " + name + " cat /etc/ssl/certs/ca-certificates.crt",
             WslcOutcome{0, "-----BEGIN CERTIFICATE-----\nDISTRO\n-----END CERTIFICATE-----", ""});
  auto backend = std::make_shared<WslcSandboxBackend>(terminating_config(), runner);
  BlockingRunner run;
  REQUIRE(run([&] { return backend->acquire(kKey, spec); }));

  const std::string proxy_run = [&] {
    for (const auto& v : runner->verbs())
      if (v.rfind("container run -d --name " + name + "-proxy ", 0) == 0) return v;
    return std::string();
  }();
  CHECK_THAT(proxy_run, Catch::Contains("-e MAF_SANDBOX_ALLOW=whole.test -e MAF_SANDBOX_RULES=" +
                                        egress_proxy::rules_json(spec)));
  CHECK_THAT(proxy_run, !Catch::Contains("MAF_SANDBOX_UPSTREAM_CA_PEM"));  // none configured: the image's bundle
  const std::string workload = [&] {
    for (const auto& v : runner->verbs())
      if (v.rfind("container run -d --name " + name + " ", 0) == 0) return v;
    return std::string();
  }();
  CHECK_THAT(workload, Catch::Contains("-e SSL_CERT_FILE=/etc/maf-sandbox/egress-ca-bundle.pem") &&
                           Catch::Contains("-e NODE_EXTRA_CA_CERTS=/etc/maf-sandbox/egress-ca.pem"));
  // The CA goes in after the workload runs: one upload whose tar holds both files.
  REQUIRE(runner->count("container cp - " + name + ":/") == 1);
  std::string tar;
  for (std::size_t i = 0; i < runner->calls.size(); ++i)
    if (joined(runner->calls[i]) == "container cp - " + name + ":/") tar = runner->stdins[i];
  CHECK(tar == egress_proxy::guest_ca_tar("-----BEGIN CERTIFICATE-----\nDISTRO\n-----END CERTIFICATE-----", kCaPem));
  CHECK_THAT(tar, Catch::Contains("DISTRO\n-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\nMIIBsandboxCA"));
}

TEST_CASE("W-44 issue-45: a proxy that starts without terminating TLS is refused for a rule spec — never run as a "
          "plain tunnel — and the fresh proxy and network go") {
  auto spec = rule_spec();
  std::vector<std::string> identities;
  for (const auto& e : spec.egress_allow()) identities.push_back(egress_proxy::entry_identity(e));
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, identities);
  auto runner = fresh_engine(name);  // its readiness line carries no CA
  auto backend = std::make_shared<WslcSandboxBackend>(terminating_config(), runner);
  BlockingRunner run;
  CHECK_THROWS_MATCHES(run([&] { return backend->acquire(kKey, spec); }), SandboxEgressNotEnforced,
                       Catch::Matchers::Message(
                           "backend 'wslc': cannot enforce the method/path rules of workload kind 'k': egress proxy " +
                           name + "-proxy from 'proxy:1' started without terminating TLS (its readiness line has no "
                           "CA certificate); `egress_proxy_terminates` names an image that does not"));
  CHECK(runner->count("container run -d --name " + name + " ") == 0);  // no workload
  CHECK(runner->count("network remove --force " + name + "-net") == 1);
  CHECK(runner->count("container remove -f " + name + "-proxy") == 2);  // replaced, then removed
}

TEST_CASE("W-35/W-37: disposal removes workloads, then proxies, each followed by its network") {
  const std::string a = "maf-sandbox-wslc-aaaaaaaaaaaa";
  const std::string b = "maf-sandbox-wslc-bbbbbbbbbbbb";
  BlockingRunner run;
  SECTION("without a proxy image: only listed proxies, each then its network") {
    auto runner = std::make_shared<ScriptedRunner>();
    runner->on("container list", WslcOutcome{0, "{\"Name\":\"" + a + "\",\"State\":2}\n{\"Name\":\"" + b +
                                                    "-proxy\",\"State\":2}\n{\"Name\":\"" + b + "\",\"State\":3}\n",
                                             ""});
    auto backend = std::make_shared<WslcSandboxBackend>(WslcConfig{}, runner);
    auto purge = run([&] { return backend->dispose_scope("s", "t"); });
    CHECK(purge.disposed == 2);  // the proxy is not counted
    CHECK_FALSE(purge.undisposed);
    const V verbs = runner->verbs();
    CHECK(V(verbs.begin() + 1, verbs.end()) == V{"container remove -f " + a, "container remove -f " + b,
                                                 "container remove -f " + b + "-proxy",
                                                 "network remove --force " + b + "-net"});
  }
  SECTION("with a proxy image: every workload's proxy and network too, listed or not") {
    auto runner = std::make_shared<ScriptedRunner>();
    runner->on("container list", WslcOutcome{0, "{\"Name\":\"" + a + "\",\"State\":2}\n", ""});
    runner->on("container remove -f " + a + "-proxy", failure("WSLC_E_CONTAINER_NOT_FOUND"));
    auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
    auto failure_seen = run([&] { return backend->dispose(kKey, std::nullopt, std::nullopt); });
    CHECK_FALSE(failure_seen);  // an absent proxy is already gone, an absent network exit 0
    const V verbs = runner->verbs();
    CHECK(V(verbs.begin() + 1, verbs.end()) == V{"container remove -f " + a, "container remove -f " + a + "-proxy",
                                                 "network remove --force " + a + "-net"});
  }
  SECTION("a network that refuses removal is reported, not thrown") {
    auto runner = std::make_shared<ScriptedRunner>();
    runner->on("container list", WslcOutcome{0, "{\"Name\":\"" + a + "-proxy\",\"State\":2}\n", ""});
    runner->on("network remove", failure("E_FAIL"));
    auto backend = std::make_shared<WslcSandboxBackend>(WslcConfig{}, runner);
    auto purge = run([&] { return backend->dispose_scope("s", "t"); });
    CHECK(purge.disposed == 0);
    REQUIRE(purge.undisposed);
    CHECK(purge.undisposed->detail.find(a + "-net") != std::string::npos);
  }
}

namespace {
/// The NetworkDecisionEvents delivered to an observer set attached to `backend`.
std::shared_ptr<std::vector<NetworkDecisionEvent>> record_decisions(WslcSandboxBackend& backend,
                                                                    std::vector<std::shared_ptr<const ObserverSet>>& keep) {
  auto seen = std::make_shared<std::vector<NetworkDecisionEvent>>();
  keep.push_back(std::make_shared<const ObserverSet>(std::vector<std::shared_ptr<SandboxObserver>>{
      make_observer([seen](const SandboxEvent& e) {
        if (const auto* d = std::get_if<NetworkDecisionEvent>(&e)) seen->push_back(*d);
      })}));
  backend.attach_observers(keep.back());
  return seen;
}

const std::string kDecisionLog =
    kReady + R"({"event":"decision","decision":"allow","method":"GET","host":"allowed.test","port":80,"status":0})" "\n" +
    R"({"event":"decision","decision":"deny","method":"GET","host":"denied.test","port":80,"status":403})" "\n";
}  // namespace

TEST_CASE("OBS-7: disposal reads the proxy's log before removing it and delivers its decisions once it is gone") {
  const std::string a = "maf-sandbox-wslc-aaaaaaaaaaaa";
  const SandboxKey call_key{"s", "t", "a", "call-1"};
  BlockingRunner run;
  std::vector<std::shared_ptr<const ObserverSet>> keep;
  auto listed = [&](ScriptedRunner& r) {
    r.on("container list", WslcOutcome{0, "{\"Name\":\"" + a + "\",\"State\":2}\n", ""});
    r.on("container logs --tail 1000 " + a + "-proxy", WslcOutcome{0, kDecisionLog, ""});
  };
  SECTION("a dispose by a key with a call id: every key label was in the filter, so the key is the caller's") {
    auto runner = std::make_shared<ScriptedRunner>();
    listed(*runner);
    auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
    auto seen = record_decisions(*backend, keep);
    CHECK_FALSE(run([&] { return backend->dispose(call_key, std::nullopt, std::nullopt); }));
    const V verbs = runner->verbs();
    CHECK(V(verbs.begin() + 1, verbs.end()) == V{"container remove -f " + a, "container logs --tail 1000 " + a + "-proxy",
                                                 "container remove -f " + a + "-proxy",
                                                 "network remove --force " + a + "-net"});
    REQUIRE(seen->size() == 2);
    CHECK((*seen)[0].decision == "ALLOW");
    CHECK((*seen)[0].host == "allowed.test");
    CHECK((*seen)[1].decision == "DENY");
    for (const auto& e : *seen) {
      CHECK(e.context.key == call_key);
      CHECK(e.context.call_id == "call-1");
      CHECK(e.context.backend == "wslc");
      CHECK(e.proxy == a + "-proxy");
      CHECK_FALSE(e.truncated);
    }
  }
  SECTION("a scope purge of a proxy this backend did not acquire: delivered unattributed, never guessed") {
    auto runner = std::make_shared<ScriptedRunner>();
    listed(*runner);
    auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
    auto seen = record_decisions(*backend, keep);
    run([&] { return backend->dispose_scope("s", "t"); });
    REQUIRE(seen->size() == 2);
    for (const auto& e : *seen) CHECK(e.context.key == SandboxKey{});
  }
  SECTION("a proxy whose removal is refused delivers nothing (it still runs; its log is not final)") {
    auto runner = std::make_shared<ScriptedRunner>();
    listed(*runner);
    runner->on("container remove -f " + a + "-proxy", failure("E_FAIL"));
    auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
    auto seen = record_decisions(*backend, keep);
    CHECK(run([&] { return backend->dispose(call_key, std::nullopt, std::nullopt); }));
    CHECK(seen->empty());
  }
  SECTION("a cut read is flagged truncated; an unreadable log loses the decisions, never the disposal") {
    auto runner = std::make_shared<ScriptedRunner>();
    listed(*runner);
    WslcOutcome cut{0, kDecisionLog, ""};
    cut.stdout_overflowed = true;
    runner->on("container logs --tail 1000 " + a + "-proxy", cut);
    auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
    auto seen = record_decisions(*backend, keep);
    CHECK_FALSE(run([&] { return backend->dispose(call_key, std::nullopt, std::nullopt); }));
    REQUIRE(seen->size() == 2);
    CHECK((*seen)[0].truncated);
    seen->clear();
    runner->on("container logs --tail 1000 " + a + "-proxy", failure("E_FAIL"));
    CHECK_FALSE(run([&] { return backend->dispose(call_key, std::nullopt, std::nullopt); }));
    CHECK(seen->empty());
    CHECK(runner->count("container remove -f " + a + "-proxy") == 2);
  }
  SECTION("without observers the log is not read at all") {
    auto runner = std::make_shared<ScriptedRunner>();
    listed(*runner);
    auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
    CHECK_FALSE(run([&] { return backend->dispose(call_key, std::nullopt, std::nullopt); }));
    CHECK(runner->count("container logs") == 0);
  }
}

TEST_CASE("OBS-7 W-32: a reuse's proxy replacement delivers the old proxy's decisions under the acquiring key") {
  const std::string name = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {"allowed.test"});
  auto runner = reused_engine(name, kDecisionLog);
  auto backend = std::make_shared<WslcSandboxBackend>(proxy_config(), runner);
  std::vector<std::shared_ptr<const ObserverSet>> keep;
  auto seen = record_decisions(*backend, keep);
  BlockingRunner run;
  REQUIRE(run([&] { return backend->acquire(kKey, allowlist({"allowed.test"})); }));
  const V verbs = runner->verbs();
  const auto read = std::find(verbs.begin(), verbs.end(), "container logs --tail 1000 " + name + "-proxy");
  REQUIRE(read != verbs.end());
  CHECK(std::next(read) != verbs.end());
  CHECK(*std::next(read) == "container remove -f " + name + "-proxy");
  REQUIRE(seen->size() == 2);
  for (const auto& e : *seen) CHECK(e.context.key == kKey);
}
