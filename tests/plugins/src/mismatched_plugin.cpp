// A plugin from "another build": its entry is written by hand so its ABI version or
// fingerprint can differ from the core's. The registry must refuse it before reading the
// name or calling the factory (which would crash the test if it were called).
#include <cstdlib>

#include <maf/sandbox/plugin.hpp>

namespace {
std::shared_ptr<maf::sandbox::SandboxBackend> must_not_be_called(const nlohmann::json&) { std::abort(); }
}  // namespace

extern "C" __attribute__((visibility("default"))) const maf::sandbox::PluginDescriptor*
maf_sandbox_plugin_v1() noexcept {
  static const maf::sandbox::PluginDescriptor descriptor{TEST_ABI_VERSION, TEST_FINGERPRINT, "mismatched", "0.0.1",
                                                         "built elsewhere", must_not_be_called};
  return &descriptor;
}
