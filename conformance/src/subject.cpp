#include "maf/sandbox/conformance/subject.hpp"

namespace maf::sandbox::conformance {

// Out of line so the vtable and type info live in the library, once.
ConformanceSubject::~ConformanceSubject() = default;

}  // namespace maf::sandbox::conformance
