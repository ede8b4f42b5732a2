// The plugin entry: `libmaf-sandbox-docker.so` exports maf_sandbox_plugin_v1 (plugin.hpp).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/plugin.hpp"

namespace maf::sandbox::docker {
namespace {

std::shared_ptr<DockerSandboxBackend> make_docker_backend(const nlohmann::json& json) {
  DockerConfig config = parse_docker_config(json);
  if (!config.declare_os_family) return std::make_shared<DockerSandboxBackend>(std::move(config));
  // [port decision] The factory behaves like Python's async `create()`: it binds and asks
  // the daemon's OS once, so a router can match a spec that requires POSIX. plugin.hpp
  // prefers factories that make no engine call; `"declare_os_family": false` gives that
  // behaviour (no engine call, no os_families declared). A daemon that does not answer
  // declares nothing; a client that cannot resolve a context fails here, by name.
  boost::asio::io_context io;
  auto future = boost::asio::co_spawn(io, DockerSandboxBackend::create(std::move(config)), boost::asio::use_future);
  io.run();
  return future.get();
}

}  // namespace
}  // namespace maf::sandbox::docker

MAF_SANDBOX_PLUGIN("docker", "0.1.0",
                   "Plain Docker containers through the docker CLI; files over the docker cp tar plane",
                   maf::sandbox::docker::make_docker_backend)
