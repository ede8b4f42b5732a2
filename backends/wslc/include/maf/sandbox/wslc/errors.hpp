#pragma once
/// @file wslc/errors.hpp
/// The wslc backend's own small error family (wslc.md W-43). Every type derives from a core
/// type in errors.hpp, so a host that catches by core base never needs this header.
///
///   WslcBackendUnavailable      : OSError — wslc cannot serve at all (spawn failure, version
///                                 below 2.9.4.0, session / VM / policy / install symbols)
///   WslcCommandFailed           : OSError — a lifecycle verb failed; carries the symbol and
///                                 the verbatim stderr
///     WslcImageNotFound         — `WSLC_E_IMAGE_NOT_FOUND` / `WSLC_E_REGISTRY_BLOCKED_BY_POLICY`
///     WslcContainerVanished     — `WSLC_E_CONTAINER_NOT_FOUND` where the sandbox should exist
///
/// An exec past its deadline or over 8 MiB of output (W-7, W-28) raises the core's one type
/// for each ending, as on every backend (EXE-1): SandboxProgramTimeout and
/// SandboxTransferCapExceeded.

#include <string>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::wslc {

class WslcBackendUnavailable : public OSError {
public:
  using OSError::OSError;
};

class WslcCommandFailed : public OSError {
public:
  WslcCommandFailed(const std::string& message, std::string symbol, std::string stderr_text)
      : OSError(message), symbol_(std::move(symbol)), stderr_(std::move(stderr_text)) {}
  /// The `Error code:` symbol recognised in stderr (C-27), or "" when none was.
  const std::string& symbol() const noexcept { return symbol_; }
  const std::string& stderr_text() const noexcept { return stderr_; }

private:
  std::string symbol_;
  std::string stderr_;
};

class WslcImageNotFound : public WslcCommandFailed {
public:
  using WslcCommandFailed::WslcCommandFailed;
};

class WslcContainerVanished : public WslcCommandFailed {
public:
  using WslcCommandFailed::WslcCommandFailed;
};

}  // namespace maf::sandbox::wslc
