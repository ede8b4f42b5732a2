// The pool key (docs/pools.md POOL-2): the canonical JSON of the whole spec, so every field
// that shapes a sandbox — policy, limits, egress, image, kind, work base — separates pools.
#include "maf/sandbox/pool.hpp"

#include "maf/sandbox/spec_json.hpp"

namespace maf::sandbox {

std::string pool_key(const SandboxSpec& spec) { return spec_to_json(spec).dump(); }

}  // namespace maf::sandbox
