#include "maf/sandbox/backend.hpp"

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {

SandboxBackend::~SandboxBackend() = default;

boost::asio::awaitable<ScopePurge> SandboxBackend::reap(std::chrono::seconds, std::optional<std::string>) {
  throw NotImplementedError("backend '" + name() + "' does not offer reap");
  co_return ScopePurge{};
}

boost::asio::awaitable<ScopePurge> SandboxBackend::reap_expired(std::optional<std::string>) {
  throw NotImplementedError("backend '" + name() + "' does not offer reap --expired");
  co_return ScopePurge{};
}

}  // namespace maf::sandbox
