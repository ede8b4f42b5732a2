// This backend's voice: every message it throws or logs starts with "backend 'process': "
// (support/backend_message.hpp, one spelling for every backend).
#pragma once

#include "maf/sandbox/support/backend_message.hpp"

namespace maf::sandbox::process {

inline constexpr support::BackendVoice said{"process"};

}  // namespace maf::sandbox::process
