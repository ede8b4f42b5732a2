#pragma once
/// @file tools.hpp
/// The agent layer's front door: everything a host needs to hand a model tools that run in
/// sandboxes (docs/tools.md) — the tool contract, `sandboxed_tool` and its session, call
/// admission and the cleanup ladder, file provenance and content labels, host tools the
/// guest calls back through (docs/host-tools.md) and background programs
/// (docs/background.md); the standard tools (run_command, write_file, read_file, list_files,
/// collect_outputs, run_code) and the blocking Conversation over a SandboxHost. Over
/// <maf/sandbox/async.hpp>, which it includes. A blocking host that only needs a conversation
/// includes <maf/sandbox/conversation.hpp> alone: no Asio.
///
/// The OTLP exporter (<maf/sandbox/otel.hpp>, maf::sandbox-otel) and the test double
/// (<maf/sandbox/testing/in_process.hpp>, maf::sandbox-testing) are libraries of their own
/// and are included by name.

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/background.hpp"
#include "maf/sandbox/between_calls.hpp"
#include "maf/sandbox/call_admission.hpp"
#include "maf/sandbox/cleanup.hpp"
#include "maf/sandbox/content_labels.hpp"
#include "maf/sandbox/conversation.hpp"
#include "maf/sandbox/file_provenance.hpp"
#include "maf/sandbox/host_tool_aggregate.hpp"
#include "maf/sandbox/host_tools.hpp"
#include "maf/sandbox/host_tools_over_exec.hpp"
#include "maf/sandbox/interpreter_context.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/standard_tools.hpp"
#include "maf/sandbox/tool.hpp"
