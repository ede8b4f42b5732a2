#pragma once
// One emulator per test (E-n), backed by the shared Docker engine: the backend under
// test talks REST to it over loopback. A test that finds no engine FAILS (never skips).
// On teardown the test's sandboxes are purged by label and the emulator must hold none
// (a per-test leak check); stopping the emulator removes any container it still has.

#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "emulator.hpp"
#include "maf/sandbox/acas/backend.hpp"
#include "maf/sandbox/sync.hpp"

namespace acas_test {

using maf::sandbox::acas::AcasConfig;
using maf::sandbox::acas::AcasSandboxBackend;
using maf::sandbox::acas::emulator::Emulator;
using maf::sandbox::acas::emulator::EmulatorOptions;
using nlohmann::json;

inline std::string random_hex(int n = 12) {
  static std::mt19937_64 rng{std::random_device{}()};
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back("0123456789abcdef"[rng() % 16]);
  return s;
}

inline bool engine_answers() { return std::system("docker version >/dev/null 2>&1") == 0; }

struct Fixture {
  std::unique_ptr<Emulator> emulator;
  maf::sandbox::BlockingRunner run;
  std::string scope = "acas-test-" + random_hex(8);
  std::string thread = "thread-1";

  Fixture() {
    INFO("no Docker engine answers; run scripts/docker-engine start (scripts/test.d/51-acas does)");
    REQUIRE(engine_answers());
    EmulatorOptions o;
    o.instance = "acas-test-" + random_hex(8);
    emulator = std::make_unique<Emulator>(o);
    emulator->start();
  }

  ~Fixture() {
    try {
      auto purger = backend();
      run([&] { return purger->dispose_scope(scope, thread); });
      // Leak check: the service double holds nothing of this test once it is purged.
      auto state = emulator->control("GET", "/sandboxes");
      CHECK(state["live"].empty());
    } catch (...) {
    }
    emulator->stop();
  }

  AcasConfig config() const {
    AcasConfig c;
    c.endpoint = emulator->base_url();
    c.allow_insecure_loopback = true;
    c.subscription_id = "sub";
    c.resource_group = "rg";
    c.sandbox_group = "group";
    c.token = "emulator-token";
    c.poll_interval_seconds = 0.05;
    c.read_timeout_seconds = 30;
    c.probe_timeout_seconds = 30;  // the shared CI box can be slow; A-15's 10 s is the default
    return c;
  }

  std::shared_ptr<AcasSandboxBackend> backend(AcasConfig c) const { return std::make_shared<AcasSandboxBackend>(c); }
  std::shared_ptr<AcasSandboxBackend> backend() const { return backend(config()); }

  maf::sandbox::SandboxKey key(std::string agent = "agent") const { return {scope, thread, std::move(agent), ""}; }

  /// Requests the emulator recorded for `route` since `since` (a sequence number).
  json requests(const std::string& route, std::uint64_t since = 0) const {
    json out = json::array();
    for (const auto& r : emulator->control("GET", "/requests"))
      if (r.value("route", "") == route && r.value("seq", std::uint64_t{0}) > since) out.push_back(r);
    return out;
  }
  std::uint64_t last_seq() const {
    auto log = emulator->control("GET", "/requests");
    return log.empty() ? 0 : log.back().value("seq", std::uint64_t{0});
  }
  std::size_t live() const { return emulator->control("GET", "/sandboxes")["live"].size(); }
  json fault(json rule) const { return emulator->control("POST", "/faults", std::move(rule)); }
  json guest(const std::string& id, const std::string& script) const {
    return emulator->control("POST", "/sandboxes/" + id + "/docker-exec", json{{"script", script}, {"root", true}});
  }
};

inline maf::sandbox::SandboxSpec files_spec(std::string image = "busybox") {
  using maf::sandbox::Capability;
  return maf::sandbox::SandboxSpec({.kind = "acas-test",
                                    .image = std::move(image),
                                    .requires_capabilities = {Capability::Exec, Capability::FilesIn,
                                                              Capability::FilesOut, Capability::FilesList,
                                                              Capability::FilesDelete}});
}

/// Runs `body`, which must throw `E`; returns the message for the test to check.
template <typename E, typename Body>
std::string refusal(Body&& body) {
  try {
    body();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("the call should have been refused");
  return {};
}

inline maf::sandbox::SandboxSpec exec_spec(std::string image = "busybox") {
  return maf::sandbox::SandboxSpec(
      {.kind = "acas-test", .image = std::move(image), .requires_capabilities = {maf::sandbox::Capability::Exec}});
}

}  // namespace acas_test
