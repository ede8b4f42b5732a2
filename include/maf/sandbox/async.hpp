#pragma once
/// @file async.hpp
/// The coroutine API (Boost.Asio awaitables) over the light entry <maf/sandbox.hpp>:
/// SandboxRouter, Sandbox, SandboxBackend, collect_outputs and the sinks, the guest path
/// helpers, SandboxHandle, observers and effective_state, JSON specs, the blocking runner.
/// The agent layer is <maf/sandbox/tools.hpp>; a backend author's kit <maf/sandbox/authoring.hpp>. Asio's awaitable costs a consumer about 110k preprocessed lines,
/// which is why it is not in the light entry.

#include "maf/sandbox.hpp"

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/caller_context.hpp"
#include "maf/sandbox/credential_sources.hpp"
#include "maf/sandbox/effective_state.hpp"
#include "maf/sandbox/handle.hpp"
#include "maf/sandbox/live_egress.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/spec_json.hpp"
#include "maf/sandbox/stdin_stream.hpp"
#include "maf/sandbox/sync.hpp"
