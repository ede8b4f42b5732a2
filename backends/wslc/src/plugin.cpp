// The plugin entry: `libmaf-sandbox-wslc.so` exports maf_sandbox_plugin_v1 (plugin.hpp).
// The factory makes no wslc call: the version is checked on the first acquire (W-42);
// cli_test_cli "W-42/W-3" holds it with no wslc to run.
#include "maf/sandbox/plugin.hpp"
#include "maf/sandbox/wslc/backend.hpp"

namespace maf::sandbox::wslc {
namespace {

std::shared_ptr<WslcSandboxBackend> make_wslc_backend(const nlohmann::json& json) {
  return std::make_shared<WslcSandboxBackend>(parse_wslc_config(json));
}

}  // namespace
}  // namespace maf::sandbox::wslc

MAF_SANDBOX_PLUGIN("wslc", "0.1.0",
                   "Linux containers in WSL's session VM through the wslc CLI (WSL 2.9.4+); exec and files_in",
                   maf::sandbox::wslc::make_wslc_backend)
