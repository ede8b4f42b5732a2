// libFuzzer target for the two gates every guest-named byte passes: artifact-name
// validation (C-81) and guest path confinement (C-95, C-96, C-99). Invariants: every input is
// accepted or refused with the library's own error types (never another exception, never a
// crash), an accepted artifact name is valid UTF-8 of at most 255 bytes, relative, with no empty, "." or ".." segment, and a
// confined path always lies inside its working directory.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/paths.hpp"

using namespace maf::sandbox;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    validate_artifact_name(input);
    if (!is_valid_utf8(input) || input.size() > kMaxArtifactNameBytes || input.empty() || input[0] == '/')
      std::abort();
    for (std::size_t start = 0;;) {  // no segment is empty, "." or ".."
      const auto end = input.find('/', start);
      const auto segment = input.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
      if (segment.empty() || segment == "." || segment == "..") std::abort();
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
  } catch (const SandboxArtifactNameInvalid&) {
  }
  (void)portable_name(input);

  // Split the input into a working directory and a path at the first NUL.
  const auto split = input.find('\0');
  const std::string wd = "/" + std::string(input.substr(0, split == std::string_view::npos ? 0 : split));
  const std::string path(split == std::string_view::npos ? input : input.substr(split + 1));
  try {
    const std::string resolved = confine_resolve_guest_path(path, wd);
    if (!guest_path_relative_to(resolved, normalize_guest_path(wd))) std::abort();
  } catch (const ValueError&) {
  }
  try {
    const std::string resolved = resolve_working_directory(path, wd);
    if (path.empty() || path[0] != '/') {
      if (!guest_path_relative_to(resolved, normalize_guest_path(wd))) std::abort();
    }
  } catch (const ValueError&) {
  }
  (void)guest_path_and_ancestors(path, wd);
  return 0;
}
