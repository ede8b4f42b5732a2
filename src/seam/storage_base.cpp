#include "seam/storage_base.hpp"

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/paths.hpp"

namespace maf::sandbox::detail {

std::string settle_storage_base(const std::string& who, const SandboxSpec& spec) {
  std::string base = spec.work_dir().value_or(kDefaultWorkDir);
  const bool absolute = !base.empty() && base[0] == '/' && base.find('\\') == std::string::npos;
  const std::string normal = absolute ? normalize_guest_path(base) : std::string();
  if (!absolute || normal != base)
    throw ValueError(who + ": work_dir '" + base + "' of workload kind '" + spec.kind() +
                     "' must be an absolute, normalised POSIX guest path" +
                     (absolute ? " ('" + normal + "')" : std::string()));
  if (base == "/")
    throw ValueError(who + ": work_dir '" + base + "' of workload kind '" + spec.kind() +
                     "' is the guest's root; a storage base must be a directory below it, which the sandbox owns");
  return base;
}

}  // namespace maf::sandbox::detail
