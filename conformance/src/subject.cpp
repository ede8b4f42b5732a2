#include "maf/sandbox/conformance/subject.hpp"

namespace maf::sandbox::conformance {

// Out of line so the vtable and type info live in the library, once.
ConformanceSubject::~ConformanceSubject() = default;

RawFrameAttempt ConformanceSubject::send_raw_frames(const std::string&, std::uint16_t, const std::string&,
                                                    const std::string&, std::chrono::milliseconds) {
  return {RawFrameAttempt::Result::NoTool, "this subject offers no way to write raw frames"};
}

}  // namespace maf::sandbox::conformance
