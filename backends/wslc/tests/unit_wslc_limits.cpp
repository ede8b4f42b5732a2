// Resource bounds on wslc without an engine (docs/backends/wslc.md "Resource bounds",
// docs/limits.md LIM-2…LIM-5, wslc.md C-23): what is declared, the `--cpus` argv and its
// text, the refusals before any call, and the spec-over-config choice — against a scripted
// runner (T-9 style golden argv).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <catch2/catch.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/wslc/backend.hpp"
#include "maf/sandbox/wslc/commands.hpp"
#include "scripted_runner.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::wslc;
using wslc_test::ScriptedRunner;
using wslc_test::V;

namespace {

const SandboxKey kKey{"s", "t", "a", ""};

SandboxSpec bounded(ResourceLimits resources) {
  SandboxSpec::Fields f;
  f.kind = "k";
  f.image = "img:1";
  f.requires_capabilities = CapabilitySet{};  // no work base walk: the create alone
  f.resources = std::move(resources);
  return SandboxSpec(std::move(f));
}

/// Plays a fresh create: nothing listed until a workload was run, then it runs.
std::shared_ptr<ScriptedRunner> fresh_engine() {
  auto r = std::make_shared<ScriptedRunner>();
  r->on("version", WslcOutcome{0, "wslc 2.9.4.0\r\n", ""});
  auto created = std::make_shared<std::string>();
  r->on("container run -d --name ", [created](const V& argv) {
    *created = argv.at(4);
    return WslcOutcome{0, std::string(64, 'c') + "\r\n", ""};
  });
  r->on("container list", [created](const V&) {
    if (created->empty()) return WslcOutcome{0, "[]", ""};
    return WslcOutcome{0, R"([{"Id":")" + std::string(64, 'c') + R"(","Name":")" + *created + R"(","State":2}])", ""};
  });
  return r;
}

/// The argv of the one `container run` an acquire sent.
V run_argv(WslcConfig config, const SandboxSpec& spec) {
  BlockingRunner run;
  auto runner = fresh_engine();
  auto backend = std::make_shared<WslcSandboxBackend>(std::move(config), runner);
  run([&] { return backend->acquire(kKey, spec); });
  std::vector<V> runs;
  std::copy_if(runner->calls.begin(), runner->calls.end(), std::back_inserter(runs),
               [](const V& c) { return c.size() > 1 && c[0] == "container" && c[1] == "run"; });
  REQUIRE(runs.size() == 1);
  return runs.front();
}

/// The `--cpus` value of a run argv; "" when it has none.
std::string cpus_of(const V& argv) {
  auto it = std::find(argv.begin(), argv.end(), "--cpus");
  return it == argv.end() || std::next(it) == argv.end() ? "" : *std::next(it);
}

}  // namespace

TEST_CASE("LIM-3/C-23: wslc declares cpus and only cpus") {
  WslcSandboxBackend backend(WslcConfig{});
  CHECK(backend.declarations().resource_bounds == ResourceBoundSet{ResourceBound::Cpus});
  CHECK_FALSE(backend.supports_reap_expired());  // no ttl kept, so nothing expires
}

TEST_CASE("C-23/T-9: --cpus goes before the image, in the fixed notation wslc parses") {
  CHECK(run_args("N", {{"maf-sandbox.kind", "k"}}, "img:1", "none", {}, 0.5) ==
        V{"container", "run", "-d", "--name", "N", "--network", "none", "--cpus", "0.5", "-l", "maf-sandbox.kind=k",
          "img:1", "sleep", "infinity"});
  CHECK(run_args("N", {}, "img:1") == V{"container", "run", "-d", "--name", "N", "--network", "none", "img:1", "sleep",
                                        "infinity"});
  CHECK(cpus_argument(0.01) == "0.01");
  CHECK(cpus_argument(0.05) == "0.05");
  CHECK(cpus_argument(2) == "2");
  CHECK(cpus_argument(1.25) == "1.25");
  CHECK(cpus_argument(1024) == "1024");
  // Every text reads back, whole, as the value under wslc's parse (from_chars, fixed): no
  // exponent, sign or space anywhere in the range.
  for (double cpus = ResourceLimits::kMinCpus; cpus <= ResourceLimits::kMaxCpus; cpus *= 1.37) {
    const std::string text = cpus_argument(cpus);
    double back = -1;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), back, std::chars_format::fixed);
    INFO(cpus << " -> " << text);
    CHECK(r.ec == std::errc{});
    CHECK(r.ptr == text.data() + text.size());
    CHECK(back == cpus);
  }
}

TEST_CASE("C-23/LIM-2: a cpus value the wslc CLI cannot take is a ValueError naming it") {
  CHECK_THROWS_WITH(cpus_argument(0), Catch::Contains("got 0"));
  CHECK_THROWS_WITH(cpus_argument(0.001), Catch::Contains("got 0.001"));
  CHECK_THROWS_WITH(cpus_argument(-1), Catch::Contains("got -1"));
  CHECK_THROWS_WITH(cpus_argument(1025), Catch::Contains("got 1025"));
  CHECK_THROWS_AS(cpus_argument(std::nan("")), ValueError);
  CHECK_THROWS_AS(cpus_argument(std::numeric_limits<double>::infinity()), ValueError);
  // The configuration's default is checked the same way, by key and value.
  CHECK(parse_wslc_config({{"cpus", 0.5}}).cpus == 0.5);
  CHECK_FALSE(parse_wslc_config({{"cpus", nullptr}}).cpus);
  CHECK_FALSE(parse_wslc_config(nlohmann::json::object()).cpus);
  CHECK_THROWS_WITH(parse_wslc_config({{"cpus", 0}}), Catch::Contains("'cpus'") && Catch::Contains("got 0"));
  CHECK_THROWS_WITH(parse_wslc_config({{"cpus", 5000}}), Catch::Contains("got 5000"));
  CHECK_THROWS_WITH(parse_wslc_config({{"cpus", "1"}}), Catch::Contains("'cpus'") && Catch::Contains("\"1\""));
}

TEST_CASE("LIM-3/C-23: memory, processes, ttl and idle_timeout are refused before any wslc call, naming the bound") {
  BlockingRunner run;
  auto runner = std::make_shared<ScriptedRunner>();
  auto backend = std::make_shared<WslcSandboxBackend>(WslcConfig{}, runner);
  const std::vector<std::pair<ResourceLimits, std::string>> asked{
      {ResourceLimits({.memory_bytes = 64 << 20}), "memory"},
      {ResourceLimits({.processes = 64}), "processes"},
      {ResourceLimits({.ttl = std::chrono::seconds(60)}), "ttl"},
      {ResourceLimits({.idle_timeout = std::chrono::seconds(60)}), "idle_timeout"},
      {ResourceLimits({.memory_bytes = 64 << 20, .cpus = 0.5}), "memory"},  // cpus alone would be kept
  };
  for (const auto& [resources, bound] : asked) {
    INFO(bound);
    try {
      run([&] { return backend->acquire(kKey, bounded(resources)); });
      FAIL("acquire served a bound wslc does not keep");
    } catch (const SandboxResourceBoundNotEnforced& e) {
      CHECK(e.bound() == bound);
      // The core's refusal (ACQ-1, the router's own message): it names the backend, the
      // bound and what wslc enforces; why wslc cannot keep the rest is docs/backends/wslc.md's
      // "Resource bounds" (C-23), not the message's.
      CHECK_THAT(e.what(), Catch::StartsWith("backend 'wslc' does not enforce resource bound " + bound) &&
                               Catch::Contains("it enforces: cpus)"));
    }
  }
  CHECK(runner->calls.empty());
}

TEST_CASE("LIM-5: the spec's cpus replaces the configuration's; unset, the configuration's applies") {
  WslcConfig config;
  config.image = "img:1";
  CHECK(cpus_of(run_argv(config, bounded(ResourceLimits{}))).empty());
  CHECK(cpus_of(run_argv(config, bounded(ResourceLimits({.cpus = 0.5})))) == "0.5");
  config.cpus = 1.5;
  CHECK(cpus_of(run_argv(config, bounded(ResourceLimits{}))) == "1.5");
  CHECK(cpus_of(run_argv(config, bounded(ResourceLimits({.cpus = 0.25})))) == "0.25");
}

TEST_CASE("LIM-5: the bounds are part of the name; the acquire runs the container under that name") {
  const auto plain = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir);
  const auto half = WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {}, ResourceLimits({.cpus = 0.5}));
  const auto quarter =
      WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {}, ResourceLimits({.cpus = 0.25}));
  CHECK(half != plain);
  CHECK(quarter != half);
  CHECK(half.size() == plain.size());  // still the W-10 shape: prefix + 12 hex
  CHECK(run_argv(WslcConfig{}, bounded(ResourceLimits({.cpus = 0.5}))).at(4) == half);
  CHECK(run_argv(WslcConfig{}, bounded(ResourceLimits{})).at(4) == plain);
}

TEST_CASE("LIMITS broken double: the spec's cpus is declared and named, but only the configuration's is applied") {
  WslcConfig config;
  config.test_only_unapplied_resource_bounds = true;
  const auto argv = run_argv(config, bounded(ResourceLimits({.cpus = 0.5})));
  CHECK(cpus_of(argv).empty());
  CHECK(argv.at(4) == WslcSandboxBackend::container_name(kKey, "k", kDefaultWorkDir, {}, ResourceLimits({.cpus = 0.5})));
  config.cpus = 2;
  CHECK(cpus_of(run_argv(config, bounded(ResourceLimits({.cpus = 0.5})))) == "2");
  CHECK(WslcSandboxBackend(config).declarations().resource_bounds == ResourceBoundSet{ResourceBound::Cpus});
}
