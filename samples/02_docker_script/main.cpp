// A model-written shell script runs in a Docker container; what it printed and a file it
// wrote come back to the host, and the container is gone afterwards.
//
//  1. load the `docker` backend plugin through the registry (its factory asks the engine
//     which OS it runs: posix);
//  2. build a router whose isolation floor is lowered to `container` explicitly;
//  3. show a refusal: a spec asking for ALLOWLIST egress is refused before anything is
//     created, because this backend was configured without an egress proxy image;
//  4. acquire, write the data and the script, run it, read back its stdout and the report
//     it wrote;
//  5. dispose (on failure too), then check by label that nothing of the conversation is left.
//
// The image is the project's local busybox test image (scripts/docker-test-images): there
// is no Python in it and no registry behind it, so the script is plain POSIX sh + awk.
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

const std::string kImage = "maf-sandbox-test/busybox:1";

// What a model might write: totals per region on stdout, a report file for the host.
const std::string kScript = R"sh(#!/bin/sh
set -eu
rows=$(tail -n +2 sales.csv | wc -l)
echo "read $rows rows"
tail -n +2 sales.csv | awk -F, '{t[$1] += $2} END {for (r in t) print r, t[r]}' | sort > report.txt
echo "wrote report.txt ($(wc -l < report.txt) regions)"
)sh";
const std::string kData = "region,amount\nnorth,120\nsouth,80\nnorth,30\neast,5\n";
const std::string kExpectedReport = "east 5\nnorth 150\nsouth 80\n";

}  // namespace

int main() {
  try {
    // The project's scripts name another docker client through MAF_SANDBOX_DOCKER.
    nlohmann::json config = nlohmann::json::object();
    if (const char* client = std::getenv("MAF_SANDBOX_DOCKER"); client && *client) config["docker_path"] = client;
    auto backend = PluginRegistry::global().create("docker", config);
    std::cout << "loaded backend '" << backend->name() << "' (" << backend->isolation() << ", os families "
              << backend->declarations().os_families.to_string("none") << ")\n";

    // container is below the default floor (microvm): a host lowers it on purpose.
    SandboxRouter router({backend}, RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{}));

    // The honest refusal: no egress_proxy_image was configured, so the backend declares
    // only CLOSED and a workload that wants pypi.org is refused up front — nothing is created.
    const SandboxSpec wants_network({.kind = "pip-install",
                                     .image = kImage,
                                     .egress_allow = {"pypi.org"},
                                     .egress = Egress::Allowlist});
    bool refused = false;
    try {
      router.ensure_can_serve(wants_network);
    } catch (const SandboxEgressNotEnforced& refusal) {
      refused = true;
      std::cout << "refused before anything ran: " << refusal.what() << "\n";
    }

    const SandboxSpec spec({.kind = "sales-report",
                            .image = kImage,
                            .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                            .egress = Egress::Closed});
    router.ensure_can_serve(spec);

    BlockingRunner run;
    const SandboxKey key = sample::own_key("sample-02", "analyst");
    ExecResult result;
    std::string report;
    const bool clean = sample::run_then_dispose(run, router, key, [&] {
      auto sandbox = run([&] { return router.acquire(key, spec); });
      std::cout << "acquired a container (instance " << sandbox->instance_id().substr(0, 12) << ", work dir "
                << sandbox->storage_base() << ")\n";
      run([&] { return sandbox->write_file("sales.csv", kData); });
      run([&] { return sandbox->write_file("analyse.sh", kScript); });
      result = run([&] { return sandbox->exec(std::vector<std::string>{"sh", "analyse.sh"}); });
      std::cout << "ran analyse.sh: exit " << result.exit_code << ", stdout:\n" << result.stdout_text();
      if (!result.stderr_bytes.empty()) std::cout << "stderr:\n" << result.stderr_text();
      if (result.exit_code != 0) return;
      report = run([&] { return sandbox->read_file("report.txt", ".", 1 << 20); });
      std::cout << "read back report.txt:\n" << report;
    });

    const bool ok = refused && clean && result.exit_code == 0 && report == kExpectedReport;
    if (!ok) std::cerr << "unexpected result (see above)\n";
    return ok ? 0 : 1;
  } catch (const maf::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
