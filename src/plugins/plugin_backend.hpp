#pragma once
// Private to the core: the wrapper that keeps a plugin library loaded while any object
// made by its code is alive (Boost.DLL's rule). Without it, a Sandbox acquired from a
// plugin backend could outlive the registry and call into unmapped code.

#include <memory>

#include "maf/sandbox/backend.hpp"

namespace maf::sandbox::detail {

/// An open dlopen handle; closed when the last owner goes.
class LoadedLibrary {
public:
  explicit LoadedLibrary(void* handle) noexcept : handle_(handle) {}
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;
  void* handle() const noexcept { return handle_; }

private:
  void* handle_;
};

/// Forwards every call to the plugin's backend and ties the library's lifetime to the
/// backend and to each Sandbox it hands out.
std::shared_ptr<SandboxBackend> wrap_plugin_backend(std::shared_ptr<SandboxBackend> inner,
                                                    std::shared_ptr<LoadedLibrary> library);

}  // namespace maf::sandbox::detail
