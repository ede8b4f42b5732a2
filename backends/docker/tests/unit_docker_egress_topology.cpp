// Issue 22 in the ALLOWLIST topology (egress_topology.cpp) against a recording transport:
// what the proxy is run with, how its start-up refusal is reported, and the IPv6-less
// kernel's retry. The real engine runs the same in test_docker_egress.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "egress_topology.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/egress_proxy/namespace_settings.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/sync.hpp"
#include "recording_transport.hpp"

using namespace docker_test;
using maf::sandbox::docker::detail::ensure_egress_topology;

namespace {

/// Records every proxy run; `refuse_ipv6` answers like runc on a kernel without IPv6, and
/// `proxy_exits` makes the proxy absent (exited) with `proxy_log` as its last words.
class ProxyRuns : public RecordingTransport {
public:
  std::vector<CreateRequest> runs;
  bool refuse_ipv6 = false;
  bool proxy_exits = false;
  std::optional<std::string> labels;  ///< the proxy image's Config.Labels (issue 45)

  boost::asio::awaitable<std::optional<std::string>> image_labels(std::string) override { co_return labels; }

  boost::asio::awaitable<CreateResult> create_and_start(CreateRequest q) override {
    runs.push_back(q);
    calls.push_back("run " + q.name);
    const bool has_ipv6 = std::any_of(q.sysctls.begin(), q.sysctls.end(),
                                      [](const auto& kv) { return kv.first.rfind("net.ipv6.", 0) == 0; });
    if (refuse_ipv6 && has_ipv6)
      co_return CreateResult{CreateOutcome::Failed,
                             "OCI runtime create failed: runc create failed: unable to start container process: "
                             "error during container init: open /proc/sys/net/ipv6/conf/all/forwarding: no such "
                             "file or directory: unknown"};
    if (!proxy_exits) add(q.name, q.name + "-id", {});
    co_return CreateResult{CreateOutcome::Created, {}};
  }
};

struct Rig {
  SandboxKey key{"scope-1", "thread-1", "agent-1", ""};
  std::string workload = DockerSandboxBackend::container_name(key, "shell");
  std::shared_ptr<ProxyRuns> transport = std::make_shared<ProxyRuns>();
  DockerConfig config;
  BlockingRunner run;
  SandboxSpec spec = [] {
    SandboxSpec::Fields f;
    f.kind = "shell";
    f.image = "busybox";
    f.egress = Egress::Allowlist;
    f.egress_allow.emplace_back("allowed.test");
    return SandboxSpec(std::move(f));
  }();

  Rig() {
    config.egress_proxy_image = "proxy:local";
    transport->network_labels = support::sandbox_labels(key, "shell");
    transport->proxy_log = R"({"event":"listening","port":3128})"
                           "\n";
  }
  std::optional<std::string> ensure() {
    return run([&] { return ensure_egress_topology(*transport, config, workload, key, spec, /*fresh=*/true); });
  }
};

}  // namespace

TEST_CASE("issue-22: the proxy is run with every capability dropped and its namespace's forwarding off") {
  Rig r;
  r.ensure();
  REQUIRE(r.transport->runs.size() == 1);
  const auto& proxy = r.transport->runs[0];
  CHECK(proxy.name == r.workload + "-proxy");
  CHECK(proxy.cap_drop_all);
  CHECK(proxy.sysctls == maf::sandbox::egress_proxy::proxy_sysctls());
  const auto has = [&](const std::string& k, const std::string& v) {
    return std::find(proxy.sysctls.begin(), proxy.sysctls.end(), std::pair{k, v}) != proxy.sysctls.end();
  };
  CHECK(has("net.ipv4.ip_forward", "0"));
  CHECK(has("net.ipv6.conf.all.forwarding", "0"));
  CHECK(has("net.ipv4.conf.all.rp_filter", "1"));
}

TEST_CASE("issue-22: a proxy that exited before listening fails the acquire at once, in its own words") {
  Rig r;
  r.transport->proxy_exits = true;
  r.transport->proxy_log =
      "maf-sandbox-egress-proxy: refusing to start: this network namespace forwards IPv4 packets "
      "(net.ipv4.ip_forward=1)\n";
  CHECK_THROWS_WITH(r.ensure(), Catch::Contains("exited") &&
                                    Catch::Contains("refusing to start: this network namespace forwards IPv4") &&
                                    !Catch::Contains("never reported"));
  const auto& calls = r.transport->calls;
  CHECK(std::count(calls.begin(), calls.end(), "logs " + r.workload + "-proxy") == 2);  // one poll, one final read
  CHECK(calls.back() == "network rm " + r.workload + "-net");                          // a fresh topology goes
}

TEST_CASE("issue-22: on a kernel without IPv6 the proxy is run again with the IPv4 settings alone") {
  Rig r;
  r.transport->refuse_ipv6 = true;
  r.ensure();
  REQUIRE(r.transport->runs.size() == 2);
  const auto& retry = r.transport->runs[1].sysctls;
  CHECK(std::none_of(retry.begin(), retry.end(), [](const auto& kv) { return kv.first.rfind("net.ipv6.", 0) == 0; }));
  CHECK(std::find(retry.begin(), retry.end(), std::pair<std::string, std::string>{"net.ipv4.ip_forward", "0"}) !=
        retry.end());
  const auto& calls = r.transport->calls;
  const auto first = std::find(calls.begin(), calls.end(), "run " + r.workload + "-proxy");
  REQUIRE(first != calls.end());
  CHECK(*(first + 1) == "rm " + r.workload + "-proxy");  // the failed one is removed before the retry
}

TEST_CASE("issue-22: any other proxy run failure is not retried") {
  class Failing : public ProxyRuns {
  public:
    boost::asio::awaitable<CreateResult> create_and_start(CreateRequest q) override {
      runs.push_back(q);
      co_return CreateResult{CreateOutcome::Failed, "invalid argument \"net.ipv4.ip_forward=0\" for \"--sysctl\""};
    }
  };
  Rig r;
  r.transport = std::make_shared<Failing>();
  r.transport->network_labels = support::sandbox_labels(r.key, "shell");
  CHECK_THROWS_WITH(r.ensure(), Catch::Contains("invalid argument"));
  CHECK(r.transport->runs.size() == 1);
}

namespace {
using maf::sandbox::EgressRule;
using Strings = std::vector<std::string>;

SandboxSpec rule_spec() {
  SandboxSpec::Fields f;
  f.kind = "shell";
  f.image = "busybox";
  f.egress = Egress::Allowlist;
  f.egress_allow.emplace_back("whole.test");
  f.egress_allow.emplace_back(EgressRule("allowed.test", Strings{"GET"}, Strings{"/repo/"}));
  return SandboxSpec(std::move(f));
}

std::string env_of(const CreateRequest& q, const std::string& name) {
  for (const auto& [k, v] : q.env)
    if (k == name) return v;
  return "(unset)";
}
}  // namespace

TEST_CASE("C-10 issue-45: a spec with method/path rules is refused on a proxy image that does not say it terminates TLS") {
  Rig r;
  r.spec = rule_spec();
  r.transport->labels = R"({"org.opencontainers.image.title":"x"})";
  CHECK_THROWS_AS(r.ensure(), maf::sandbox::SandboxEgressNotEnforced);
  CHECK_THROWS_WITH(r.ensure(), Catch::Contains("org.maf-sandbox.egress-proxy.features") &&
                                    Catch::Contains("'proxy:local'"));
  CHECK(r.transport->runs.empty());  // refused before anything was made
}

TEST_CASE("C-10 issue-45: rules reach the proxy as MAF_SANDBOX_RULES, whole hosts as MAF_SANDBOX_ALLOW, and the CA comes back") {
  Rig r;
  r.spec = rule_spec();
  r.transport->labels = R"({"org.maf-sandbox.egress-proxy.features":"tls-termination,method-rules,path-rules"})";
  r.transport->proxy_log =
      R"({"event":"listening","port":3128,"ca_certificate":"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"})"
      "\n";
  const auto ca = r.ensure();
  REQUIRE(ca);
  CHECK(*ca == "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
  REQUIRE(r.transport->runs.size() == 1);
  const auto& proxy = r.transport->runs[0];
  CHECK(env_of(proxy, "MAF_SANDBOX_ALLOW") == "whole.test");
  CHECK(env_of(proxy, "MAF_SANDBOX_RULES") == R"([{"host":"allowed.test","methods":["GET"],"paths":["/repo/"]}])");
  CHECK(env_of(proxy, "MAF_SANDBOX_UPSTREAM_CA_PEM") == "(unset)");
  for (const auto& [k, v] : proxy.env) CHECK(v.find("PRIVATE KEY") == std::string::npos);

  // A proxy that terminates but printed no CA fails the acquire rather than leave the guest without it.
  Rig silent;
  silent.spec = rule_spec();
  silent.transport->labels = r.transport->labels;
  CHECK_THROWS_WITH(silent.ensure(), Catch::Contains("printed no CA certificate"));
}

TEST_CASE("C-10 issue-45: the upstream trust store file reaches the proxy as PEM text; an unreadable one is refused by name") {
  Rig r;
  r.spec = rule_spec();
  r.transport->labels = R"({"org.maf-sandbox.egress-proxy.features":"tls-termination"})";
  r.transport->proxy_log = R"({"event":"listening","ca_certificate":"PEM"})" "\n";
  char path[] = "/tmp/maf-upstream-ca-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string pem = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n";
  REQUIRE(::write(fd, pem.data(), pem.size()) == static_cast<ssize_t>(pem.size()));
  ::close(fd);
  r.config.egress_upstream_ca_file = path;
  r.ensure();
  CHECK(env_of(r.transport->runs.at(0), "MAF_SANDBOX_UPSTREAM_CA_PEM") == pem);
  ::unlink(path);
  Rig missing;
  missing.spec = rule_spec();
  missing.transport->labels = r.transport->labels;
  missing.config.egress_upstream_ca_file = "/nonexistent/ca.pem";
  CHECK_THROWS_WITH(missing.ensure(), Catch::Contains("egress_upstream_ca_file '/nonexistent/ca.pem'"));
}

TEST_CASE("C-10 issue-45: the guest's CA variables, the features label, and a rule in the sandbox's identity") {
  using namespace maf::sandbox::docker::detail;
  const auto plain = workload_proxy_env("c");
  CHECK(plain.size() == 4);
  const auto terminating = workload_proxy_env("c", true);
  const auto value = [&](const std::string& k) {
    for (const auto& [n, v] : terminating)
      if (n == k) return v;
    return std::string("(unset)");
  };
  for (const char* k : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"})
    CHECK(value(k) == "/etc/maf-sandbox/egress-ca-bundle.pem");
  CHECK(value("NODE_EXTRA_CA_CERTS") == "/etc/maf-sandbox/egress-ca.pem");
  CHECK(labels_say_terminating(R"({"org.maf-sandbox.egress-proxy.features":"method-rules,tls-termination"})"));
  CHECK_FALSE(labels_say_terminating(R"({"org.maf-sandbox.egress-proxy.features":"tls-termination-not"})"));
  CHECK_FALSE(labels_say_terminating("null"));
  CHECK_FALSE(labels_say_terminating("not json"));
  CHECK(entry_identity(std::string("h.test")) == "h.test");
  CHECK(entry_identity(EgressRule("h.test", Strings{"POST", "GET"}, Strings{"/b/", "/a/"})) ==
        "h.test methods=GET,POST paths=/a/,/b/");
  CHECK(entry_identity(EgressRule("h.test", Strings{"GET"})) != entry_identity(EgressRule("h.test", Strings{"POST"})));
}
