// PluginRegistry: discovery, checks and creation (registry.hpp documents the rules).
#include "maf/sandbox/registry.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

#include "maf/sandbox/plugin.hpp"
#include "plugins/plugin_backend.hpp"

static_assert(std::string_view(MAF_SANDBOX_VERSION) == MAF_SANDBOX_VERSION_STRING,
              "include/maf/sandbox/version.hpp must match project(VERSION) in CMakeLists.txt");

namespace maf::sandbox {

namespace fs = std::filesystem;

std::string_view to_string(PluginFailure failure) noexcept {
  switch (failure) {
    case PluginFailure::OpenFailed: return "open_failed";
    case PluginFailure::EntryMissing: return "entry_missing";
    case PluginFailure::AbiMismatch: return "abi_mismatch";
    case PluginFailure::FingerprintMismatch: return "fingerprint_mismatch";
    case PluginFailure::DuplicateName: return "duplicate_name";
    case PluginFailure::Shadowed: return "shadowed";
    case PluginFailure::InvalidDescriptor: return "invalid_descriptor";
  }
  return "unknown";
}

namespace {

/// One name create() accepts.
struct Registration {
  std::string version;
  std::string description;
  std::optional<fs::path> file;  // absent: static
  BackendFactory factory = nullptr;
  std::shared_ptr<detail::LoadedLibrary> library;  // null: static
  std::size_t dir_index = 0;  // the search directory it came from: earlier shadows later
};

std::string origin_text(const std::optional<fs::path>& file) {
  return file ? "plugin file '" + file->string() + "'" : std::string("a static registration");
}

/// The file of the core library itself, so the registry can tell a build tree from an
/// install and find an install's plugins relative to it.
std::optional<fs::path> core_library_file() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&core_library_file), &info) == 0 || !info.dli_fname) return std::nullopt;
  std::error_code ec;
  fs::path p = fs::weakly_canonical(info.dli_fname, ec);
  return ec ? std::nullopt : std::optional<fs::path>(p);
}

bool is_within(const fs::path& path, const fs::path& dir) {
  auto rel = path.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

/// Candidate files of one directory, in name order; a missing directory yields none.
std::vector<fs::path> candidates_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    std::error_code type_ec;
    if (p.extension() == ".so" && fs::is_regular_file(p, type_ec)) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

PluginEntry entry_of(void* handle) {
  void* symbol = dlsym(handle, kPluginEntrySymbol);
  PluginEntry entry = nullptr;
  // A data pointer to a function pointer: memcpy is the portable spelling POSIX blesses.
  static_assert(sizeof(entry) == sizeof(symbol));
  std::memcpy(&entry, &symbol, sizeof(entry));
  return entry;
}

}  // namespace

struct PluginRegistry::State {
  std::optional<std::vector<fs::path>> fixed_dirs;  // absent: default_plugin_dirs()
  std::vector<fs::path> dirs;
  bool discovered = false;
  std::map<std::string, Registration> registrations;
  /// Names claimed by more than one origin -> the refusal create() throws.
  std::map<std::string, std::string> refused_names;
  std::vector<PluginLoadFailure> failures;

  /// Refuse a second claim on `name`: both origins are named, the name is withdrawn.
  std::string refuse_duplicate(const std::string& name, const std::optional<fs::path>& newcomer) {
    std::string first;
    if (auto it = registrations.find(name); it != registrations.end()) {
      first = origin_text(it->second.file);
      registrations.erase(it);
    } else {
      first = "origins already refused for it";
    }
    std::string message = "backend name '" + name + "' is declared by both " + first + " and " +
                          origin_text(newcomer) + "; both are refused until one is removed";
    refused_names[name] = message;
    return message;
  }

  /// `dir_index`: the file's directory's place in the search order (precedence).
  void load_file(const fs::path& file, std::size_t dir_index) {
    auto fail = [&](PluginFailure reason, std::string message) {
      failures.push_back(PluginLoadFailure{file, reason, std::move(message)});
    };
    dlerror();  // clear a stale message
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      fail(PluginFailure::OpenFailed,
           "plugin file '" + file.string() + "' could not be loaded: " + (why ? why : "dlopen failed"));
      return;
    }
    auto library = std::make_shared<detail::LoadedLibrary>(handle);
    PluginEntry entry = entry_of(handle);
    if (!entry) {
      fail(PluginFailure::EntryMissing, "plugin file '" + file.string() + "' does not export '" +
                                            kPluginEntrySymbol + "'; is it a maf-sandbox plugin (MAF_SANDBOX_PLUGIN)?");
      return;
    }
    const PluginDescriptor* d = entry();
    if (!d) {
      fail(PluginFailure::InvalidDescriptor, "plugin file '" + file.string() + "' returned no descriptor");
      return;
    }
    // Only the two leading C fields are trusted until both match.
    if (d->abi_version != kPluginAbiVersion) {
      fail(PluginFailure::AbiMismatch, "plugin file '" + file.string() + "' uses plugin ABI version " +
                                           std::to_string(d->abi_version) + "; this core speaks version " +
                                           std::to_string(kPluginAbiVersion));
      return;
    }
    const char* theirs = d->build_fingerprint ? d->build_fingerprint : "(none)";
    if (std::strcmp(theirs, MAF_SANDBOX_BUILD_FINGERPRINT) != 0) {
      fail(PluginFailure::FingerprintMismatch,
           "plugin file '" + file.string() + "' was built as '" + theirs + "' but this core was built as '" +
               MAF_SANDBOX_BUILD_FINGERPRINT + "'; rebuild the plugin against this core");
      return;
    }
    if (!d->name || !*d->name || !d->factory) {
      fail(PluginFailure::InvalidDescriptor,
           "plugin file '" + file.string() + "' has a descriptor without a name or a factory");
      return;
    }
    const std::string name = d->name;
    if (auto it = registrations.find(name); it != registrations.end() && it->second.file &&
                                            it->second.dir_index < dir_index) {
      fail(PluginFailure::Shadowed, "plugin file '" + file.string() + "' declares backend '" + name +
                                        "', which '" + it->second.file->string() +
                                        "' (earlier in the search path) serves; this file is not used");
      return;
    }
    if (registrations.count(name) || refused_names.count(name)) {
      // Withdraw the earlier file too, and report it as refused alongside this one.
      std::optional<fs::path> earlier;
      if (auto it = registrations.find(name); it != registrations.end()) earlier = it->second.file;
      std::string message = refuse_duplicate(name, file);
      if (earlier) failures.push_back(PluginLoadFailure{*earlier, PluginFailure::DuplicateName, message});
      fail(PluginFailure::DuplicateName, message);
      return;
    }
    registrations[name] = Registration{d->version ? d->version : "", d->description ? d->description : "", file,
                                       d->factory, std::move(library), dir_index};
  }
};

PluginRegistry::PluginRegistry() : state_(std::make_unique<State>()) {}

PluginRegistry::PluginRegistry(std::vector<fs::path> dirs) : state_(std::make_unique<State>()) {
  state_->fixed_dirs = std::move(dirs);
}

PluginRegistry::~PluginRegistry() = default;

PluginRegistry& PluginRegistry::global() {
  static PluginRegistry registry;
  return registry;
}

std::vector<fs::path> PluginRegistry::default_plugin_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("MAF_SANDBOX_PLUGIN_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string_view part = rest.substr(0, colon);
      if (!part.empty()) dirs.emplace_back(std::string(part));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  const fs::path build_dir = MAF_SANDBOX_BUILD_PLUGIN_DIR;
  const fs::path installed_dir = MAF_SANDBOX_PLUGIN_INSTALL_DIR;
  const auto core = core_library_file();
  if (core && is_within(*core, build_dir.parent_path())) {
    dirs.push_back(build_dir);
  } else {
    if (core) dirs.push_back(core->parent_path() / "maf-sandbox" / "plugins");
    if (!core || core->parent_path() / "maf-sandbox" / "plugins" != installed_dir) dirs.push_back(installed_dir);
  }
  return dirs;
}

void PluginRegistry::discover_locked() {
  State& s = *state_;
  if (s.discovered) return;
  s.discovered = true;
  s.dirs = s.fixed_dirs ? *s.fixed_dirs : default_plugin_dirs();
  std::set<fs::path> seen;  // one file reached through two directories loads once
  for (std::size_t index = 0; index < s.dirs.size(); ++index)
    for (const auto& file : candidates_in(s.dirs[index])) {
      std::error_code ec;
      fs::path canonical = fs::canonical(file, ec);
      if (!seen.insert(ec ? file : canonical).second) continue;
      s.load_file(file, index);
    }
}

void PluginRegistry::register_backend(std::string name, std::string version, StaticBackendFactory factory,
                                      std::string description) {
  if (name.empty()) throw ValueError("register_backend: the backend name is empty");
  if (!factory) throw ValueError("register_backend: backend '" + name + "' has a null factory");
  std::lock_guard lock(mutex_);
  State& s = *state_;
  if (s.registrations.count(name) || s.refused_names.count(name)) {
    const std::optional<fs::path> earlier =
        s.registrations.count(name) ? s.registrations[name].file : std::optional<fs::path>{};
    std::string message = s.refuse_duplicate(name, std::nullopt);
    if (earlier) s.failures.push_back(PluginLoadFailure{*earlier, PluginFailure::DuplicateName, message});
    throw PluginDuplicateName({}, message);
  }
  s.registrations[name] = Registration{std::move(version), std::move(description), std::nullopt, factory, nullptr};
}

std::vector<std::string> PluginRegistry::names() {
  std::lock_guard lock(mutex_);
  discover_locked();
  std::vector<std::string> out;
  for (const auto& [name, r] : state_->registrations) out.push_back(name);
  return out;  // std::map keeps them sorted
}

std::shared_ptr<SandboxBackend> PluginRegistry::create(const std::string& name, const nlohmann::json& config) {
  Registration r;
  {
    std::lock_guard lock(mutex_);
    discover_locked();
    const State& s = *state_;
    if (auto it = s.refused_names.find(name); it != s.refused_names.end())
      throw PluginDuplicateName({}, it->second);
    auto it = s.registrations.find(name);
    if (it == s.registrations.end()) {
      std::string known;
      for (const auto& [n, reg] : s.registrations) known += (known.empty() ? "" : ", ") + n;
      std::string message = "sandbox backend '" + name + "' is not registered (known: " +
                            (known.empty() ? std::string("none") : known) + ")";
      if (!s.failures.empty())
        message += "; " + std::to_string(s.failures.size()) + " plugin file(s) were refused (see `maf-sandbox plugins`)";
      throw NoSandboxBackend(message);
    }
    r = it->second;  // a copy: the factory runs unlocked and the library stays referenced
  }
  const nlohmann::json effective = config.is_null() ? nlohmann::json::object() : config;
  std::shared_ptr<SandboxBackend> backend;
  try {
    backend = r.factory(effective);
  } catch (const Error&) {
    throw;  // the core's own types cross the boundary unchanged
  } catch (const std::exception& e) {
    throw RuntimeError("backend '" + name + "': its factory failed: " + e.what());
  }
  if (!backend) throw RuntimeError("backend '" + name + "': its factory returned no backend");
  if (!r.library) return backend;
  return detail::wrap_plugin_backend(std::move(backend), std::move(r.library));
}

PluginCatalog PluginRegistry::list() {
  PluginCatalog catalog;
  std::vector<std::pair<std::string, Registration>> regs;
  {
    std::lock_guard lock(mutex_);
    discover_locked();
    regs.assign(state_->registrations.begin(), state_->registrations.end());
    catalog.failures = state_->failures;
  }
  for (const auto& [name, r] : regs) {
    BackendListing listing{name, r.version, r.description, r.file, std::nullopt, std::nullopt, false, std::nullopt, {}};
    try {
      auto backend = create(name, nlohmann::json::object());
      listing.isolation = backend->isolation();
      listing.declarations = backend->declarations();
      listing.supports_reap = backend->supports_reap();
      listing.facts = backend->facts();
    } catch (const std::exception& e) {
      listing.describe_error = e.what();
    }
    catalog.backends.push_back(std::move(listing));
  }
  return catalog;
}

std::vector<fs::path> PluginRegistry::search_dirs() const {
  std::lock_guard lock(mutex_);
  return state_->discovered ? state_->dirs : (state_->fixed_dirs ? *state_->fixed_dirs : default_plugin_dirs());
}

}  // namespace maf::sandbox
