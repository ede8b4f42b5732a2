#pragma once
/// @file docker/api_transport.hpp
/// The DockerTransport that speaks the Docker Engine HTTP API directly (issue 9), over the
/// daemon's unix socket or plain TCP: no client process per call.
///
/// Binding: the endpoint is fixed when the transport is made — `DockerConfig::docker_host`,
/// else DOCKER_HOST as it is then, else unix:///var/run/docker.sock — and never re-read.
/// TLS endpoints (`https://`, or `tcp://` with DOCKER_TLS_VERIFY set) are refused there,
/// with ValueError naming them, as are ssh:// and npipe://.
///
/// API version: on first use `/version` is asked (unversioned); requests then use its
/// `ApiVersion`, capped at 1.41 — what this transport implements (engine 20.10's version,
/// which 28.x still serves).
///
/// Classification comes from HTTP status codes (404 absent, 409 conflict/paused) and, where
/// a status is shared, from the engine's `message`. The same guarantees as the CLI
/// transport hold above the seam; this transport only moves bytes.

#include <memory>

#include "maf/sandbox/docker/config.hpp"
#include "maf/sandbox/docker/transport.hpp"

namespace maf::sandbox::docker {

/// Resolves and checks the endpoint now (throws ValueError for one it cannot speak); makes
/// no engine call until first use.
std::shared_ptr<DockerTransport> make_api_transport(const DockerConfig& config);

/// The transport of `kind` (Cli or Api; Auto is resolved by choose_transport first).
std::shared_ptr<DockerTransport> make_transport(const DockerConfig& config, DockerTransportKind kind);
/// The transport `config.transport` resolves to (transport_choice.hpp).
std::shared_ptr<DockerTransport> make_transport(const DockerConfig& config);

}  // namespace maf::sandbox::docker
