// maf-sandbox-conformance: load a backend through the registry, run the suites against a
// fresh subject, print one row per probe, exit non-zero on any red probe or refused suite.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <iostream>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "maf/sandbox/conformance/runner.hpp"
#include "maf/sandbox/credential_source.hpp"
#include "maf/sandbox/registry.hpp"
#include "maf/sandbox/spec_json.hpp"

namespace {

constexpr const char* kUsage =
    "usage: maf-sandbox-conformance --backend NAME [--config FILE.json] [--suite S]... [--json]\n"
    "                               [--image IMAGE] [--work-dir GUEST_PATH]\n"
    "                               [--allowed-url URL --denied-url URL] [--raw-frame-tool PATH]\n"
    "                               [--exec-timeout SECONDS] [--egress-l7 FILE.json]\n"
    "                               [--attached-identity FILE.json]\n"
    "\n"
    "Runs the conformance suites against backend NAME (found through MAF_SANDBOX_PLUGIN_PATH and\n"
    "the default plugin directories). Suites: files_out, read_cap, files_in, files_delete, egress,\n"
    "egress_closed, host_integrity, cleanup, exec, egress_l7, attached_identity; without --suite every suite whose gate the\n"
    "backend meets runs.\n"
    "--egress-l7: EGRESS_L7's targets and the allowlist of its own sandbox, as JSON: {\"allow\": [entries as\n"
    "a spec's egress_allow, rules included], \"allowed_url\", \"refused_path_url\", \"refused_method\",\n"
    "\"traversal_base\", \"mixed_case_url\", \"other_host\", \"untrusted_url\" (optional)}.\n"
    "--attached-identity: ATTACHED_IDENTITY's targets, as JSON: {\"allow\": [egress_allow entries],\n"
    "\"credential\": {one attached_identity entry of a spec}, \"bound_url\", \"other_url\" (HTTPS, 2xx),\n"
    "\"upstream_logs\": [files the upstreams log request headers to], \"search\": [host paths that must\n"
    "not hold the value]}. The tool attaches a credential source answering a random value it makes\n"
    "(never in any argv, environment or file of its own) and searches the listed paths and every\n"
    "other process's /proc/<pid>/cmdline and environ for it (AI-4).\n"
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

std::string text_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// `--attached-identity FILE` (kUsage); throws naming what is missing or malformed.
maf::sandbox::conformance::AttachedIdentityRun read_attached_identity(const std::string& file) {
  namespace fs = std::filesystem;
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read --attached-identity file '" + file + "'");
  const auto j = nlohmann::json::parse(in);
  maf::sandbox::conformance::AttachedIdentityRun run;
  // Read as a spec reads them: one parser, one set of refusals (a host outside the list...).
  const auto spec = maf::sandbox::spec_from_json(nlohmann::json{{"kind", "ai"},
                                                                {"egress", "allowlist"},
                                                                {"egress_allow", j.at("allow")},
                                                                {"attached_identity", {j.at("credential")}}});
  run.allow = spec.egress_allow();
  run.credentials = spec.attached_identity();
  auto& t = run.targets;
  t.bound_url = j.at("bound_url").get<std::string>();
  t.other_url = j.at("other_url").get<std::string>();
  t.env = run.credentials.front().env();
  std::random_device rd;
  t.value = "maf-ai-value-" + std::to_string(rd()) + std::to_string(rd()) + std::to_string(rd());
  const auto logs = j.at("upstream_logs").get<std::vector<std::string>>();
  t.upstream_log = [logs] {
    std::string all;
    for (const auto& f : logs) all += text_of(f);
    return all;
  };
  const auto search = j.value("search", std::vector<std::string>{});
  t.where_found = [search](const std::string& value) {
    std::vector<std::string> found;
    auto look = [&](const fs::path& f, const std::string& what) {
      if (text_of(f).find(value) != std::string::npos) found.push_back(what);
    };
    for (const auto& root : search) {
      std::error_code ec;
      if (fs::is_regular_file(root, ec)) look(root, root);
      for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && !it->is_symlink(ec)) look(it->path(), it->path().string());
    }
    const std::string self = std::to_string(::getpid());
    std::error_code ec;
    for (const auto& p : fs::directory_iterator("/proc", ec)) {
      const std::string pid = p.path().filename().string();
      if (pid == self || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      look(p.path() / "cmdline", "/proc/" + pid + "/cmdline");
      look(p.path() / "environ", "/proc/" + pid + "/environ");
    }
    return found;
  };
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
      else if (a == "--attached-identity") options.attached_identity = read_attached_identity(value());
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
    if (options.attached_identity) {
      // The value this run made: the backend's proxy gets it, nothing else should.
      const std::string value = options.attached_identity->targets.value;
      backend->attach_credential_source([value](const CredentialRequest&) { return SecretValue(value); });
    }
    const auto report = run_conformance(*backend, options);
    if (json) std::cout << to_json(report).dump(2) << "\n";
    else std::cout << render_table(report);
    return report.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "maf-sandbox-conformance: " << e.what() << "\n";
    return 2;
  }
}
