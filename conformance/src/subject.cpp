#include "maf/sandbox/conformance/subject.hpp"

#include "maf/sandbox/isolation.hpp"

namespace maf::sandbox::conformance {

// Out of line so the vtable and type info live in the library, once.
ConformanceSubject::~ConformanceSubject() = default;

RawFrameAttempt ConformanceSubject::send_raw_frames(const std::string&, std::uint16_t, const std::string&,
                                                    const std::string&, std::chrono::milliseconds) {
  return {RawFrameAttempt::Result::NoTool, "this subject offers no way to write raw frames"};
}

HostBoundaryClaims default_host_boundary_claims(std::string_view isolation) {
  HostBoundaryClaims claims;
  // Unknown rungs get the strictest claims: a new name must not loosen anything.
  const auto rung = try_parse_enum<Isolation>(isolation);
  claims.promised = !rung || meets_floor(*rung, Isolation::OsProcess);
  claims.root_confined_by_engine = rung && meets_floor(*rung, Isolation::Container);
  return claims;
}

}  // namespace maf::sandbox::conformance
