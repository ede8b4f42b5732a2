#pragma once
// Reading a conformance run in the Docker engine tests: the probe ids of one outcome, and
// every probe that did not pass reported beside the failing check.
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <maf/sandbox/conformance/conformance.hpp>

namespace docker_test {

inline std::set<std::string> ids(const std::vector<maf::sandbox::conformance::ProbeResult>& results,
                                 maf::sandbox::conformance::Outcome outcome) {
  std::set<std::string> out;
  for (const auto& r : results)
    if (r.outcome == outcome) out.insert(r.id);
  return out;
}

inline void report(const std::vector<maf::sandbox::conformance::ProbeResult>& results) {
  for (const auto& r : results)
    if (!r.passed()) UNSCOPED_INFO(r.id << " " << to_string(r.outcome) << ": " << r.message);
}

}  // namespace docker_test
