#pragma once
/// @file acas/errors.hpp
/// The ACAS backend's own failure types. Each derives from the core type a host already
/// catches (C-105), so a host that knows nothing of ACAS still classifies them.

#include <string>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::acas {

/// A warm sandbox holds a different egress policy than the spec asks for. A
/// SandboxEgressNotEnforced so existing catches still work; distinguishable by type.
class AcasEgressPolicyConflict : public SandboxEgressNotEnforced {
public:
  using SandboxEgressNotEnforced::SandboxEgressNotEnforced;
};

/// The service answered with a body this backend cannot read (malformed JSON, a field of the
/// wrong type, a missing required field). Never read as success.
class AcasResponseInvalid : public ValueError {
public:
  using ValueError::ValueError;
};

/// A file-plane entry without JSON-boolean `isDir` / `isSymlink`, or a listing
/// whose entries are not direct children.
class AcasEntryPayloadIncomplete : public AcasResponseInvalid {
public:
  using AcasResponseInvalid::AcasResponseInvalid;
};

/// A credential could not be obtained (a source, the host's resolver or its factory failed,
/// A-60), no client could be leased within client_wait_seconds (A-61, "limit N clients per
/// loop"), or the backend is closing (A-62). Messages never carry provider output (it may
/// contain a token).
class AcasCredentialError : public RuntimeError {
public:
  using RuntimeError::RuntimeError;
};

/// close() left something open: operations still running after client_close_seconds,
/// a client still leased, or a client whose close failed or did not run within
/// client_close_seconds (e.g. its owner executor is not running). The message names each; a
/// later close() retries what is still open and closes nothing twice.
class AcasClientCloseError : public RuntimeError {
public:
  using RuntimeError::RuntimeError;
};

/// The service answered with an HTTP error status.
class AcasServiceError : public OSError {
public:
  AcasServiceError(const std::string& message, int status) : OSError(message), status_(status) {}
  int status() const noexcept { return status_; }

private:
  int status_;
};

/// No HTTP answer: connection refused, reset, dropped. `maybe_sent` says the request may have
/// reached the service, so its effect is unknown (T-6, A-26).
class AcasTransportError : public OSError {
public:
  AcasTransportError(const std::string& message, bool maybe_sent) : OSError(message), maybe_sent_(maybe_sent) {}
  bool maybe_sent() const noexcept { return maybe_sent_; }

private:
  bool maybe_sent_;
};

/// The deadline ran out while waiting out a 429's Retry-After, before the retry was sent:
/// the throttled request was answered and nothing ran, so the sandbox stays whole.
class AcasThrottledPastDeadline : public TimeoutError {
public:
  using TimeoutError::TimeoutError;
};

/// a control exec's answer (probe, write_file command, capture retrieval) outgrew the
/// caller's byte budget; the response was abandoned. A SandboxOutputError, as before.
class SandboxExecOutputLimitExceeded : public SandboxOutputError {
public:
  using SandboxOutputError::SandboxOutputError;
};

/// write_file over exec stopped where the guest's state is known: the deadline ran
/// out between commands (nothing in flight) and the staged file was taken back, or the guest
/// refused with a reason no core type names. The sandbox is kept. An OSError: the bound is
/// the backend's read_timeout_seconds, not a caller's timeout (core C-40).
class SandboxShellTransferFailed : public OSError {
public:
  using OSError::OSError;
};

/// write_file over exec stopped where the guest's state is unknown: a command failed in
/// flight, timed out, or got a status other than a 429, or the staged file could not be
/// removed. The sandbox has been invalidated and its deletion attempted.
class SandboxShellTransferUnfinished : public OSError {
public:
  using OSError::OSError;
};

}  // namespace maf::sandbox::acas
