#pragma once
// The command probes (D-24): what a spec needs verified in the guest before it is served.

#include <string>
#include <vector>

#include "maf/sandbox/capability.hpp"

namespace maf::sandbox::docker::detail {

/// The probes a spec needs, by the names their successes are remembered under
/// (memory.hpp): "host-tools" (which stands for "sh" too), else "sh" for exec; "rm".
std::vector<std::string> probe_names(CapabilitySet needs);

}  // namespace maf::sandbox::docker::detail
