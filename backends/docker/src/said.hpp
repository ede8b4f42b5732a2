// The one spelling of this backend's error prefix: every message it throws starts with it,
// so a host (and a test matching messages) can tell which backend spoke.
#pragma once

#include <string>
#include <string_view>

namespace maf::sandbox::docker {

/// `what` as this backend says it: "backend 'docker': " + what.
inline std::string said(std::string_view what) {
  std::string message = "backend 'docker': ";
  message += what;
  return message;
}

}  // namespace maf::sandbox::docker
