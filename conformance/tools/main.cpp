// maf-sandbox-conformance: load a backend through the registry, run the suites against a
// fresh subject, print one row per probe, exit non-zero on any red probe or refused suite.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "maf/sandbox/conformance/runner.hpp"
#include "maf/sandbox/registry.hpp"

namespace {

constexpr const char* kUsage =
    "usage: maf-sandbox-conformance --backend NAME [--config FILE.json] [--suite S]... [--json]\n"
    "                               [--image IMAGE] [--work-dir GUEST_PATH]\n"
    "                               [--allowed-url URL --denied-url URL] [--raw-frame-tool PATH]\n"
    "                               [--exec-timeout SECONDS]\n"
    "\n"
    "Runs the conformance suites against backend NAME (found through MAF_SANDBOX_PLUGIN_PATH and\n"
    "the default plugin directories). Suites: files_out, read_cap, files_in, files_delete, egress,\n"
    "egress_closed, host_integrity, cleanup, exec; without --suite every suite whose gate the backend meets\n"
    "runs.\n"
    "Exit 0: all green; 1: a probe failed; 2: a suite was refused, the harness failed, or usage.\n";

int usage_error(const std::string& message) {
  std::cerr << "maf-sandbox-conformance: " << message << "\n\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace maf::sandbox;
  using namespace maf::sandbox::conformance;
  std::string backend_name;
  std::optional<std::string> config_file, allowed_url, denied_url;
  bool json = false;
  RunnerOptions options;
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    for (std::size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= args.size()) throw ConformanceUsageError(a + " needs a value");
        return args[++i];
      };
      if (a == "--backend") backend_name = value();
      else if (a == "--config") config_file = value();
      else if (a == "--suite") options.suites.push_back(parse_suite(value()));
      else if (a == "--json") json = true;
      else if (a == "--work-dir") options.work_dir = value();
      else if (a == "--image") options.image = value();
      else if (a == "--allowed-url") allowed_url = value();
      else if (a == "--denied-url") denied_url = value();
      else if (a == "--exec-timeout") options.exec_timeout = std::chrono::seconds(std::stoul(value()));
      else if (a == "--raw-frame-tool") options.raw_frame_tool = value();
      else if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      } else throw ConformanceUsageError("unknown argument '" + a + "'");
    }
    if (backend_name.empty()) throw ConformanceUsageError("--backend is required");
    if (allowed_url.has_value() != denied_url.has_value())
      throw ConformanceUsageError("--allowed-url and --denied-url go together");
    if (allowed_url) options.egress = EgressTargets{*allowed_url, *denied_url, std::chrono::seconds(30)};
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }

  try {
    nlohmann::json config = nlohmann::json::object();
    if (config_file) {
      std::ifstream in(*config_file);
      if (!in) return usage_error("cannot read --config file '" + *config_file + "'");
      config = nlohmann::json::parse(in);
    }
    PluginRegistry registry;
    auto backend = registry.create(backend_name, config);
    const auto report = run_conformance(*backend, options);
    if (json) std::cout << to_json(report).dump(2) << "\n";
    else std::cout << render_table(report);
    return report.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "maf-sandbox-conformance: " << e.what() << "\n";
    return 2;
  }
}
