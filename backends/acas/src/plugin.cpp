// The plugin entry: `libmaf-sandbox-acas.so` exports maf_sandbox_plugin_v1 (plugin.hpp).
// The factory contacts nothing: the endpoint is validated and a token fetched on acquire;
// cli_test_cli "A-70/R-1" holds it with no service and no credentials.
#include "maf/sandbox/acas/backend.hpp"
#include "maf/sandbox/plugin.hpp"

namespace maf::sandbox::acas {
namespace {
std::shared_ptr<AcasSandboxBackend> make_acas_backend(const nlohmann::json& json) {
  return std::make_shared<AcasSandboxBackend>(parse_acas_config(json));
}
}  // namespace
}  // namespace maf::sandbox::acas

MAF_SANDBOX_PLUGIN("acas", "0.1.0",
                   "Azure Container Apps Sandboxes (microVM) over the data-plane REST API, libcurl",
                   maf::sandbox::acas::make_acas_backend)
