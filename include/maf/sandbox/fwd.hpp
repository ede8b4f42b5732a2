#pragma once
/// @file fwd.hpp
/// Forward declarations of the public types, for headers that only name them (a pointer, a
/// reference, a parameter of a declaration). Include the type's own header where it is used
/// whole. Light: no standard or third-party header at all. Kept in step with the definitions
/// by `headers_self-contained`, which compiles this header beside every definition's.

namespace maf::sandbox {

// Vocabulary (sandbox.hpp, the light entry).
enum class Capability;
enum class Cleanup;
enum class Egress;
enum class Isolation;
enum class OsFamily;
enum class ResourceBound;
class SandboxSpec;
struct SandboxKey;
struct CallerContext;
class TransferLimits;
class ResourceLimits;
class EgressRule;
struct DeclaredOutput;
struct Artifact;
struct SandboxEntry;
struct ExecRequest;
struct ExecResult;
struct BackendDeclarations;
struct RouterOptions;
struct LowerIsolationFloor;
class Command;
class SandboxHost;
class BlockingSandbox;

// The seam and policy (async.hpp).
class Sandbox;
class SandboxBackend;
class SandboxRouter;
class SandboxHandle;
class OutputSink;
class BlockingRunner;
class PluginRegistry;
struct ExecReport;
struct ExecStreamOptions;

// Observation (observer.hpp).
class SandboxObserver;
struct AcquisitionEvent;
struct ToolCallEvent;
struct ExecEvent;
struct TransferEvent;
struct NetworkDecisionEvent;
struct CleanupEvent;
struct HostToolDispatchEvent;
struct SnapshotEvent;

// The agent layer (tools.hpp).
struct ToolDefinition;
struct ToolCall;
struct ToolResult;
class SandboxedTool;
struct SandboxedToolOptions;
class SandboxToolSession;
class CallTicket;
struct AdmitOptions;
class HostToolRegistry;
class HostToolRun;
struct HostToolProgram;
struct HostToolProgramResult;
class BackgroundProcess;
struct BackgroundOptions;

}  // namespace maf::sandbox
