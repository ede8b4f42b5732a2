#pragma once
/// @file docker/cli_transport.hpp
/// The DockerTransport that spawns the docker CLI (docs/backends/docker.md "The CLI runner and its classification"): one argv per call, no
/// shell, bounded capture, killed and reaped on every deadline.
///
/// Binding (D-29): the process environment is snapshotted at construction; on first use,
/// `docker context inspect` (with that snapshot and no `--context`) resolves the context
/// name and endpoint exactly once, and every later call runs
/// `<docker_path> --context <name> …` with the snapshot plus `DOCKER_HOST=<endpoint>`, so
/// later changes to the ambient context or environment never redirect this transport.
///
/// Engine versions: the 20.10 client speaks API 1.41; a 28.x client negotiates down to the
/// engine's API version on its own, so no API version is pinned here. Client error strings
/// of both are recognised (docs/backends/docker.md "The CLI runner and its classification").

#include <memory>

#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/transport.hpp"

namespace maf::sandbox::docker {

/// Snapshots the environment now; makes no engine call until first use.
std::shared_ptr<DockerTransport> make_cli_transport(const DockerConfig& config);

}  // namespace maf::sandbox::docker
