// libFuzzer target for the request-path canonicaliser and path-pattern grammar of C-10
// (include/maf/sandbox/egress_path.hpp), which the spec and the egress proxy share: the
// proxy runs it on every request path a guest sends through a terminated host.
//
// Invariants: nothing throws; a canonical path starts with '/', is its own canonical form
// (idempotent), holds no empty or dot segment and no escape of '/', '.', '\\' or NUL; a
// valid pattern matches its own literal part, and a valid exact pattern matches nothing
// else of the input.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "maf/sandbox/egress_path.hpp"

using namespace maf::sandbox;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto r = canonicalize_request_path(input);
  if (r.value) {
    const std::string& path = r.value->path;
    if (path.empty() || path.front() != '/') std::abort();
    const auto again = canonicalize_request_path(path);
    if (!again.value || again.value->path != path || again.value->query) std::abort();
    for (std::string_view bad : {"//", "/./", "/../", "%2F", "%2E", "%5C", "%00", "%2f", "%2e", "%5c"})
      if (path.find(bad) != std::string::npos) std::abort();
    if (path.size() >= 2 && (path.ends_with("/.") || path.ends_with("/.."))) std::abort();
    if (path.find('?') != std::string::npos || path.find('#') != std::string::npos) std::abort();
  } else if (r.problem.empty()) {
    std::abort();
  }
  if (!egress_path_pattern_problem(input)) {
    std::string_view literal = input;
    if (literal.back() == '*') literal.remove_suffix(1);
    if (!egress_path_matches(input, literal)) std::abort();
    if (input.back() != '*' && input.back() != '/' && egress_path_matches(input, std::string(literal) + "x")) std::abort();
  }
  return 0;
}
