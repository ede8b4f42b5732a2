// The plugin entry: `libmaf-sandbox-docker.so` exports maf_sandbox_plugin_v1 (plugin.hpp).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/plugin.hpp"

namespace maf::sandbox::docker {
namespace {

// The factory contacts no engine (plugin.hpp: listing plugins and checking policy must work
// with the engine down): os_families {posix} is declared now and checked against the daemon
// at each cold acquire (DockerSandboxBackend::deferred). `"declare_os_family": false` gives
// the plain constructor: nothing declared, nothing checked.
std::shared_ptr<DockerSandboxBackend> make_docker_backend(const nlohmann::json& json) {
  DockerConfig config = parse_docker_config(json);
  if (!config.declare_os_family) return std::make_shared<DockerSandboxBackend>(std::move(config));
  return DockerSandboxBackend::deferred(std::move(config));
}

}  // namespace
}  // namespace maf::sandbox::docker

MAF_SANDBOX_PLUGIN("docker", "0.1.0",
                   "Plain Docker containers through the docker CLI; files over the docker cp tar plane",
                   maf::sandbox::docker::make_docker_backend)
