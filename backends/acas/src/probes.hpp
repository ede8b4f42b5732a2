#pragma once
// Acquire-time probes: the removal-compatibility probe and the command
// probes `sh`, `host-tools`, `exec-capture`. Each runs against one held sandbox and
// records its success on the sandbox's Record.

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <string>

#include "state.hpp"

namespace maf::sandbox::acas::detail {

/// upload a file through the file plane, let the guest `rm` it, observe, and always
/// delete the probe directory. A verdict only comes from what the guest did: a request that
/// fails (status or transport) or a cleanup that fails leaves the probe incomplete, raised as
/// that error, so the next acquire probes again.
boost::asio::awaitable<RemovalVerdict> removal_probe(Service& service, std::string id);

/// Requirements a verdict refuses: fail → FILES_OUT, HOST_TOOLS, FILES_DELETE; inconclusive →
/// FILES_DELETE; pass → none.
CapabilitySet refused_by(RemovalVerdict verdict);
/// The ceiling a sandbox serves: FILES_DELETE only after a pass, and nothing a verdict refuses.
CapabilitySet served_capabilities(CapabilitySet ceiling, std::optional<RemovalVerdict> verdict);
std::string to_string(RemovalVerdict verdict);

/// `sh` (EXEC without HOST_TOOLS), `host-tools` (HOST_TOOLS), `exec-capture` (EXEC or
/// HOST_TOOLS), each only when required and not yet passed on this sandbox. A failure raises
/// SandboxCapabilityNotSupported naming the probe, the kind and the image; a failed capture
/// probe invalidates the sandbox first.
boost::asio::awaitable<void> run_command_probes(Service& service, std::shared_ptr<AcasSandboxBackend::State> s,
                                                std::shared_ptr<Record> record, SandboxSpec spec, std::string image);

}  // namespace maf::sandbox::acas::detail
