#pragma once
/// @file backend_message.hpp
/// The one spelling of a backend's voice: every message a backend throws or logs starts with
/// "backend '<name>': ", the prefix the core's own refusals of that backend use too (ACQ-1,
/// ACQ-2), so a host — and a test matching messages — can tell which backend spoke, and no
/// backend types its prefix by hand.

#include <string>
#include <string_view>

namespace maf::sandbox::support {

/// "backend '<backend>': " + what.
inline std::string backend_message(std::string_view backend, std::string_view what) {
  std::string message;
  message.reserve(backend.size() + what.size() + 12);
  message += "backend '";
  message += backend;
  message += "': ";
  message += what;
  return message;
}

/// A backend's voice as a value: `inline constexpr support::BackendVoice said{"docker"};`
/// then `throw ValueError(said("…"))`.
class BackendVoice {
public:
  constexpr explicit BackendVoice(std::string_view backend) noexcept : backend_(backend) {}
  std::string operator()(std::string_view what) const { return backend_message(backend_, what); }
  constexpr std::string_view backend() const noexcept { return backend_; }

private:
  std::string_view backend_;
};

}  // namespace maf::sandbox::support
