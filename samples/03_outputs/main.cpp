// Collect a workload's declared outputs into a host directory through the file-system sink,
// then show one refusal: a file over the spec's per-file cap is refused from its stat, and
// nothing of that run is delivered.
//
// The in-process double stands in for a real sandbox so the sample runs anywhere; with a
// router and a real backend only the acquisition changes.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"  // reached by name: never in the umbrella header

namespace mx = maf::sandbox;

int main(int argc, char** argv) {
  const std::filesystem::path landing =
      argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::temp_directory_path() / "maf-sandbox-03-outputs";

  // What the workload left in its working directory.
  auto sandbox = std::make_shared<mx::testing::InProcessSandbox>(mx::testing::InProcessSandboxOptions{
      .seed_files = {{"out/report.md", std::string("# Quarterly report\n")},
                     {"out/chart.png", std::string("\x89PNG\r\n\x1a\n", 8)},
                     {"scratch/state.json", std::string("{\"step\": 3}")},
                     {"out/huge.log", std::string(4096, 'x')}}});

  // What the workload kind declared it leaves behind.
  const mx::SandboxSpec spec({
      .kind = "report-writer",
      .declared_outputs = {{.path = "out/report.md", .media_type = "text/markdown"},
                           {.path = "out/chart.png", .media_type = "image/png", .name = "charts/q3.png"},
                           // CONSUME: counted against the caps, read by the kind itself, never landed.
                           {.path = "scratch/state.json", .disposition = mx::OutputDisposition::Consume},
                           {.path = "out/missing.csv", .required = false}},
      .files_out = mx::TransferLimits(/*max_bytes_per_file=*/1024, /*max_total_bytes=*/8192, /*max_files=*/8),
  });

  mx::BlockingRunner run;
  auto sink = mx::make_file_system_sink(landing);
  try {
    for (const auto& a : run([&] { return mx::collect_outputs(*sandbox, spec, sink); }))
      std::cout << "landed: " << a.display << "  ->  " << a.handle.value_or("?") << "\n";
  } catch (const maf::Error& e) {
    std::cerr << "unexpected refusal: " << e.what() << "\n";
    return EXIT_FAILURE;
  }

  // The same kind now also declares a log that is over its 1 KiB per-file cap.
  auto fields = spec.fields();
  fields.declared_outputs.push_back({.path = "out/huge.log"});
  const mx::SandboxSpec greedy(fields);
  const auto read_before = sandbox->hook_counts().bytes_read;
  try {
    run([&] { return mx::collect_outputs(*sandbox, greedy, sink); });
    std::cerr << "the over-cap log was not refused\n";
    return EXIT_FAILURE;
  } catch (const mx::SandboxTransferCapExceeded& e) {
    std::cout << "refused: " << e.what() << "\n";
    std::cout << "bytes read from the sandbox by the refused run: "
              << sandbox->hook_counts().bytes_read - read_before << "\n";
  }
  return EXIT_SUCCESS;
}
