#pragma once
// The seven-digit process tag the probes put in their sleepers' command lines
// (conformance/src/probe_support.hpp `process_tag`), for the tests that clean up what a
// broken double let escape: matching the whole tag, never a remainder of the pid, is what
// keeps such a cleanup from killing a concurrent test's program.
#include <unistd.h>

#include <string>

namespace maf::sandbox::conformance::test {

inline std::string process_tag() {
  std::string digits = std::to_string(::getpid());
  return std::string(digits.size() < 7 ? 7 - digits.size() : 0, '0') + digits;
}

}  // namespace maf::sandbox::conformance::test
