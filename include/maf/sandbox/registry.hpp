#pragma once
/// @file registry.hpp
/// Finding backends at run time: plugin shared libraries (plugin.hpp) and backends linked
/// into the program, both reached by name.
///
/// **Where plugins are found**, in this order (`default_plugin_dirs()`):
///  1. each directory of `MAF_SANDBOX_PLUGIN_PATH` (colon-separated; empty entries skipped);
///  2. when the core library runs from its build tree: the build tree's plugin directory
///     (`<build>/plugins`); otherwise the installed plugin directory — next to the core
///     library (`<libdir>/maf-sandbox/plugins`, so a relocated install still works) and the
///     compiled-in `<prefix>/<libdir>/maf-sandbox/plugins` when that differs.
///     Only one of the two trees is searched so an installed copy and a build tree on one
///     machine never present every backend twice.
/// In each directory every regular file (or link to one) whose name ends in `.so` is a
/// candidate, in name order; the convention is `libmaf-sandbox-<backend>.so`. A missing
/// directory is not an error. One file reached through two directories counts once.
///
/// **Discovery is lazy and happens once**: the first call to list(), create() or names()
/// dlopens every candidate (RTLD_NOW | RTLD_LOCAL) and checks it; later calls reuse the
/// result. A bad file never poisons the rest: list() reports it among `failures` beside the
/// good backends, and create() of a good backend still works. A refused file is closed.
///
/// **Checks, in order, per file** — each failure is a PluginLoadError subtype naming the
/// file: dlopen fails (PluginOpenError, with dlerror()'s text); the entry symbol is missing
/// (PluginEntryMissing); the descriptor's ABI version differs (PluginAbiMismatch, both
/// versions); the build fingerprint differs (PluginFingerprintMismatch, both strings) — only
/// then are name, version and factory read; the name is already taken
/// (PluginDuplicateName, both origins).
///
/// **Precedence is the search order, directory by directory, as with PATH**: a name served
/// by a file in an earlier directory *shadows* a file of the same name in a later one — so
/// `MAF_SANDBOX_PLUGIN_PATH=<build>/plugins` over an installed core serves the build's
/// backends. The shadowed file is listed (reason `Shadowed`, not an error) and closed. Two
/// files claiming one name in the *same* directory have no order between them: that name is
/// refused for both, and create() of it throws the duplicate error until one is removed.
///
/// **Lifetime** (Boost.DLL's rule): a backend created from a plugin holds the library open,
/// and so does every Sandbox it acquires — the library is closed only after the registry
/// and the last object from it are gone. Such a backend is a thin forwarding wrapper, so
/// `dynamic_cast` to the plugin's concrete type does not work; a host that needs the
/// concrete type links the backend directly.
///
/// **Statically linked backends** register with register_backend(). A name registered both
/// statically and by a plugin file is refused for both, whatever the order: a
/// register_backend() after discovery throws PluginDuplicateName, and either way create()
/// of that name throws it.
///
/// All members are safe to call from several threads.

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The full header, not json_fwd: create("process", {}) must compile in a host that included
// only this header (a braced config needs the complete type).
#include <nlohmann/json.hpp>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/declarations.hpp"
#include "maf/sandbox/errors.hpp"

namespace maf::sandbox {

/// Why a plugin file or registration was refused.
enum class PluginFailure {
  OpenFailed,           ///< dlopen refused the file
  EntryMissing,         ///< no `maf_sandbox_plugin_v1` symbol
  AbiMismatch,          ///< descriptor ABI version differs from the core's
  FingerprintMismatch,  ///< built against a different compiler / stdlib / Boost / json / core
  DuplicateName,        ///< another file or a static registration already uses the name
  InvalidDescriptor,    ///< null descriptor, empty name or null factory
  Shadowed,             ///< not an error: an earlier search directory serves this name
};

/// "open_failed", "entry_missing", ... (stable strings for --json output).
std::string_view to_string(PluginFailure failure) noexcept;

/// A plugin could not be loaded or registered. `file()` is empty for a static registration.
class PluginLoadError : public RuntimeError {
public:
  PluginLoadError(PluginFailure reason, std::filesystem::path file, const std::string& message)
      : RuntimeError(message), reason_(reason), file_(std::move(file)) {}
  PluginFailure reason() const noexcept { return reason_; }
  const std::filesystem::path& file() const noexcept { return file_; }

private:
  PluginFailure reason_;
  std::filesystem::path file_;
};

#define MAF_SANDBOX_DEFINE_PLUGIN_ERROR(Name, Reason)                                   \
  class Name : public PluginLoadError {                                                 \
  public:                                                                               \
    Name(std::filesystem::path file, const std::string& message)                        \
        : PluginLoadError(PluginFailure::Reason, std::move(file), message) {}           \
  }
MAF_SANDBOX_DEFINE_PLUGIN_ERROR(PluginOpenError, OpenFailed);
MAF_SANDBOX_DEFINE_PLUGIN_ERROR(PluginEntryMissing, EntryMissing);
MAF_SANDBOX_DEFINE_PLUGIN_ERROR(PluginAbiMismatch, AbiMismatch);
MAF_SANDBOX_DEFINE_PLUGIN_ERROR(PluginFingerprintMismatch, FingerprintMismatch);
MAF_SANDBOX_DEFINE_PLUGIN_ERROR(PluginDuplicateName, DuplicateName);
MAF_SANDBOX_DEFINE_PLUGIN_ERROR(PluginInvalidDescriptor, InvalidDescriptor);
#undef MAF_SANDBOX_DEFINE_PLUGIN_ERROR

/// A factory for a statically linked backend; same contract as a plugin's (plugin.hpp).
using StaticBackendFactory = std::shared_ptr<SandboxBackend> (*)(const nlohmann::json& config);

/// One backend the registry can create.
struct BackendListing {
  std::string name;
  std::string version;
  std::string description;
  /// The plugin file; absent for a statically registered backend.
  std::optional<std::filesystem::path> file;
  /// What an instance built from `{}` declares. Absent when that instance could not be
  /// built (the backend needs configuration): see `describe_error`.
  std::optional<std::string> isolation;
  std::optional<BackendDeclarations> declarations;
  bool supports_reap = false;
  std::optional<std::string> describe_error;
  /// What that instance says of its set-up (SandboxBackend::facts).
  std::vector<std::pair<std::string, std::string>> facts;
};

/// A file (or static registration) that was refused.
struct PluginLoadFailure {
  std::filesystem::path file;  ///< empty for a static registration
  PluginFailure reason;
  std::string message;  ///< the PluginLoadError's text
};

/// What list() found.
struct PluginCatalog {
  std::vector<BackendListing> backends;  ///< sorted by name
  std::vector<PluginLoadFailure> failures;  ///< in discovery order
};

class PluginRegistry {
public:
  /// Searches default_plugin_dirs() (read when discovery happens, not now).
  PluginRegistry();
  /// Searches exactly `dirs`, in order (tests; hosts with their own layout).
  explicit PluginRegistry(std::vector<std::filesystem::path> dirs);
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  /// The process-wide registry a statically linked backend registers with.
  static PluginRegistry& global();

  /// The default search order documented above, with MAF_SANDBOX_PLUGIN_PATH read now.
  static std::vector<std::filesystem::path> default_plugin_dirs();

  /// Register a backend linked into the program. Throws PluginDuplicateName when the name is
  /// taken (statically, or by a plugin already discovered) and ValueError for an empty name
  /// or a null factory.
  void register_backend(std::string name, std::string version, StaticBackendFactory factory,
                        std::string description = {});

  /// Every backend and every refused file. Builds each backend once from `{}` to read its
  /// isolation and declarations (a factory that needs configuration is listed without them).
  PluginCatalog list();

  /// Names of the backends create() accepts, sorted.
  std::vector<std::string> names();

  /// Build backend `name` from `config` (a JSON object; null = `{}`). Throws
  /// NoSandboxBackend for an unknown name (listing the known ones), PluginDuplicateName for
  /// a name two origins claim, and whatever the factory throws (ValueError for an unknown
  /// configuration key).
  std::shared_ptr<SandboxBackend> create(const std::string& name, const nlohmann::json& config);

  /// The directories searched (after discovery: exactly those used).
  std::vector<std::filesystem::path> search_dirs() const;

private:
  struct State;
  void discover_locked();
  std::unique_ptr<State> state_;
  mutable std::mutex mutex_;
};

}  // namespace maf::sandbox
