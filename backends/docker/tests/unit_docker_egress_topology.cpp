// Issue 22 in the ALLOWLIST topology (egress_topology.cpp) against a recording transport:
// what the proxy is run with, how its start-up refusal is reported, and the IPv6-less
// kernel's retry. The real engine runs the same in test_docker_egress.
#include <algorithm>
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
  void ensure() {
    run([&] { return ensure_egress_topology(*transport, config, workload, key, spec, /*fresh=*/true); });
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
