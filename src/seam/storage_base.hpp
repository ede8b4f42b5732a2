#pragma once
// ACQ-2, written once: the storage base a spec asks for, for every backend's acquire
// (backend.cpp) and for the tool layer's attach (C-118), which refuses the same bases before
// any call runs.
#include <string>

#include "maf/sandbox/spec.hpp"

namespace maf::sandbox::detail {

/// The spec's work_dir, or kDefaultWorkDir. ValueError naming `who` ("backend 'x'",
/// "sandboxed_tool 'y'"), the workload kind and the value unless it is absolute, normalised,
/// free of backslashes and not "/" itself: a sandbox owns its base (RECLAIM and each call's
/// directory live under it), and no sandbox owns its guest's root.
std::string settle_storage_base(const std::string& who, const SandboxSpec& spec);

}  // namespace maf::sandbox::detail
