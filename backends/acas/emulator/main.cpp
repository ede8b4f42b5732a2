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
  constexpr const char* kUsage =
      "usage: maf-sandbox-acas-emulator [--port N] [--token T] [--control-token T] [--docker PATH]\n"
      "         [--helper /path/to/static/busybox] [--catalogue FILE.json]\n"
      "         [--group SUBSCRIPTION/RESOURCE_GROUP/SANDBOX_GROUP]\n";
  auto usage = [&] {
    std::cerr << kUsage;
    return 2;
  };
  if (argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::cout << kUsage
              << "\nA local double of the ACAS data plane (acas.md section 4): each sandbox a Docker container.\n"
                 "Prints its base URL once listening; SIGINT/SIGTERM remove its containers.\n"
                 "Control plane (X-Emulator-Control: <control token> when one is set), under /_emulator:\n"
                 "  PUT  /config     listMode (array|nextLink), pageSize, nextLinkHostile (host|path|repeat),\n"
                 "                   createMode (running|creating|failing), createGets, createDelayMs,\n"
                 "                   deleteLatencyMs, deleteMissing, execOutputCap, fifoReadMaxMs,\n"
                 "                   strictApiVersion, apiVersion, audience, forbidFirst, forbiddenAliases,\n"
                 "                   throttle {route, every, retryAfter}, requireJsonBodyOnStopResume,\n"
                 "                   tokens {alias: token}, identity* and spClient* (token endpoints)\n"
                 "  POST /clock      {\"mode\": \"manual\"|\"real\"}, {\"advanceSeconds\": n} (manual; fires due\n"
                 "                   auto-suspend/auto-delete timers before it answers)\n"
                 "  POST /faults     route, method, sandbox, command, path, skip, times, afterEffect, delayMs and an\n"
                 "                   action: status | delay | drop (at: before-body|after-request|after-status|\n"
                 "                   mid-body) | reset | hang | trickle (chunkBytes, pauseMs) | mutate (delete,\n"
                 "                   set, wrap) | encoding (gzip)\n"
                 "  GET|DELETE /faults, GET /requests, GET /counters, GET /sandboxes, PUT /catalogue, POST /reset,\n"
                 "  POST /sandboxes/{id}/state {state, stoppedReason}, POST /sandboxes/{id}/docker-exec {script, root}\n"
                 "See docs/backends/acas.md.\n";
    return 0;
  }
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
