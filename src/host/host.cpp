#include "maf/sandbox/host.hpp"

#include <utility>

#include <nlohmann/json.hpp>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/registry.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sync.hpp"

namespace maf::sandbox {

struct SandboxHost::Impl {
  Impl(std::shared_ptr<SandboxBackend> backend, RouterOptions options)
      : router({std::move(backend)}, std::move(options)) {}
  SandboxRouter router;
};

namespace {

nlohmann::json parse_config(const std::string& backend, const std::string& text) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ValueError("the configuration of backend '" + backend + "' is not JSON (" + e.what() + "): " +
                     (text.size() > 80 ? text.substr(0, 80) + "…" : text));
  }
  if (!config.is_object())
    throw ValueError("the configuration of backend '" + backend + "' must be a JSON object, not " +
                     std::string(config.type_name()));
  return config;
}

}  // namespace

SandboxHost::SandboxHost(const std::string& backend, RouterOptions options, const std::string& config_json) {
  const nlohmann::json config = parse_config(backend, config_json);
  auto created = PluginRegistry::global().create(backend, config);
  impl_ = new Impl(std::move(created), std::move(options));
}

SandboxHost::SandboxHost(SandboxHost&& other) noexcept : impl_(std::exchange(other.impl_, nullptr)) {}
SandboxHost& SandboxHost::operator=(SandboxHost&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = std::exchange(other.impl_, nullptr);
  }
  return *this;
}
SandboxHost::~SandboxHost() { delete impl_; }

BlockingSandbox SandboxHost::open(SandboxKey key, SandboxSpec spec) {
  return BlockingSandbox(router(), std::move(key), std::move(spec));
}

void SandboxHost::ensure_can_serve(const SandboxSpec& spec) const { impl_->router.ensure_can_serve(spec); }

ScopePurge SandboxHost::dispose_scope(const std::string& scope, const std::string& thread_id) {
  BlockingRunner run;
  return run([&] { return impl_->router.dispose_scope(scope, thread_id); });
}

SandboxRouter& SandboxHost::router() noexcept { return impl_->router; }

}  // namespace maf::sandbox
