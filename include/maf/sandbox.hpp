#pragma once
/// @file sandbox.hpp
/// The light entry: what a host needs to state a policy, describe a workload and run it
/// through the five blocking calls — SandboxHost, BlockingSandbox, the vocabulary and the
/// errors. No Asio, no JSON library: a first program compiles in a fraction of the time the
/// coroutine API costs (bench/RESULTS.md, "Compile cost").
///
/// The coroutine API — SandboxRouter, Sandbox, SandboxBackend, collect_outputs, sinks,
/// SandboxHandle, the BlockingRunner — is <maf/sandbox/async.hpp>, which includes this one.
/// The other front doors: <maf/sandbox/tools.hpp> (the agent layer), <maf/sandbox/authoring.hpp>
/// (the backend author's kit: plugin ABI, registry, support/), <maf/sandbox/fwd.hpp> (forward
/// declarations); the OTLP exporter and the test double are libraries of their own, each
/// with its header (otel.hpp, testing/in_process.hpp).

#include "maf/sandbox/artifact.hpp"
#include "maf/sandbox/blocking_sandbox.hpp"
#include "maf/sandbox/call_defaults.hpp"
#include "maf/sandbox/capability.hpp"
#include "maf/sandbox/command.hpp"
#include "maf/sandbox/declared_output.hpp"
#include "maf/sandbox/disposal.hpp"
#include "maf/sandbox/egress.hpp"
#include "maf/sandbox/entry.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/exec_result.hpp"
#include "maf/sandbox/host.hpp"
#include "maf/sandbox/isolation.hpp"
#include "maf/sandbox/key.hpp"
#include "maf/sandbox/limits.hpp"
#include "maf/sandbox/os_family.hpp"
#include "maf/sandbox/router_options.hpp"
#include "maf/sandbox/spec.hpp"
#include "maf/sandbox/version.hpp"
