#pragma once
// The probe table of each suite, one file per suite. Internal: the public way in is
// suites.hpp's probes(Suite).
#include <span>

#include "maf/sandbox/conformance/probe.hpp"

namespace maf::sandbox::conformance::detail {
std::span<const Probe> files_out_probes();
std::span<const Probe> read_cap_probes();
std::span<const Probe> files_in_probes();
std::span<const Probe> exec_probes();
std::span<const Probe> files_delete_probes();
std::span<const Probe> egress_probes();
std::span<const Probe> egress_closed_probes();
std::span<const Probe> host_integrity_probes();
std::span<const Probe> cleanup_probes();
std::span<const Probe> host_tools_probes();
std::span<const Probe> limits_probes();
std::span<const Probe> stream_probes();      // suite_stream.cpp
std::span<const Probe> background_probes();  // suite_background.cpp
std::span<const Probe> egress_l7_probes();   // suite_egress_l7.cpp
std::span<const Probe> attached_identity_probes();  // suite_attached_identity.cpp
std::span<const Probe> exec_env_probes();    // suite_exec_env.cpp
std::span<const Probe> exec_stdin_probes();  // suite_exec_stdin.cpp
std::span<const Probe> context_probes();     // suite_context.cpp
std::span<const Probe> snapshot_probes();    // suite_snapshot.cpp
std::span<const Probe> pool_probes();        // suite_pool.cpp

/// READ_CAP's fixture: a file of kOverCapSize bytes at W/cap/over-cap.bin.
void plant_read_cap_fixture(ConformanceSubject& subject, const ConformancePaths& paths);
}  // namespace maf::sandbox::conformance::detail
