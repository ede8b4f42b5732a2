// The defaults of DockerTransport (transport.hpp): what a transport that does not override an
// operation answers. They live beside the header rather than in either transport, since both
// transports and the test doubles rely on them.
#include "maf/sandbox/docker/transport.hpp"

#include <string>
#include <utility>

#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::docker {

DockerTransport::~DockerTransport() = default;

// No stat-only probe (the CLI's `docker cp` has none): every stat goes to the tar plane.
boost::asio::awaitable<PathStat> DockerTransport::path_stat(std::string, std::string) { co_return PathStat{}; }

boost::asio::awaitable<void> DockerTransport::archive_put_upload(std::string container, std::string destination,
                                                                 TarUpload upload) {
  std::string tar = upload.joined();
  co_await archive_put(std::move(container), std::move(destination), std::move(tar));
}

boost::asio::awaitable<ExecStreamEnd> DockerTransport::exec_stream(ExecStreamCall call, ExecChunkSink) {
  throw NotImplementedError(said("this transport does not stream exec output (container " +
                                 call.container + ")"));
}

// For a transport whose create is create-and-start (the CLI's `run -d` is one client process;
// splitting it would spawn two): creates_unstarted() is false, and this is never asked.
boost::asio::awaitable<CreateResult> DockerTransport::create_unstarted(CreateRequest request) {
  throw OSError(said("this transport does not create unstarted containers (container " +
                     request.name + ")"));
}

boost::asio::awaitable<StartOutcome> DockerTransport::start_created(std::string container, std::string& detail) {
  // start() cannot say whether it was ours that started it; AlreadyRunning is never wrong.
  co_return co_await start(std::move(container), detail) ? StartOutcome::AlreadyRunning : StartOutcome::Failed;
}

namespace {
[[noreturn]] void no_egress_plane(const char* what) {
  throw OSError(said("this transport has no egress plane (") + what +
                "); ALLOWLIST egress is not declared with it");
}
}  // namespace

boost::asio::awaitable<std::string> DockerTransport::server_version() { no_egress_plane("version"); }
boost::asio::awaitable<CreateResult> DockerTransport::create_network(NetworkRequest) {
  no_egress_plane("network create");
}
boost::asio::awaitable<void> DockerTransport::connect_network(std::string, std::string) {
  no_egress_plane("network connect");
}
boost::asio::awaitable<std::string> DockerTransport::container_logs(std::string, std::size_t) {
  no_egress_plane("logs");
}
boost::asio::awaitable<void> DockerTransport::stop_container(std::string, std::chrono::seconds) {
  no_egress_plane("stop");
}
boost::asio::awaitable<std::optional<std::string>> DockerTransport::image_labels(std::string) { co_return std::nullopt; }

}  // namespace maf::sandbox::docker
