// The well-behaved test plugin: the in-process double (testing/in_process.hpp) behind the
// plugin ABI, with just enough configuration for the registry and CLI tests.
#include <maf/sandbox/plugin.hpp>
#include <maf/sandbox/testing/in_process.hpp>

namespace {

using namespace maf::sandbox;

/// The double, plus an optional reap so the CLI's `reap` has something to call.
class TestBackend final : public testing::InProcessSandboxBackend {
public:
  TestBackend(testing::InProcessSandboxBackendOptions options, bool reap)
      : InProcessSandboxBackend(std::move(options)), reap_(reap) {}
  bool supports_reap() const noexcept override { return reap_; }
  boost::asio::awaitable<ScopePurge> reap(std::chrono::seconds older_than,
                                          std::optional<std::string> scope) override {
    if (!reap_) co_return co_await InProcessSandboxBackend::reap(older_than, std::move(scope));
    co_return ScopePurge{static_cast<int>(older_than.count() % 7), std::nullopt};
  }

private:
  bool reap_;
};

std::shared_ptr<SandboxBackend> make_test_backend(const nlohmann::json& config) {
  require_known_keys(config, {"isolation", "outputs", "default_stdout", "seed_files", "reap"}, TEST_PLUGIN_NAME);
  testing::InProcessSandboxOptions sandbox_options;
  sandbox_options.backend_name = TEST_PLUGIN_NAME;
  if (config.contains("outputs"))
    for (const auto& [marker, out] : config.at("outputs").items())
      sandbox_options.outputs.emplace_back(marker, out.get<std::string>());
  sandbox_options.default_stdout = config.value("default_stdout", std::string());
  if (config.contains("seed_files"))
    for (const auto& [path, content] : config.at("seed_files").items())
      sandbox_options.seed_files.emplace(path, content.get<std::string>());

  testing::InProcessSandboxBackendOptions options;
  options.sandbox = std::make_shared<testing::InProcessSandbox>(std::move(sandbox_options));
  options.name = TEST_PLUGIN_NAME;
  options.isolation = config.value("isolation", std::string("microvm"));
  options.declarations.capabilities = testing::kInProcessCapabilities;
  options.declarations.os_families = OsFamilySet{OsFamily::Posix};
  return std::make_shared<TestBackend>(std::move(options), config.value("reap", false));
}

}  // namespace

MAF_SANDBOX_PLUGIN(TEST_PLUGIN_NAME, "0.0.1", "in-process test double (tests/plugins)", make_test_backend)
