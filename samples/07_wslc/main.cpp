// A script runs in a wslc container (WSL 2.9.4+'s container CLI) — on Linux through the
// project's shim, an executable named `wslc` that speaks wslc's dialect to the local Docker
// engine. The code is what a Windows host runs against the real `wslc`.
//
//  1. load the `wslc` backend plugin through the registry, pointed at the wslc to use;
//  2. build a router whose isolation floor is lowered to `container` explicitly;
//  3. show a refusal: wslc declares exactly {exec, files_in}, so a workload that wants to
//     read a file back (files_out) is refused before anything is created;
//  4. acquire, write the data and the script, run it; the results come back the way this
//     backend allows — through exec's stdout (the report it wrote is `cat` by a second exec);
//  5. dispose, then check by label that nothing of the conversation is left.
//
// Usage: sample_wslc [WSLC]   (default `wslc`, searched on PATH; the ctest test passes the shim)
#include <maf/sandbox/async.hpp>
#include <maf/sandbox/registry.hpp>
#include <maf/sandbox/sync.hpp>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "conversation.hpp"

using namespace maf::sandbox;

namespace {

// busybox plus /usr/bin/test, which the backend's engine stat needs
// (backends/wslc/tests/build-test-image.sh builds it locally).
const std::string kImage = "maf-sandbox-test/wslc-busybox:1";

const std::string kScript = R"sh(#!/bin/sh
set -eu
awk -F, 'NR > 1 && $2 !~ /^[0-9]+$/ {bad++; print "line " NR ": not a number: " $2} END {print (bad + 0) " bad rows"}' \
  readings.csv > check.txt
echo "checked $(($(wc -l < readings.csv) - 1)) rows"
)sh";
const std::string kData = "sensor,value\na,12\nb,n/a\nc,7\n";
const std::string kExpectedReport = "line 3: not a number: n/a\n1 bad rows\n";

}  // namespace

int main(int argc, char** argv) {
  try {
    // A path with a slash is made absolute: the backend runs some wslc calls from a private
    // temporary directory (its file stat), where a relative path would name nothing.
    std::string wslc = argc > 1 ? argv[1] : "wslc";
    if (wslc.find('/') != std::string::npos) wslc = std::filesystem::absolute(wslc).string();
    // The factory makes no wslc call; the first acquire checks `wslc version` (>= 2.9.4).
    auto backend = PluginRegistry::global().create("wslc", {{"wslc_path", wslc}});
    std::cout << "loaded backend '" << backend->name() << "' (" << backend->isolation() << ", capabilities "
              << backend->declarations().capabilities.to_string() << ") driving " << wslc << "\n";

    // container is below the default floor (microvm): a host lowers it on purpose.
    SandboxRouter router({backend}, RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{}));

    // The honest refusal: reading a file back needs files_out, which wslc does not declare.
    const SandboxSpec wants_files_back({.kind = "report-reader",
                                        .image = kImage,
                                        .requires_capabilities = {Capability::Exec, Capability::FilesIn,
                                                                  Capability::FilesOut}});
    bool refused = false;
    try {
      router.ensure_can_serve(wants_files_back);
    } catch (const SandboxCapabilityNotSupported& refusal) {
      refused = true;
      std::cout << "refused before anything ran: " << refusal.what() << "\n";
    }

    const SandboxSpec spec(
        {.kind = "csv-check", .image = kImage, .requires_capabilities = {Capability::Exec, Capability::FilesIn}});
    router.ensure_can_serve(spec);

    BlockingRunner run;
    const SandboxKey key = sample::own_key("sample-07", "checker");
    ExecResult result, report;
    const bool clean = sample::run_then_dispose(run, router, key, [&] {
      auto sandbox = run([&] { return router.acquire(key, spec); });
      std::cout << "acquired a wslc container (work dir " << sandbox->storage_base() << ")\n";
      run([&] { return sandbox->write_file("readings.csv", kData); });
      run([&] { return sandbox->write_file("check.sh", kScript); });
      result = run([&] { return sandbox->exec(std::vector<std::string>{"sh", "check.sh"}); });
      std::cout << "ran check.sh: exit " << result.exit_code << ", stdout: " << result.stdout_text();
      if (!result.stderr_bytes.empty()) std::cout << "stderr: " << result.stderr_text();
      // No files_out here: the report the script wrote comes back through exec.
      report = run([&] { return sandbox->exec(std::vector<std::string>{"cat", "check.txt"}); });
      std::cout << "check.txt, through exec:\n" << report.stdout_text();
    });

    const bool ok = refused && clean && result.exit_code == 0 && report.exit_code == 0 &&
                    report.stdout_text() == kExpectedReport;
    if (!ok) std::cerr << "unexpected result (see above)\n";
    return ok ? 0 : 1;
  } catch (const maf::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
