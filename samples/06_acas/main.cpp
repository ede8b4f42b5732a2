// A script runs in an Azure Container Apps Sandboxes (ACAS) microVM, reached over the
// service's data-plane REST API; the files it wrote are listed and read back.
//
// Configured from the environment, with the names scripts/acas-live uses, so one binary runs
// against the live service or against the project's emulator
// (maf-sandbox-acas-emulator; run-with-emulator.sh sets these variables for it):
//   ACAS_ENDPOINT          https://management.<region>.azuredevcompute.io, or the emulator's
//                          http://127.0.0.1:<port> (plain http is accepted for loopback only)
//   ACAS_SUBSCRIPTION_ID   ACAS_RESOURCE_GROUP   ACAS_SANDBOX_GROUP
//   ACAS_IMAGE             a prebuilt name the group offers, or an imported repository:tag
//                          (then ACAS_REGISTRY too)
//   ACAS_ACCESS_TOKEN      a data-plane token; unset, a logged-in `az` CLI is asked
//
//  1. load the `acas` backend plugin through the registry (its factory contacts nothing);
//  2. build a router with the *default* floor: ACAS is a microVM, nothing is lowered;
//  3. acquire, write the data and the script, run it, list what it left, read the report;
//  4. dispose (on failure too), then check by label that nothing of the conversation is left.
#include <maf/sandbox/async.hpp>
#include <maf/sandbox/registry.hpp>
#include <maf/sandbox/sync.hpp>

#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "conversation.hpp"

using namespace maf::sandbox;

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

/// The plugin configuration from the environment; throws ValueError naming a missing variable.
nlohmann::json config_from_environment() {
  nlohmann::json config;
  for (const auto& [variable, key] : {std::pair{"ACAS_ENDPOINT", "endpoint"},
                                      std::pair{"ACAS_SUBSCRIPTION_ID", "subscription_id"},
                                      std::pair{"ACAS_RESOURCE_GROUP", "resource_group"},
                                      std::pair{"ACAS_SANDBOX_GROUP", "sandbox_group"},
                                      std::pair{"ACAS_IMAGE", "default_image"}}) {
    const std::string value = env(variable);
    if (value.empty())
      throw ValueError(std::string(variable) + " is not set (see samples/06_acas/README.md)");
    config[key] = value;
  }
  config["registry"] = env("ACAS_REGISTRY");
  // The backend reads ACAS_ACCESS_TOKEN itself (its default token_env); without one, the
  // az CLI's token for the data-plane scope, as scripts/acas-live does.
  if (env("ACAS_ACCESS_TOKEN").empty())
    config["token_command"] = {"az", "account", "get-access-token", "--scope",
                               "https://dynamicsessions.io/.default", "--output", "json"};
  // The emulator: the backend still refuses http:// for anything but a loopback host, and
  // a local double answers at once, so poll it often (the service default is 3 s).
  if (config["endpoint"].get<std::string>().starts_with("http://")) {
    config["allow_insecure_loopback"] = true;
    config["poll_interval_seconds"] = 0.05;
  }
  return config;
}

const std::string kScript = R"sh(#!/bin/sh
set -eu
mkdir -p out
tail -n +2 orders.csv | awk -F, '{n++; s += $3} END {printf "%d orders, %d units\n", n, s}' > out/report.txt
tail -n +2 orders.csv | cut -d, -f2 | sort -u > out/customers.txt
cat out/report.txt
)sh";
const std::string kData = "id,customer,units\n1,ada,3\n2,lin,5\n3,ada,2\n";
const std::string kExpectedReport = "3 orders, 10 units\n";

}  // namespace

int main() {
  try {
    auto backend = PluginRegistry::global().create("acas", config_from_environment());
    std::cout << "loaded backend '" << backend->name() << "' (" << backend->isolation() << ")\n";

    // microvm meets the router's default floor: no LowerIsolationFloor anywhere.
    SandboxRouter router({backend});
    const SandboxSpec spec({.kind = "order-report",
                            .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                                      Capability::FilesList},
                            .egress = Egress::Closed});
    router.ensure_can_serve(spec);

    BlockingRunner run;
    const SandboxKey key = sample::own_key("sample-06", "analyst");
    ExecResult result;
    std::size_t listed = 0;
    std::string report;
    const bool clean = sample::run_then_dispose(run, router, key, [&] {
      auto sandbox = run([&] { return router.acquire(key, spec); });
      std::cout << "acquired sandbox " << sandbox->instance_id() << " (work dir " << sandbox->storage_base() << ")\n";
      run([&] { return sandbox->write_file("orders.csv", kData); });
      run([&] { return sandbox->write_file("report.sh", kScript); });
      result = run([&] { return sandbox->exec(std::vector<std::string>{"sh", "report.sh"}); });
      std::cout << "ran report.sh: exit " << result.exit_code << ", stdout: " << result.stdout_text();
      if (!result.stderr_bytes.empty()) std::cout << "stderr: " << result.stderr_text();
      if (result.exit_code != 0) return;
      const auto entries = run([&] { return sandbox->list_dir("out"); });
      for (const auto& entry : entries)
        std::cout << "  listed " << entry.path << " (" << entry.size_bytes.value_or(-1) << " bytes)\n";
      listed = entries.size();
      report = run([&] { return sandbox->read_file("out/report.txt", ".", 1 << 20); });
      std::cout << "read back out/report.txt: " << report;
    });

    const bool ok = clean && result.exit_code == 0 && listed == 2 && report == kExpectedReport;
    if (!ok) std::cerr << "unexpected result (see above)\n";
    return ok ? 0 : 1;
  } catch (const maf::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
