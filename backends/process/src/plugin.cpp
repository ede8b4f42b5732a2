// The plugin entry of maf-sandbox-process.
#include "maf/sandbox/plugin.hpp"
#include "maf/sandbox/process/process_backend.hpp"

namespace {
std::shared_ptr<maf::sandbox::SandboxBackend> make_from_json(const nlohmann::json& config) {
  return maf::sandbox::process::make_process_backend(maf::sandbox::process::parse_process_config(config));
}
}  // namespace

MAF_SANDBOX_PLUGIN("process", "0.1.0", "bubblewrap-confined processes on this host (os_process)", make_from_json)
