// The image of an acquire (D-9): present locally, else pulled explicitly under its own
// timeout before anything is created from it; `run` never pulls.
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::docker {

boost::asio::awaitable<void> DockerSandboxBackend::ensure_image(const std::string& image, const SandboxSpec& spec) {
  if (co_await transport_->image_present(image)) co_return;
  try {
    co_await transport_->pull_image(image);
  } catch (const Error& e) {
    throw OSError(said("image '" + image + "' for workload kind '" + spec.kind() +
                       "' is not present locally and could not be pulled: " + e.what()));
  }
}

}  // namespace maf::sandbox::docker
