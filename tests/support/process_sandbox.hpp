#pragma once
// One process-backend sandbox for a scenario test: a fresh root the guest's host uid can
// traverse, a backend over it, one acquired sandbox; on destruction everything the backend
// made is reaped and the root removed. Shared by tests/background and tests/host_tools.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sync.hpp"

namespace maf::sandbox::test {

struct ProcessSandbox {
  std::filesystem::path root;
  std::shared_ptr<SandboxBackend> backend;
  std::shared_ptr<Sandbox> sandbox;
  BlockingRunner run;

  /// `name` names the root under the temp directory (with this process's pid).
  ProcessSandbox(const std::string& name, const SandboxKey& key, const SandboxSpec& spec)
      : root(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(root);
    std::filesystem::permissions(root, std::filesystem::perms(0711));  // traversable by the guest's host uid
    process::ProcessBackendConfig c;
    c.root = root;
    backend = process::make_process_backend(c);
    sandbox = run([&] { return backend->acquire(key, spec); });
  }
  ~ProcessSandbox() {
    try {
      run([&] { return backend->reap(std::chrono::seconds(0), std::nullopt); });
    } catch (...) {
    }
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  ProcessSandbox(const ProcessSandbox&) = delete;
  ProcessSandbox& operator=(const ProcessSandbox&) = delete;
};

}  // namespace maf::sandbox::test
