// Offline tests of the proxy's attribution label and its teardown (D-8, D-27;
// docs/backends/egress-proxy.md): D-8 `key.v1` bytes against vectors produced by CPython's json.dumps and
// base64.urlsafe_b64encode, and D-27 teardown order and egress events against a recording
// fake transport.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "egress_topology.hpp"
#include "key_attribution.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/sync.hpp"
#include "proxy_drain.hpp"
#include "recording_transport.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::docker;
using namespace maf::sandbox::docker::detail;

namespace {

/// The proxy's labels as the backend writes them for `key`, with `key_v1` as given.
std::map<std::string, std::string> proxy_labels(const SandboxKey& key, const std::string& key_v1) {
  auto labels = support::sandbox_labels(key, "shell");
  labels[std::string(support::kLabelRole)] = "proxy";
  labels[std::string(kLabelKeyV1)] = key_v1;
  return labels;
}

}  // namespace

TEST_CASE("D-8: key.v1 is base64url (padded) of Python's json.dumps bytes") {
  // Each value below is what CPython 3 prints for
  // base64.urlsafe_b64encode(json.dumps([scope, thread, agent, call]).encode()).
  CHECK(python_json_dumps({"s", "t", "a", ""}) == R"(["s", "t", "a", ""])");
  CHECK(encode_key_v1({"s", "t", "a", ""}) == "WyJzIiwgInQiLCAiYSIsICIiXQ==");
  CHECK(encode_key_v1({"s", "t", "a", "c"}) == "WyJzIiwgInQiLCAiYSIsICJjIl0=");
  // Short escapes for the quote and the backslash.
  CHECK(encode_key_v1({"tenant/1", "thread \"q\"", "agent\\dir", "call-7"}) ==
        "WyJ0ZW5hbnQvMSIsICJ0aHJlYWQgXCJxXCIiLCAiYWdlbnRcXGRpciIsICJjYWxsLTciXQ==");
  // ASCII only: lowercase \u escapes, a surrogate pair above the BMP, \u00XX for NUL, the
  // other controls and DEL, and the short forms \n \r \t \b \f.
  const std::string controls("\0\x1f\x7f\n\r\t\b\f", 8);
  CHECK(python_json_dumps({"\xc3\xa9", "\xf0\x9f\x98\x80", controls, ""}) ==
        R"(["\u00e9", "\ud83d\ude00", "\u0000\u001f\u007f\n\r\t\b\f", ""])");
  CHECK(encode_key_v1({"\xc3\xa9", "\xf0\x9f\x98\x80", controls, ""}) ==
        "WyJcdTAwZTkiLCAiXHVkODNkXHVkZTAwIiwgIlx1MDAwMFx1MDAxZlx1MDA3ZlxuXHJcdFxiXGYiLCAiIl0=");
  // The url-safe alphabet: '-' and '_' where standard base64 has '+' and '/'.
  CHECK(encode_key_v1({"?" "?>>~~", "t", "a", ""}) == "WyI_Pz4-fn4iLCAidCIsICJhIiwgIiJd");  // split: no trigraph
  // Ill-formed UTF-8 cannot be a Python str: refused by name, and the label is empty.
  CHECK_THROWS_WITH(python_json_dumps({"ok", "bad\xff"}), Catch::Contains("field 1"));
  CHECK(encode_key_v1({"bad\xc0\xaf", "t", "a", ""}).empty());
}

TEST_CASE("D-8: the 4096-byte limit is inclusive — a 3056-character scope is kept, 3057 is empty") {
  const auto kept = encode_key_v1({std::string(3056, 'a'), "", "", ""});
  CHECK(kept.size() == 4096);
  CHECK(base64url_decode(kept) == "[\"" + std::string(3056, 'a') + "\", \"\", \"\", \"\"]");
  CHECK(encode_key_v1({std::string(3057, 'a'), "", "", ""}).empty());
}

TEST_CASE("D-8: base64url decoding is strict") {
  CHECK(base64url_decode("WyJzIiwgInQiLCAiYSIsICIiXQ==") == R"(["s", "t", "a", ""])");
  CHECK(base64url_decode("") == "");
  CHECK_FALSE(base64url_decode("WyJzIiwgInQiLCAiYSIsICIiXQ"));    // padding missing
  CHECK_FALSE(base64url_decode("WyI/Pz4+fn4iLCAidCIsICJhIiwgIiJd"));  // the other alphabet
  CHECK_FALSE(base64url_decode("WyJz=iwg"));                        // padding inside
  CHECK_FALSE(base64url_decode("WyJ!"));                            // not the alphabet
  CHECK_FALSE(base64url_decode("WR=="));                            // stray bits: not canonical
}

TEST_CASE("D-8: decoding refuses malformed payloads and payloads contradicting the selectors") {
  const SandboxKey key{"scope/with slash", "thread-1", "agent-1", ""};
  const SandboxKey call_key{"s", "t", "a", "call-9"};

  // A well-formed label that agrees with the selectors attributes exactly its key, even
  // where label_value digested a field.
  CHECK(attributed_key(proxy_labels(key, encode_key_v1(key))) == key);
  CHECK(attributed_key(proxy_labels(call_key, encode_key_v1(call_key))) == call_key);

  // Malformed payloads: no attribution, and the caller's key does not override the label.
  for (const std::string& payload :
       {std::string("not base64!"), base64url_encode("not json"), base64url_encode(R"(["s", "t", "a"])"),
        base64url_encode(R"(["s", "t", "a", "", ""])"), base64url_encode(R"(["s", "t", "a", 7])"),
        base64url_encode(R"({"scope": "s"})"), base64url_encode(R"(["\ud800", "t", "a", ""])")}) {
    INFO(payload);
    CHECK_FALSE(attributed_key(proxy_labels(key, payload), key));
  }

  // Contradicting the selectors: another scope, or a call id where the call label is
  // absent (and the reverse).
  const SandboxKey other{"other", "thread-1", "agent-1", ""};
  CHECK_FALSE(attributed_key(proxy_labels(key, encode_key_v1(other)), key));
  const SandboxKey as_call{"scope/with slash", "thread-1", "agent-1", "c"};
  CHECK_FALSE(attributed_key(proxy_labels(key, encode_key_v1(as_call))));
  auto call_labels = proxy_labels(call_key, encode_key_v1({"s", "t", "a", ""}));
  CHECK_FALSE(attributed_key(call_labels));

  // No label, or an empty one: the caller's key stands in only when every selector matches.
  auto unlabelled = proxy_labels(key, "");
  CHECK(attributed_key(unlabelled, key) == key);
  CHECK_FALSE(attributed_key(unlabelled, other));
  CHECK_FALSE(attributed_key(unlabelled, as_call));  // the call label must then be present
  CHECK_FALSE(attributed_key(unlabelled));
  unlabelled.erase(std::string(kLabelKeyV1));
  CHECK(attributed_key(unlabelled, key) == key);
}

namespace {

using docker_test::RecordingTransport;

struct Teardown {
  SandboxKey key{"scope-1", "thread-1", "agent-1", ""};
  std::string workload = DockerSandboxBackend::container_name(key, "shell");
  std::shared_ptr<RecordingTransport> transport = std::make_shared<RecordingTransport>();
  std::vector<EgressEvent> events;
  std::shared_ptr<DockerSandboxBackend> backend;
  BlockingRunner run;

  /// `key_v1`: the proxy's attribution label; absent = the one the backend writes.
  explicit Teardown(std::optional<std::string> key_v1 = std::nullopt) {
    auto labels = support::sandbox_labels(key, "shell");
    transport->add(workload, "workload-id", labels);
    auto p = proxy_labels(key, key_v1 ? *key_v1 : encode_key_v1(key));
    transport->add(workload + "-proxy", "proxy-id", p);
    transport->proxy_log = R"({"event":"listening","port":3128})"
                           "\n"
                           R"({"event":"decision","decision":"allow","host":"allowed.test","port":80})"
                           "\n"
                           R"({"event":"decision","decision":"deny","host":"denied.test","port":80})"
                           "\n";
    DockerConfig config;
    config.egress_observer = [this](const EgressEvent& e) { events.push_back(e); };
    backend = std::make_shared<DockerSandboxBackend>(config, transport);
  }
  std::optional<DisposalFailure> dispose() {
    return run([&] { return backend->dispose(key, std::nullopt, std::nullopt); });
  }
  std::vector<std::string> teardown_calls() const {
    std::vector<std::string> out;
    for (const auto& c : transport->calls)
      if (c != "ps") out.push_back(c);
    return out;
  }
};

}  // namespace

TEST_CASE("D-27: proxy stopped, its log read, removed by ID; then the workload; then the network; then the event") {
  Teardown t;
  CHECK_FALSE(t.dispose());
  CHECK(t.teardown_calls() == std::vector<std::string>{"inspect " + t.workload + "-proxy", "stop -t 1 proxy-id",
                                                       "logs proxy-id", "rm proxy-id", "rm " + t.workload,
                                                       "network rm " + t.workload + "-net"});
  REQUIRE(t.events.size() == 1);
  CHECK(t.events[0].key == t.key);
  CHECK(t.events[0].proxy == t.workload + "-proxy");
  CHECK(t.events[0].decisions ==
        std::vector<EgressDecision>{{"ALLOW", "allowed.test", 80}, {"DENY", "denied.test", 80}});
  CHECK_FALSE(t.events[0].truncated);
}

TEST_CASE("D-27: a refused proxy removal leaves workload and network, reports refused, publishes nothing") {
  Teardown t;
  t.transport->proxy_removal = RemoveOutcome::Refused;
  auto failure = t.dispose();
  REQUIRE(failure);
  CHECK(failure->code == kDisposalRefused);
  CHECK_THAT(failure->detail, Catch::Contains(t.workload + "-proxy") && Catch::Contains("busy"));
  CHECK(t.teardown_calls() == std::vector<std::string>{"inspect " + t.workload + "-proxy", "stop -t 1 proxy-id",
                                                       "logs proxy-id", "rm proxy-id"});
  CHECK(t.events.empty());
}

TEST_CASE("D-27: an unreachable engine reports unreachable and removes nothing; cancellation propagates") {
  {
    Teardown t;
    t.transport->inspect_fails = true;
    auto failure = t.dispose();
    REQUIRE(failure);
    CHECK(failure->code == kDisposalUnreachable);
    CHECK(t.teardown_calls() == std::vector<std::string>{"inspect " + t.workload + "-proxy"});
    CHECK(t.events.empty());
  }
  Teardown t;
  t.transport->stop_cancels = true;
  CHECK_THROWS_AS(t.dispose(), Cancelled);
  CHECK(t.teardown_calls() == std::vector<std::string>{"inspect " + t.workload + "-proxy", "stop -t 1 proxy-id"});
  CHECK(t.events.empty());
}

TEST_CASE("D-27 §4.4: the event's key comes from key.v1; a refused label is not replaced by the caller's key") {
  {
    Teardown t{std::string()};  // empty label: the disposing caller's key stands in (its selectors match)
    CHECK_FALSE(t.dispose());
    REQUIRE(t.events.size() == 1);
    CHECK(t.events[0].key == t.key);
  }
  Teardown t(base64url_encode("[1, 2]"));
  CHECK_FALSE(t.dispose());
  REQUIRE(t.events.size() == 1);
  CHECK_FALSE(t.events[0].key);
}

TEST_CASE("D-27: a failing observer never changes the disposal's result") {
  Teardown t;
  DockerConfig config;
  config.egress_observer = [](const EgressEvent&) { throw std::runtime_error("observer broke"); };
  auto backend = std::make_shared<DockerSandboxBackend>(config, t.transport);
  CHECK_FALSE(t.run([&] { return backend->dispose(t.key, std::nullopt, std::nullopt); }));
  CHECK(t.transport->calls.back() == "network rm " + t.workload + "-net");
}

TEST_CASE("D-27 D-28: reap drains an expired group's proxy by ID before its workload; the label attributes it") {
  Teardown t;
  const std::string workload_id(64, 'a');
  t.transport->proxy_id = std::string(64, 'b');
  t.transport->containers.clear();
  t.transport->add(t.workload, workload_id, support::sandbox_labels(t.key, "shell"));
  t.transport->add(t.workload + "-proxy", t.transport->proxy_id, proxy_labels(t.key, encode_key_v1(t.key)));
  auto result = t.run([&] { return t.backend->reap_detailed(std::chrono::seconds(60), std::nullopt); });
  CHECK(result.failures.empty());
  CHECK(result.proxies_removed == 1);
  CHECK(result.disposed == 1);
  const std::string p = t.transport->proxy_id;
  CHECK(t.teardown_calls() == std::vector<std::string>{"state " + workload_id, "inspect " + p, "stop -t 1 " + p,
                                                       "logs " + p, "rm " + p, "rm " + workload_id});
  REQUIRE(t.events.size() == 1);
  CHECK(t.events[0].key == t.key);  // reap has no caller key: the label alone attributes
  CHECK(t.events[0].decisions.size() == 2);
}

TEST_CASE("D-27 §11.2: re-acquiring a warm ALLOWLIST sandbox whose proxy does not serve it drains the old proxy before starting its replacement") {
  Teardown t;
  t.transport->network_labels = support::sandbox_labels(t.key, "shell");
  DockerConfig config;
  config.egress_proxy_image = "proxy:local";
  config.egress_observer = [&t](const EgressEvent& e) { t.events.push_back(e); };
  SandboxSpec::Fields f;
  f.kind = "shell";
  f.image = "busybox";
  f.egress = Egress::Allowlist;
  f.egress_allow.emplace_back("allowed.test");
  const SandboxSpec spec(std::move(f));
  t.run([&] { return ensure_egress_topology(*t.transport, config, t.workload, t.key, spec, /*fresh=*/false); });
  const auto& calls = t.transport->calls;
  const auto at = [&](const std::string& call) { return std::find(calls.begin(), calls.end(), call) - calls.begin(); };
  const auto removed = at("rm proxy-id");
  REQUIRE(removed < static_cast<std::ptrdiff_t>(calls.size()));
  CHECK(at("stop -t 1 proxy-id") < at("logs proxy-id"));
  CHECK(at("logs proxy-id") < removed);
  CHECK(removed < at("run " + t.workload + "-proxy"));
  // The old proxy's decisions are published once it is gone, attributed to this key.
  REQUIRE(t.events.size() == 1);
  CHECK(t.events[0].key == t.key);
  CHECK(t.events[0].decisions ==
        std::vector<EgressDecision>{{"ALLOW", "allowed.test", 80}, {"DENY", "denied.test", 80}});
}

TEST_CASE("issue 54 D-31: re-acquiring a warm ALLOWLIST sandbox keeps a proxy that serves it — no drain, no second proxy") {
  Teardown t;
  t.transport->network_labels = support::sandbox_labels(t.key, "shell");
  t.transport->proxy_log = "maf-sandbox-egress-proxy listening on 0.0.0.0:3128\n";
  const std::string proxy = t.workload + "-proxy";
  auto serving = [&](const std::string& outbound) {
    return nlohmann::json{
        {"Id", t.transport->proxy_id},
        {"Name", "/" + proxy},
        {"Config",
         {{"Labels", proxy_labels(t.key, encode_key_v1(t.key))},
          {"Image", "proxy:local"},
          {"Env", {"MAF_SANDBOX_ALLOW=b.test,allowed.test"}},
          {"Cmd", nullptr}}},
        {"State", {{"Running", true}, {"Paused", false}}},
        {"NetworkSettings", {{"Networks", {{t.workload + "-net", nlohmann::json::object()}, {outbound, nlohmann::json::object()}}}}}}
        .dump();
  };
  DockerConfig config;
  config.egress_proxy_image = "proxy:local";
  SandboxSpec::Fields f;
  f.kind = "shell";
  f.image = "busybox";
  f.egress = Egress::Allowlist;
  f.egress_allow.emplace_back("allowed.test");
  f.egress_allow.emplace_back("b.test");  // another order than the proxy's: the same allowlist
  const SandboxSpec spec(std::move(f));
  t.transport->containers[proxy] = serving("bridge");
  t.run([&] { return ensure_egress_topology(*t.transport, config, t.workload, t.key, spec, /*fresh=*/false); });
  const auto& calls = t.transport->calls;
  CHECK(std::find(calls.begin(), calls.end(), "run " + proxy) == calls.end());
  CHECK(std::find(calls.begin(), calls.end(), "stop -t 1 proxy-id") == calls.end());
  CHECK(t.events.empty());

  // Without its outbound leg it serves no one: replaced.
  t.transport->calls.clear();
  t.transport->containers[proxy] = serving("elsewhere");
  t.run([&] { return ensure_egress_topology(*t.transport, config, t.workload, t.key, spec, /*fresh=*/false); });
  CHECK(std::find(calls.begin(), calls.end(), "run " + proxy) != calls.end());
}
