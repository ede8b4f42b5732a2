// libFuzzer target: the wslc backend's reader of `wslc container list --format json`
// (backends/wslc/src/container_list.hpp, wslc C-24…C-26, T-7) on arbitrary bytes. The
// reader is pure, so fuzz/CMakeLists.txt compiles backends/wslc/src/container_list.cpp
// straight in (the fuzz preset builds no backends).
//
// Invariants: it never throws (junk selects nothing, never a guess); every entry carries at
// least one name and none is empty (an empty name would select nothing real); find_exact
// finds each listed name, in an entry that holds it; the reading is the same with CRLF or
// LF line ends (wslc prints CRLF, C-7).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "line_ends.hpp"
#include "maf/sandbox/wslc/container_list.hpp"

using namespace maf::sandbox::wslc;

namespace {

bool same(const std::vector<ListedContainer>& a, const std::vector<ListedContainer>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].names != b[i].names || a[i].id != b[i].id || a[i].state != b[i].state) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<ListedContainer> listed;
  try {
    listed = parse_container_list(text);
  } catch (...) {
    std::abort();  // C-24…C-26: a listing that cannot be read selects nothing
  }
  for (const auto& entry : listed) {
    if (entry.names.empty()) std::abort();
    for (const auto& name : entry.names) {
      if (name.empty()) std::abort();
      const ListedContainer* found = find_exact(listed, name);
      if (!found) std::abort();
      bool holds = false;
      for (const auto& n : found->names) holds = holds || n == name;
      if (!holds) std::abort();
    }
  }
  // Line ends: wslc adds a CR before each LF. Outside a JSON string that CR is whitespace;
  // inside one a raw CR or LF is invalid either way. So an input whose every CR precedes a
  // LF reads the same with those CRs removed.
  if (const auto lf = maf_fuzz::with_lf_line_ends(text); lf && !same(listed, parse_container_list(*lf))) std::abort();
  return 0;
}
