// maf-sandbox-acas-emulator: the ACAS data-plane double as a stand-alone tool
// (docs/backends/acas.md). Prints its base URL on stdout once listening; SIGINT/SIGTERM
// delete every container it started.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include "emulator.hpp"

int main(int argc, char** argv) {
  using maf::sandbox::acas::emulator::Emulator;
  maf::sandbox::acas::emulator::EmulatorOptions options;
  auto usage = [] {
    std::cerr << "usage: maf-sandbox-acas-emulator [--port N] [--token T] [--control-token T] [--docker PATH]\n"
                 "         [--helper /path/to/static/busybox] [--catalogue FILE.json]\n"
                 "         [--group SUBSCRIPTION/RESOURCE_GROUP/SANDBOX_GROUP]\n";
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (a == "--port") options.port = static_cast<std::uint16_t>(std::stoi(v));
    else if (a == "--token") options.token = v;
    else if (a == "--control-token") options.control_token = v;
    else if (a == "--docker") options.docker = v;
    else if (a == "--helper") options.helper = v;
    else if (a == "--catalogue") {
      std::ifstream in(v);
      if (!in) {
        std::cerr << "cannot read " << v << "\n";
        return 2;
      }
      options.catalogue = nlohmann::json::parse(in);
    } else if (a == "--group") {
      auto s1 = v.find('/'), s2 = v.find('/', s1 + 1);
      if (s1 == std::string::npos || s2 == std::string::npos) return usage();
      options.subscription = v.substr(0, s1);
      options.resource_group = v.substr(s1 + 1, s2 - s1 - 1);
      options.sandbox_group = v.substr(s2 + 1);
    } else {
      return usage();
    }
  }
  try {
    Emulator emulator(options);
    emulator.run_foreground();
  } catch (const std::exception& e) {
    std::cerr << "maf-sandbox-acas-emulator: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
