// This backend's voice: every message it throws or logs starts with "backend 'acas': "
// (support/backend_message.hpp, one spelling for every backend).
#pragma once

#include "maf/sandbox/support/backend_message.hpp"

namespace maf::sandbox::acas {

inline constexpr support::BackendVoice said{"acas"};

}  // namespace maf::sandbox::acas
