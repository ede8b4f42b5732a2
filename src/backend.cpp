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

void refuse_unenforced_bounds(const std::string& backend_name, const BackendDeclarations& declarations,
                              const SandboxSpec& spec, const std::string& why) {
  const ResourceBoundSet missing = spec.resources().asked().difference(declarations.resource_bounds);
  if (missing.empty()) return;
  throw SandboxResourceBoundNotEnforced("backend '" + backend_name + "' does not enforce resource bound " +
                                            missing.to_string() + ", asked by workload kind '" + spec.kind() + "' (" +
                                            spec.resources().to_string() + "; it enforces: " +
                                            declarations.resource_bounds.to_string("no resource bound") +
                                            (why.empty() ? std::string() : "; " + why) + ")",
                                        std::string(to_string(missing.sorted().front())));
}

}  // namespace maf::sandbox
