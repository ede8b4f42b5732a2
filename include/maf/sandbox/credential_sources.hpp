#pragma once
/// @file credential_sources.hpp
/// Ready-made CredentialSources (docs/policy.md CRED-10): a host that keeps its credentials
/// in its own environment variables or in files names, per credential, where each value is
/// read from; the CLI's `--credential NAME=env:VAR|file:PATH` is this. A value is read at
/// the moment the backend asks (CRED-4), never cached, and never quoted in any error.

#include <map>
#include <string>

#include "maf/sandbox/credential_source.hpp"
#include "maf/sandbox/fwd.hpp"

namespace maf::sandbox {

/// `bindings`: credential name → `env:VARIABLE` (the host process's environment variable) or
/// `file:PATH` (the file's whole content, one trailing newline removed). Throws ValueError
/// naming the credential for a binding of another shape, an empty variable name or path.
/// The source throws SandboxCredentialUnavailable naming the credential (never a value) for
/// a credential it has no binding for, an unset variable or an unreadable file.
CredentialSource credential_source_from(std::map<std::string, std::string> bindings);

/// The host's credential source for specs with attached credentials (CRED-4), handed to
/// `host`'s backend through its router; what specs may ask is still capped by
/// RouterOptions::max_identity_scope (default: none). A free function, not a member, so
/// <functional> stays out of host.hpp and the light entry.
void attach_credential_source(SandboxHost& host, CredentialSource source);

}  // namespace maf::sandbox
