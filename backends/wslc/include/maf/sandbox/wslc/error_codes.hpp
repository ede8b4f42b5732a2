#pragma once
/// @file wslc/error_codes.hpp
/// Recognising wslc's `Error code: <SYMBOL>` (wslc C-8, C-27; W-43) and what each symbol
/// means to this backend. The prefix and the message are localized; the symbol is not, so
/// only the symbol is read — as a whole word anywhere in stderr. Never applied to exec
/// output (W-27): that stderr belongs to the guest.

#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::wslc {

enum class WslcSymbol {
  None,  ///< no known symbol in the text (a hex HRESULT, or nothing at all)
  ImageNotFound,
  ContainerPrefixAmbiguous,
  ContainerNotFound,
  VolumeNotFound,
  ContainerNotRunning,
  ContainerIsRunning,
  SessionReserved,
  InvalidSessionName,
  NetworkNotFound,
  WuSearchFailed,
  SdkUpdateNeeded,
  ContainerDisabled,
  RegistryBlockedByPolicy,
  VolumeNotAvailable,
  SessionNotFound,
  VmNotRunning,
  AlreadyExists,      ///< ERROR_ALREADY_EXISTS
  PathNotFound,       ///< ERROR_PATH_NOT_FOUND
  InvalidArg,         ///< E_INVALIDARG
  Fail,               ///< E_FAIL
  ElevationRequired,  ///< ERROR_ELEVATION_REQUIRED
};

/// What a symbol means to the backend (W-43); each class maps to one raised type.
enum class WslcErrorClass {
  Unavailable,   ///< WslcBackendUnavailable: session, VM, install, policy, elevation
  ImageMissing,  ///< WslcImageNotFound
  Vanished,      ///< WslcContainerVanished (or "already gone" where a removal asked)
  NotRunning,    ///< the next acquire restarts
  Exists,        ///< adopt (W-17)
  PathMissing,   ///< a stat's "absent"
  Failed,        ///< WslcCommandFailed, text kept
};

/// The symbol as wslc prints it, e.g. "WSLC_E_CONTAINER_NOT_FOUND"; "" for None.
std::string_view symbol_name(WslcSymbol symbol) noexcept;
/// Every symbol this backend knows, None excluded (for exhaustive tests).
const std::vector<WslcSymbol>& known_symbols();
/// The first known symbol appearing as a whole word (runs of [A-Za-z0-9_]) in `stderr_text`.
WslcSymbol find_symbol(std::string_view stderr_text);
WslcErrorClass classify(WslcSymbol symbol) noexcept;

/// C-14: the `cp` directory refusal, matched case-insensitively; the one text match left.
bool is_directory_copy_refusal(std::string_view stderr_text);

/// Throws the W-43 type for a failed lifecycle verb: `what` says which verb on which
/// container for which workload kind; the message keeps the verbatim stderr.
[[noreturn]] void raise_wslc_failure(const std::string& what, int exit_code, const std::string& stderr_text);

}  // namespace maf::sandbox::wslc
