// The one spelling of this backend's error prefix: every message it throws starts with it,
// so a host (and a test matching messages) can tell which backend spoke.
#pragma once

#include <string>
#include <string_view>

namespace maf::sandbox::acas {

/// `what` as this backend says it: "acas: " + what.
inline std::string said(std::string_view what) {
  std::string message = "acas: ";
  message += what;
  return message;
}

}  // namespace maf::sandbox::acas
