// Symbol recognition and the meaning of each symbol (wslc C-27, W-43).
#include "maf/sandbox/wslc/error_codes.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "maf/sandbox/wslc/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::wslc {
namespace {

constexpr std::array<std::pair<WslcSymbol, std::string_view>, 21> kNames{{
    {WslcSymbol::ImageNotFound, "WSLC_E_IMAGE_NOT_FOUND"},
    {WslcSymbol::ContainerPrefixAmbiguous, "WSLC_E_CONTAINER_PREFIX_AMBIGUOUS"},
    {WslcSymbol::ContainerNotFound, "WSLC_E_CONTAINER_NOT_FOUND"},
    {WslcSymbol::VolumeNotFound, "WSLC_E_VOLUME_NOT_FOUND"},
    {WslcSymbol::ContainerNotRunning, "WSLC_E_CONTAINER_NOT_RUNNING"},
    {WslcSymbol::ContainerIsRunning, "WSLC_E_CONTAINER_IS_RUNNING"},
    {WslcSymbol::SessionReserved, "WSLC_E_SESSION_RESERVED"},
    {WslcSymbol::InvalidSessionName, "WSLC_E_INVALID_SESSION_NAME"},
    {WslcSymbol::NetworkNotFound, "WSLC_E_NETWORK_NOT_FOUND"},
    {WslcSymbol::WuSearchFailed, "WSLC_E_WU_SEARCH_FAILED"},
    {WslcSymbol::SdkUpdateNeeded, "WSLC_E_SDK_UPDATE_NEEDED"},
    {WslcSymbol::ContainerDisabled, "WSLC_E_CONTAINER_DISABLED"},
    {WslcSymbol::RegistryBlockedByPolicy, "WSLC_E_REGISTRY_BLOCKED_BY_POLICY"},
    {WslcSymbol::VolumeNotAvailable, "WSLC_E_VOLUME_NOT_AVAILABLE"},
    {WslcSymbol::SessionNotFound, "WSLC_E_SESSION_NOT_FOUND"},
    {WslcSymbol::VmNotRunning, "WSLC_E_VM_NOT_RUNNING"},
    {WslcSymbol::AlreadyExists, "ERROR_ALREADY_EXISTS"},
    {WslcSymbol::PathNotFound, "ERROR_PATH_NOT_FOUND"},
    {WslcSymbol::InvalidArg, "E_INVALIDARG"},
    {WslcSymbol::Fail, "E_FAIL"},
    {WslcSymbol::ElevationRequired, "ERROR_ELEVATION_REQUIRED"},
}};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::string_view symbol_name(WslcSymbol symbol) noexcept {
  for (const auto& [s, name] : kNames)
    if (s == symbol) return name;
  return {};
}

const std::vector<WslcSymbol>& known_symbols() {
  static const std::vector<WslcSymbol> all = [] {
    std::vector<WslcSymbol> out;
    for (const auto& entry : kNames) out.push_back(entry.first);
    return out;
  }();
  return all;
}

WslcSymbol find_symbol(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    if (!word_char(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && word_char(text[j])) ++j;
    const std::string_view word = text.substr(i, j - i);
    for (const auto& [symbol, name] : kNames)
      if (word == name) return symbol;
    i = j;
  }
  return WslcSymbol::None;
}

WslcErrorClass classify(WslcSymbol symbol) noexcept {
  switch (symbol) {
    case WslcSymbol::SessionReserved:
    case WslcSymbol::InvalidSessionName:
    case WslcSymbol::SessionNotFound:
    case WslcSymbol::WuSearchFailed:
    case WslcSymbol::SdkUpdateNeeded:
    case WslcSymbol::ContainerDisabled:
    case WslcSymbol::VmNotRunning:
    case WslcSymbol::ElevationRequired:
      return WslcErrorClass::Unavailable;
    case WslcSymbol::ImageNotFound:
    case WslcSymbol::RegistryBlockedByPolicy:
      return WslcErrorClass::ImageMissing;
    case WslcSymbol::ContainerNotFound:
      return WslcErrorClass::Vanished;
    case WslcSymbol::ContainerNotRunning:
      return WslcErrorClass::NotRunning;
    case WslcSymbol::AlreadyExists:
      return WslcErrorClass::Exists;
    case WslcSymbol::PathNotFound:
      return WslcErrorClass::PathMissing;
    default:  // prefix ambiguity cannot happen with derived names; the rest keep their text
      return WslcErrorClass::Failed;
  }
}

bool is_directory_copy_refusal(std::string_view text) {
  return lower(text).find("cannot copy a directory to a file path") != std::string::npos;
}

void raise_wslc_failure(const std::string& what, int exit_code, const std::string& stderr_text) {
  std::string text = stderr_text;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  const WslcSymbol symbol = find_symbol(text);
  const std::string name(symbol_name(symbol));
  const std::string message =
      said(what + " failed (exit " + std::to_string(exit_code) + "): " + text);
  switch (classify(symbol)) {
    case WslcErrorClass::Unavailable:
      throw WslcBackendUnavailable(message + " — wslc cannot serve (" + name +
                                   "); check the WSL installation, session and policy");
    case WslcErrorClass::ImageMissing:
      throw WslcImageNotFound(message + " — build or pull the image first", name, text);
    case WslcErrorClass::Vanished:
      throw WslcContainerVanished(message + " — the sandbox's container is gone; the next acquire recreates it",
                                  name, text);
    default:
      throw WslcCommandFailed(message, name, text);
  }
}

}  // namespace maf::sandbox::wslc
