// This backend's voice: every message it throws or logs starts with "backend 'docker': "
// (support/backend_message.hpp, one spelling for every backend).
#pragma once

#include "maf/sandbox/support/backend_message.hpp"

namespace maf::sandbox::docker {

inline constexpr support::BackendVoice said{"docker"};

}  // namespace maf::sandbox::docker
