#pragma once
/// @file errors.hpp
/// The whole exception tree of maf-sandbox (C-105), in one header.
///
/// The Python family catches by built-in bases (`ValueError`, `OSError`, ...), and core
/// behaviour depends on that lineage (e.g. collect_outputs turns any OSError into
/// SandboxOutputUnreachable). The C++ tree reproduces the lineage under one root,
/// `maf::sandbox::Error` (also reachable as `maf::Error`), so a host can catch every library
/// failure at one base. Cancellation is deliberately *outside* the tree (C-106).
///
/// Every message names the backend, the workload kind and the value that failed; the
/// builders live at the throw sites, the types here only carry the text.

#include <stdexcept>
#include <string>
#include <utility>

namespace maf::sandbox {

/// Root of every failure the library reports.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

#define MAF_SANDBOX_DEFINE_ERROR(Name, Base)                                  \
  class Name : public Base {                                                  \
  public:                                                                     \
    explicit Name(const std::string& message) : Base(message) {}              \
  }

/// "The policy said no": every refusal of the router's checks (C-65, C-68) and a backend's
/// acquire-time probe refusal (C-54) is also one of these, so a host catches them all at one
/// type — `catch (const SandboxPolicyRefusal& r)` — while the Python lineage (a floor refusal
/// is a PermissionError, a capability the backend lacks a RuntimeError) stays on the other
/// base. A mixin, not an Error: the tree keeps a single root.
class SandboxPolicyRefusal {
public:
  virtual ~SandboxPolicyRefusal() = default;
  /// The refusal's text, the same as what() of the error it is part of.
  virtual const char* message() const noexcept = 0;

protected:
  SandboxPolicyRefusal() = default;
  SandboxPolicyRefusal(const SandboxPolicyRefusal&) = default;
  SandboxPolicyRefusal& operator=(const SandboxPolicyRefusal&) = default;
};

#define MAF_SANDBOX_DEFINE_REFUSAL(Name, Base)                                \
  class Name : public Base, public SandboxPolicyRefusal {                     \
  public:                                                                     \
    explicit Name(const std::string& message) : Base(message) {}              \
    const char* message() const noexcept override { return this->what(); }    \
  }

/// A value was refused: an unknown enum string, an invalid spec, a path that escapes its
/// working directory (a *confinement refusal*).
MAF_SANDBOX_DEFINE_ERROR(ValueError, Error);
/// A command's own environment was refused (docs/exec-input.md ENV-2, ENV-3): the message
/// names the variable, never its value.
MAF_SANDBOX_DEFINE_ERROR(SandboxEnvironmentRefused, ValueError);
/// A host tool without a declaration, registered where the registry requires one
/// (docs/host-tools.md, HT-R2).
MAF_SANDBOX_DEFINE_ERROR(HostToolNotDeclared, ValueError);
/// A host tool whose identity the registry does not allow, or a USER tool without the
/// host's mint callback (docs/host-tools.md, HT-R3).
MAF_SANDBOX_DEFINE_ERROR(HostToolIdentityNotAllowed, ValueError);

/// Something looked up by name is not there.
MAF_SANDBOX_DEFINE_ERROR(LookupError, Error);
/// No backend is configured, or the selected name is not registered (C-62, C-69).
MAF_SANDBOX_DEFINE_ERROR(NoSandboxBackend, LookupError);

MAF_SANDBOX_DEFINE_ERROR(RuntimeError, Error);
/// The method's capability is not declared by the backend (C-35).
MAF_SANDBOX_DEFINE_ERROR(NotImplementedError, RuntimeError);
/// A previous call's cleanup of this key failed, so the router refuses to serve it until a
/// disposal of the named target lands (docs/tools.md "Unclean keys"); names key and target.
MAF_SANDBOX_DEFINE_ERROR(SandboxKeyUnclean, RuntimeError);
/// A tool body's accessor refused (C-119): what() is the fixed sentence the model is given;
/// `SandboxedTool::invoke` turns it into an is_error result.
MAF_SANDBOX_DEFINE_ERROR(SandboxToolRefused, RuntimeError);
/// The spec requires a capability the backend does not declare or cannot serve (C-65 #4, C-54).
MAF_SANDBOX_DEFINE_REFUSAL(SandboxCapabilityNotSupported, RuntimeError);
/// The host's credential source failed or answered nothing for a credential (CRED-4); the
/// message names the credential, never a value.
MAF_SANDBOX_DEFINE_ERROR(SandboxCredentialUnavailable, RuntimeError);
/// The spec asks for a guest OS family the backend does not state (C-65 #5).
MAF_SANDBOX_DEFINE_REFUSAL(SandboxOsFamilyNotSupported, RuntimeError);

/// The spec asks a resource bound (memory, cpus, processes, ttl, idle_timeout) the
/// selected backend does not declare it enforces (docs/limits.md LIM-3): refused, never
/// served unbounded. `bound()` is the bound's canonical name, e.g. "memory".
class SandboxResourceBoundNotEnforced : public RuntimeError, public SandboxPolicyRefusal {
public:
  SandboxResourceBoundNotEnforced(const std::string& message, std::string bound)
      : RuntimeError(message), bound_(std::move(bound)) {}
  const char* message() const noexcept override { return this->what(); }
  const std::string& bound() const noexcept { return bound_; }

private:
  std::string bound_;
};

/// Output collection refused (C-81…C-94). Any of these means nothing was delivered by the
/// failing phase.
MAF_SANDBOX_DEFINE_ERROR(SandboxOutputError, RuntimeError);
MAF_SANDBOX_DEFINE_ERROR(SandboxOutputMissing, SandboxOutputError);
MAF_SANDBOX_DEFINE_ERROR(SandboxOutputNotConfined, SandboxOutputError);
MAF_SANDBOX_DEFINE_ERROR(SandboxOutputNotRegular, SandboxOutputError);
MAF_SANDBOX_DEFINE_ERROR(SandboxOutputSizeUnknown, SandboxOutputError);
MAF_SANDBOX_DEFINE_ERROR(SandboxOutputUnreachable, SandboxOutputError);
/// A byte, file-count or total cap would be exceeded; names the cap and the file (C-47, C-90).
MAF_SANDBOX_DEFINE_ERROR(SandboxTransferCapExceeded, SandboxOutputError);
MAF_SANDBOX_DEFINE_ERROR(SandboxLandingNotConfined, SandboxOutputError);
MAF_SANDBOX_DEFINE_ERROR(SandboxOutputSinkRequired, SandboxOutputError);
MAF_SANDBOX_DEFINE_ERROR(SandboxArtifactNameInvalid, SandboxOutputError);
MAF_SANDBOX_DEFINE_ERROR(SandboxArtifactNameCollision, SandboxOutputError);

/// An I/O refusal (Python's OSError family). Not a confinement refusal.
MAF_SANDBOX_DEFINE_ERROR(OSError, Error);
MAF_SANDBOX_DEFINE_ERROR(FileNotFoundError, OSError);
MAF_SANDBOX_DEFINE_ERROR(IsADirectoryError, OSError);
MAF_SANDBOX_DEFINE_ERROR(NotADirectoryError, OSError);
MAF_SANDBOX_DEFINE_ERROR(PermissionError, OSError);
/// A backend cannot establish on this host the boundary its isolation rung promises (no
/// user namespaces, no seccomp, …): refused at construction, naming what is missing, instead
/// of serving a weaker boundary under the same name.
MAF_SANDBOX_DEFINE_ERROR(SandboxBoundaryUnavailable, OSError);
/// A backend's state directory (e.g. the process backend's `root`) cannot hold sandboxes for
/// this user: names the path and why.
MAF_SANDBOX_DEFINE_ERROR(SandboxStateRootUnusable, PermissionError);
/// Policy refusals: the backend is below the floor, or the host denies what the spec asks.
MAF_SANDBOX_DEFINE_REFUSAL(SandboxBackendNotPermitted, PermissionError);
MAF_SANDBOX_DEFINE_REFUSAL(SandboxCapabilityDenied, PermissionError);
MAF_SANDBOX_DEFINE_REFUSAL(SandboxIdentityDenied, PermissionError);
/// A spec's attached credential is wider than the host's max_identity_scope (CRED-5).
MAF_SANDBOX_DEFINE_REFUSAL(SandboxIdentityScopeDenied, PermissionError);
MAF_SANDBOX_DEFINE_REFUSAL(SandboxTransferLimitsNotPermitted, PermissionError);
MAF_SANDBOX_DEFINE_REFUSAL(SandboxEgressNotEnforced, PermissionError);
/// The spec asks a snapshot fidelity the backend does not declare (docs/snapshots.md SNAP-2):
/// refused, never served a weaker snapshot. `asked()` is the rung asked, `declared()` the
/// backend's ("none" when it keeps no snapshot).
class SandboxSnapshotFidelityNotSupported : public PermissionError, public SandboxPolicyRefusal {
public:
  SandboxSnapshotFidelityNotSupported(const std::string& message, std::string asked, std::string declared)
      : PermissionError(message), asked_(std::move(asked)), declared_(std::move(declared)) {}
  const char* message() const noexcept override { return this->what(); }
  const std::string& asked() const noexcept { return asked_; }
  const std::string& declared() const noexcept { return declared_; }

private:
  std::string asked_;
  std::string declared_;
};
/// No snapshot of that id in this sandbox: never taken, released, or past its TTL (SNAP-6).
MAF_SANDBOX_DEFINE_ERROR(SandboxSnapshotNotFound, LookupError);
/// Taking the snapshot would hold more bytes than the backend's snapshot budget (SNAP-7);
/// names the size, what is held and the budget. Nothing was kept.
MAF_SANDBOX_DEFINE_ERROR(SandboxSnapshotBudgetExceeded, RuntimeError);
/// The sandbox is paused (SNAP-9): nothing that starts a guest process runs until resume().
MAF_SANDBOX_DEFINE_ERROR(SandboxPaused, RuntimeError);
/// Exactly "the caller's timeout expired" (C-40). Backends with their own ceilings raise
/// something else.
MAF_SANDBOX_DEFINE_ERROR(TimeoutError, OSError);
/// A streamed program wrote nothing on either stream for its `read_timeout` and was stopped
/// (docs/streaming.md STR-4): the caller's silence bound, apart from the command's deadline.
MAF_SANDBOX_DEFINE_ERROR(SandboxStreamIdle, TimeoutError);
/// run_code's deadline passed before the program started (C-41).
MAF_SANDBOX_DEFINE_ERROR(SandboxQueuedTimeout, TimeoutError);
/// A program overran its own deadline: every exec and run_code past its timeout, on every
/// backend (docs/writing-a-backend.md EXE-1), and a host-tools run (docs/host-tools.md
/// "Deadlines"). Beside the message it carries what the program printed before it was
/// stopped, whether a stop was delivered, and what it reached — so a host can tell "nothing
/// ever started" (signal Absent) from "the program was started and then stopped".
class SandboxProgramTimeout : public TimeoutError {
public:
  /// Sent: the stop was delivered; Refused: it was attempted and failed; Absent: no program
  /// was recorded as started (the only value that proves nothing ran); Unrecorded: the
  /// program's start record could not be read; Unknown: the transport cannot tell.
  enum class Signal { Sent, Refused, Absent, Unrecorded, Unknown };
  /// Group: the program and everything it started; Program: the program alone; Nothing.
  enum class Reach { Group, Program, Nothing };

  explicit SandboxProgramTimeout(const std::string& message, std::string output = {},
                                 Signal signal = Signal::Unknown, Reach reach = Reach::Nothing)
      : TimeoutError(message), output_(std::move(output)), signal_(signal), reach_(reach) {}
  const std::string& output() const noexcept { return output_; }
  Signal signal() const noexcept { return signal_; }
  Reach reach() const noexcept { return reach_; }

private:
  std::string output_;
  Signal signal_;
  Reach reach_;
};
/// "sent", "refused", "absent", "unrecorded", "unknown".
constexpr const char* to_string(SandboxProgramTimeout::Signal signal) noexcept {
  constexpr const char* names[] = {"sent", "refused", "absent", "unrecorded", "unknown"};
  return names[static_cast<int>(signal)];
}
/// "group", "program", "nothing".
constexpr const char* to_string(SandboxProgramTimeout::Reach reach) noexcept {
  constexpr const char* names[] = {"group", "program", "nothing"};
  return names[static_cast<int>(reach)];
}

#undef MAF_SANDBOX_DEFINE_REFUSAL
#undef MAF_SANDBOX_DEFINE_ERROR

/// Cancellation is not a failure (C-106): it derives from std::exception only, so
/// `catch (const maf::Error&)` never swallows it.
class Cancelled : public std::exception {
public:
  const char* what() const noexcept override { return "operation cancelled"; }
};

}  // namespace maf::sandbox

namespace maf {
using Error = sandbox::Error;
}  // namespace maf
