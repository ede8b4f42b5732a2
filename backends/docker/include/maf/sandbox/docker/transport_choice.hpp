#pragma once
/// @file docker/transport_choice.hpp
/// Which transport `"transport": "auto"` (the default) binds, and why (issue 24).
///
/// The Engine API is the fast path: no client process per engine call (docs/backends/docker.md
/// §"Transports" has the spawn count per operation). It is chosen when the endpoint is a local
/// unix socket this process can open right now:
///   - `docker_host` configured: the API (only the API transport reads it);
///   - else DOCKER_HOST set: the API when it is `unix://` and the socket accepts a connection,
///     the CLI otherwise (tcp, ssh, npipe: the client resolves and secures those);
///   - else a named docker context is current (DOCKER_CONTEXT, or `currentContext` in the
///     client's config.json): the CLI, which resolves contexts itself;
///   - else the default socket /var/run/docker.sock when it accepts a connection;
///   - a `docker_path` whose file name is not `docker` (a wrapper, another engine's client):
///     the CLI, whatever the endpoint — the host asked for that program.
/// Anything else is the CLI, which reports the engine's own refusal on first use.

#include <string>

#include "maf/sandbox/docker/config.hpp"

namespace maf::sandbox::docker {

/// A resolved transport, and the sentence that says why (logged once per backend, shown by
/// `maf-sandbox plugins`).
struct TransportChoice {
  DockerTransportKind kind = DockerTransportKind::Cli;
  std::string reason;
};

/// Resolves `config.transport`; "cli" and "api" resolve to themselves. Reads DOCKER_HOST,
/// DOCKER_CONTEXT, DOCKER_CONFIG and HOME as they are now, and may connect to (never speak
/// on) a unix socket.
TransportChoice choose_transport(const DockerConfig& config);

/// "cli", "api" or "auto".
const char* to_string(DockerTransportKind kind) noexcept;

}  // namespace maf::sandbox::docker
