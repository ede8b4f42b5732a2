// This backend's voice: every message it throws or logs starts with "backend 'wslc': "
// (support/backend_message.hpp, one spelling for every backend).
#pragma once

#include "maf/sandbox/support/backend_message.hpp"

namespace maf::sandbox::wslc {

inline constexpr support::BackendVoice said{"wslc"};

}  // namespace maf::sandbox::wslc
