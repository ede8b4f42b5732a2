#pragma once
/// @file sandbox.hpp
/// Umbrella header: the public core of maf-sandbox. The in-process test double
/// (maf/sandbox/testing/in_process.hpp), the blocking facade (sync.hpp), the plugin registry
/// and the backend-author support headers are included by name, not from here.

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/caller_context.hpp"
#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/command.hpp"
#include "maf/sandbox/declarations.hpp"
#include "maf/sandbox/declared_output.hpp"
#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/entry.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/isolation.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/limits.hpp"
#include "maf/sandbox/os_family.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/spec.hpp"
