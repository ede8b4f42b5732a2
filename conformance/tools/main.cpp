// maf-sandbox-conformance: load a backend through the registry, run the suites against a
// fresh subject, print one row per probe, exit non-zero on any red probe or refused suite.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "maf/sandbox/conformance/runner.hpp"
#include "maf/sandbox/registry.hpp"
#include "maf/sandbox/spec_json.hpp"

namespace {

constexpr const char* kUsage =
    "usage: maf-sandbox-conformance --backend NAME [--config FILE.json] [--suite S]... [--json]\n"
    "                               [--image IMAGE] [--work-dir GUEST_PATH]\n"
    "                               [--allowed-url URL --denied-url URL] [--raw-frame-tool PATH]\n"
    "                               [--exec-timeout SECONDS] [--egress-l7 FILE.json]\n"
    "\n"
    "Runs the conformance suites against backend NAME (found through MAF_SANDBOX_PLUGIN_PATH and\n"
    "the default plugin directories). Suites: files_out, read_cap, files_in, files_delete, egress,\n"
    "egress_closed, host_integrity, cleanup, exec, egress_l7; without --suite every suite whose gate the\n"
    "backend meets runs.\n"
    "--egress-l7: EGRESS_L7's targets and the allowlist of its own sandbox, as JSON: {\"allow\": [entries as\n"
    "a spec's egress_allow, rules included], \"allowed_url\", \"refused_path_url\", \"refused_method\",\n"
    "\"traversal_base\", \"mixed_case_url\", \"other_host\", \"untrusted_url\" (optional)}.\n"
    "Exit 0: all green; 1: a probe failed; 2: a suite was refused, the harness failed, or usage.\n";

int usage_error(const std::string& message) {
  std::cerr << "maf-sandbox-conformance: " << message << "\n\n" << kUsage;
  return 2;
}

/// `--egress-l7 FILE` (kUsage); throws naming what is missing or malformed.
maf::sandbox::conformance::EgressL7Run read_egress_l7(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read --egress-l7 file '" + file + "'");
  const auto j = nlohmann::json::parse(in);
  maf::sandbox::conformance::EgressL7Run run;
  // The entries are read as a spec reads them: one parser, one set of refusals.
  run.allow = maf::sandbox::spec_from_json(nlohmann::json{{"kind", "l7"}, {"egress", "allowlist"},
                                                          {"egress_allow", j.at("allow")}})
                  .egress_allow();
  auto& t = run.targets;
  t.allowed_url = j.at("allowed_url").get<std::string>();
  t.refused_path_url = j.at("refused_path_url").get<std::string>();
  t.refused_method = j.at("refused_method").get<std::string>();
  t.traversal_base = j.at("traversal_base").get<std::string>();
  t.mixed_case_url = j.value("mixed_case_url", "");
  t.other_host = j.at("other_host").get<std::string>();
  if (j.contains("untrusted_url")) t.untrusted_url = j.at("untrusted_url").get<std::string>();
  return run;
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
      else if (a == "--egress-l7") options.egress_l7 = read_egress_l7(value());
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
