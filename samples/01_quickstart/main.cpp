// Quickstart: run model-written code in a bubblewrap sandbox and land its declared output.
//
//  1. load the `process` backend plugin by name (no engine needed) under a policy whose
//     isolation floor is lowered to os_process *explicitly* (SandboxHost);
//  2. check the workload, acquire a sandbox, write a CSV and a script into it, run it;
//  3. collect the declared output through a file-system sink into ./out;
//  4. dispose — the handle does it when it goes, on every path.
#include <maf/sandbox.hpp>  // the light entry: SandboxHost, BlockingSandbox, the vocabulary

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>  // only to write the backend's configuration

using namespace maf::sandbox;

int main(int argc, char** argv) {
  const std::filesystem::path out_dir = argc > 1 ? argv[1] : "out";
  try {
    // The backend keeps its sandboxes under a directory of our choosing (its configuration,
    // a JSON object). os_process is below the default floor (microvm): a host must lower it
    // on purpose.
    const auto state = std::filesystem::temp_directory_path() / "maf-sandbox-quickstart";
    SandboxHost host("process", RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}),
                     nlohmann::json{{"root", state.string()}}.dump());

    SandboxSpec spec({.kind = "csv-summary",
                      .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                      .declared_outputs = {{.path = "summary.txt", .media_type = "text/plain"}},
                      .egress = Egress::Closed});
    host.ensure_can_serve(spec);  // throws a typed refusal naming what does not fit
    std::cout << "policy: backend 'process' (os_process) may serve kind '" << spec.kind() << "' with closed egress\n";

    // The handle disposes the sandbox when it goes out of scope — on every path, the early
    // return and the exception included.
    BlockingSandbox sandbox = host.open({"demo-tenant", "conversation-1", "analyst", ""}, spec);
    std::cout << "acquired a sandbox for " << to_string(sandbox.key()) << "\n";

    sandbox.write("sales.csv", "region,amount\nnorth,120\nsouth,80\nnorth,30\n");
    sandbox.write("summarize.sh",
                  "#!/bin/sh\n"
                  "# a model-written script: totals per region\n"
                  "tail -n +2 sales.csv | awk -F, '{t[$1]+=$2} END {for (r in t) print r, t[r]}' "
                  "| sort > summary.txt\n"
                  "echo \"summarised $(($(wc -l < sales.csv) - 1)) rows\"\n");
    const ExecResult result = sandbox.run({"sh", "summarize.sh"});
    std::cout << "ran summarize.sh: exit " << result.exit_code << ", stdout: " << result.stdout_text();
    if (result.exit_code != 0) {
      std::cerr << "stderr: " << result.stderr_text();
      return 1;
    }

    const auto landed = sandbox.collect_into(std::filesystem::absolute(out_dir));
    for (const auto& artifact : landed)
      std::cout << "landed " << artifact.display << " at " << artifact.handle.value_or("?") << "\n";

    const bool disposed = sandbox.close();  // now, and say whether the backend confirmed it
    std::cout << (disposed ? "disposed the sandbox\n" : "disposal not confirmed (see the log)\n");
    return landed.size() == 1 && disposed ? 0 : 1;
  } catch (const SandboxPolicyRefusal& refusal) {
    std::cerr << "refused by policy: " << refusal.message() << "\n";
    return 3;
  } catch (const maf::Error& e) {
    std::cerr << "failed: " << e.what() << "\n";
    return 2;
  }
}
