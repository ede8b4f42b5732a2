// support/labels.hpp: the name and label mapping acquire and dispose share (D-6, D-7,
// W-10…W-12, T-10). Expected values were computed once with an independent
// Python rendering of the spec (hashlib) and are pinned here so a change is caught.

#include <catch2/catch.hpp>

#include <regex>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/labels.hpp"

using namespace maf::sandbox::support;
using maf::sandbox::SandboxKey;

TEST_CASE("labels: sha256_hex is standard SHA-256", "[labels]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("labels: length-prefixed parts", "[labels]") {
  CHECK(length_prefixed({"a-b", "c"}) == "3:a-b1:c");
  CHECK(length_prefixed({"a", "b-c"}) == "1:a3:b-c");
  CHECK(length_prefixed({"caf\xc3\xa9", ""}) == "5:caf\xc3\xa9" "0:");
}

TEST_CASE("labels: D-6/T-10 label value vectors", "[labels]") {
  CHECK(label_value(std::string(63, 'a')) == std::string(63, 'a'));
  CHECK(label_value(std::string(64, 'a')) == "sha256-ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5");
  CHECK(label_value("a=b") == "sha256-42144f3939c3ffbbf0bf8b1f12affb5c23a4c5bd41e0ff67");
  CHECK(label_value("a b") == "sha256-c8687a08aa5d6ed2044328fa6a697ab8e96dc34291e8c203");
  CHECK(label_value("a\nb") == "sha256-7e18f737311b2dc3b2f269dd78396b0351f14fb66efa879f");
  CHECK(label_value("a@b") == "sha256-7508d8b5018ea640b85269861a101203f0c26900555268e9");
  CHECK(label_value("") == "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c");
  CHECK(label_value("caf\xc3\xa9") == "sha256-850f7dc43910ff890f8879c0ed26fe697c93a067ad93a7d5");
  // Digest-shaped input is itself digested, so no raw value can forge another's digest.
  CHECK(label_value("sha256-" + std::string(48, '0')) == "sha256-2be35b7d659da339cb0e89536189ee5175c9831a63242555");
  CHECK(label_value("Tenant_1.prod-A") == "Tenant_1.prod-A");
}

TEST_CASE("labels: long values with a shared prefix are never truncated into one", "[labels]") {
  const std::string base(80, 'x');
  CHECK(label_value(base + "1") != label_value(base + "2"));
  CHECK(label_value(base + "1").size() == 55);
}

TEST_CASE("labels: names are stable, Docker-legal and at most 63 characters with -proxy", "[labels]") {
  const SandboxKey key{"s", "t", "a"};
  CHECK(sandbox_name("maf-sandbox-docker-", key, "python") == "maf-sandbox-docker-3bfbff1b72ea");
  CHECK(sandbox_name("maf-sandbox-docker-", SandboxKey{"s", "t", "a", "c1"},
                     "python", {.egress_allow = {"b.com", "a.com"}}) == "maf-sandbox-docker-6431a2264b23");
  CHECK(sandbox_name("maf-sandbox-wslc-", SandboxKey{"s", "t", "a", "c1"},
                     "python", {.work_base = "/w"}) == "maf-sandbox-wslc-1e8f662244cf");
  const SandboxKey odd{std::string(300, '/'), "th\xc3\xa9 read", "a|b", "$(x)"};
  const auto name = sandbox_name("maf-sandbox-docker-", odd, "k i n d", {.egress_allow = {"x"}, .work_base = "/b"});
  CHECK(std::regex_match(name + "-proxy", std::regex("[a-zA-Z0-9][a-zA-Z0-9_.-]*")));
  CHECK((name + "-proxy").size() <= 63);
}

TEST_CASE("labels: keys differing only in where a separator falls get different names", "[labels]") {
  auto name = [](std::string scope, std::string thread) {
    return sandbox_name("p-", SandboxKey{std::move(scope), std::move(thread), "a"}, "k");
  };
  CHECK(name("a-b", "c") != name("a", "b-c"));
  CHECK(name("a|b", "c") != name("a", "b|c"));
  CHECK(name("a:b", "c") != name("a", "b:c"));
  CHECK(name("1:a", "") != name("", "1:a"));
  CHECK(sandbox_name("maf-sandbox-docker-", SandboxKey{"a-b", "c", "a"}, "k") ==
        "maf-sandbox-docker-7404de7f0b1d");
  CHECK(sandbox_name("maf-sandbox-docker-", SandboxKey{"a", "b-c", "a"}, "k") ==
        "maf-sandbox-docker-a6449b1ce9b4");
}

TEST_CASE("labels: kind, allowlist, call and base each change the name", "[labels]") {
  const SandboxKey key{"s", "t", "a"};
  const auto plain = sandbox_name("p-", key, "python");
  CHECK(sandbox_name("p-", key, "node") != plain);
  CHECK(sandbox_name("p-", key, "python", {.egress_allow = {"a.com"}}) != plain);
  CHECK(sandbox_name("p-", key, "python", {.work_base = "/w"}) != plain);
  SandboxKey call = key;
  call.call_id = "c";
  CHECK(sandbox_name("p-", call, "python") != plain);
  // The tags keep the optional slots apart: an allowlist host cannot pose as a call.
  CHECK(sandbox_name("p-", call, "python") != sandbox_name("p-", key, "python", {.egress_allow = {"c"}}));
  // The allowlist is a set: order does not matter.
  CHECK(sandbox_name("p-", key, "python", {.egress_allow = {"b", "a"}}) ==
        sandbox_name("p-", key, "python", {.egress_allow = {"a", "b"}}));
}

TEST_CASE("labels: an illegal prefix is refused", "[labels]") {
  const SandboxKey key{"s", "t", "a"};
  CHECK_THROWS_AS(sandbox_name("", key, "k"), maf::sandbox::ValueError);
  CHECK_THROWS_AS(sandbox_name("-x", key, "k"), maf::sandbox::ValueError);
  CHECK_THROWS_AS(sandbox_name("a b", key, "k"), maf::sandbox::ValueError);
  CHECK_THROWS_AS(sandbox_name(std::string(46, 'p'), key, "k"), maf::sandbox::ValueError);
  CHECK_NOTHROW(sandbox_name(std::string(45, 'p'), key, "k"));
}

TEST_CASE("labels: the label set and the selectors use the same values (D-6)", "[labels]") {
  const SandboxKey key{"tenant one", "t", "a", "c"};
  const auto labels = sandbox_labels(key, "python", {{"team", "data science"}});
  CHECK(labels.at("maf-sandbox.scope") == label_value("tenant one"));
  CHECK(labels.at("maf-sandbox.thread") == "t");
  CHECK(labels.at("maf-sandbox.agent") == "a");
  CHECK(labels.at("maf-sandbox.kind") == "python");
  CHECK(labels.at("maf-sandbox.call") == "c");
  CHECK(labels.at("maf-sandbox.label.team") == label_value("data science"));
  for (const auto& [label, value] : key_selector(key, "python")) CHECK(labels.at(label) == value);
  for (const auto& [label, value] : scope_selector(key.scope, key.thread_id)) CHECK(labels.at(label) == value);

  SandboxKey conversation = key;
  conversation.call_id.clear();
  CHECK(sandbox_labels(conversation, "python").count("maf-sandbox.call") == 0);
  CHECK_THROWS_AS(sandbox_labels(key, "python", {{"bad key", "v"}}), maf::sandbox::ValueError);
}

TEST_CASE("labels: selector order follows the labels every backend writes (docs/backends/docker.md)", "[labels]") {
  const SandboxKey key{"s", "t", "a", "c"};
  std::vector<std::string> order;
  for (const auto& [label, value] : key_selector(key, "k")) order.push_back(label_argument(label, value));
  CHECK(order == std::vector<std::string>{"maf-sandbox.scope=s", "maf-sandbox.thread=t", "maf-sandbox.agent=a",
                                          "maf-sandbox.kind=k", "maf-sandbox.call=c"});
  CHECK(key_selector(SandboxKey{"s", "t", "a"}).size() == 3);
  const auto scope = scope_selector("s", "t");
  REQUIRE(scope.size() == 2);
  CHECK(scope[0].first == "maf-sandbox.scope");
  CHECK(scope[1].first == "maf-sandbox.thread");
}
