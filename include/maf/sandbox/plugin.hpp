#pragma once
/// @file plugin.hpp
/// The plugin ABI: how a backend shared library introduces itself to the registry
/// (registry.hpp).
///
/// A plugin exports exactly one `extern "C"` function, `maf_sandbox_plugin_v1`, returning a
/// pointer to a static `PluginDescriptor`. The registry reads `abi_version` and
/// `build_fingerprint` first — both plain C data at fixed offsets — and refuses the file
/// unless both equal its own, before it touches the name, the version or the factory.
/// C++ has no stable ABI (DuckDB learned this for its extensions): a plugin built by another
/// compiler, standard library, Boost, nlohmann/json or core version could lay out
/// `std::shared_ptr`, `SandboxSpec` or a vtable differently, so the match is exact.
///
/// A backend author writes:
///
/// @code
///   #include <maf/sandbox/plugin.hpp>
///
///   std::shared_ptr<MyBackend> make_my_backend(const nlohmann::json& config) {
///     maf::sandbox::require_known_keys(config, {"socket", "runtime"}, "mine");
///     return std::make_shared<MyBackend>(config.value("socket", "/run/mine.sock"));
///   }
///
///   MAF_SANDBOX_PLUGIN("mine", "1.2.0", "Runs workloads in Mine microVMs", make_my_backend)
/// @endcode
///
/// and builds a CMake MODULE library named `maf-sandbox-<name>` (file
/// `libmaf-sandbox-<name>.so`) linked to `maf::sandbox`.
///
/// Rules for the factory:
///  - refuse unknown configuration keys by name (`require_known_keys`), so a typo is never
///    silently a default;
///  - do not contact the engine: the registry calls the factory with an empty object `{}` to
///    read `isolation()` and `declarations()` for `maf-sandbox plugins`; connect lazily, in
///    `acquire`;
///  - throw the core's error types (errors.hpp); the core is a shared library, so their
///    RTTI is shared across the boundary and a host catches them by base.
///
/// Loading a library runs its static initialisers before any check can happen (dlopen does
/// that); keep them trivial.
///
/// nlohmann/json appears here on purpose: plugin.hpp is not part of the umbrella header.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <version>  // the standard library's version macros

#include <boost/version.hpp>
#include <nlohmann/json.hpp>

#include "maf/sandbox/backend.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/version.hpp"

// --- The build fingerprint ------------------------------------------------------------
// Everything here is computed by the preprocessor from the including translation unit, so
// the core (src/plugins/registry.cpp) and every plugin compute it the same way, each at its own
// compile time. Two builds whose fingerprints differ must not share C++ objects.

#define MAF_SANDBOX_DETAIL_STR2(x) #x
#define MAF_SANDBOX_DETAIL_STR(x) MAF_SANDBOX_DETAIL_STR2(x)

#if defined(__clang__)
#define MAF_SANDBOX_DETAIL_COMPILER                                                      \
  "clang-" MAF_SANDBOX_DETAIL_STR(__clang_major__) "." MAF_SANDBOX_DETAIL_STR(          \
      __clang_minor__) "." MAF_SANDBOX_DETAIL_STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define MAF_SANDBOX_DETAIL_COMPILER                                                      \
  "gcc-" MAF_SANDBOX_DETAIL_STR(__GNUC__) "." MAF_SANDBOX_DETAIL_STR(                   \
      __GNUC_MINOR__) "." MAF_SANDBOX_DETAIL_STR(__GNUC_PATCHLEVEL__)
#else
#define MAF_SANDBOX_DETAIL_COMPILER "unknown-compiler"
#endif

#if defined(_LIBCPP_VERSION)
#define MAF_SANDBOX_DETAIL_STDLIB "libc++-" MAF_SANDBOX_DETAIL_STR(_LIBCPP_VERSION)
#elif defined(__GLIBCXX__)
// _GLIBCXX_RELEASE is the GCC major the headers ship with; __GLIBCXX__ their release date.
#define MAF_SANDBOX_DETAIL_STDLIB                                                        \
  "libstdc++-" MAF_SANDBOX_DETAIL_STR(_GLIBCXX_RELEASE) "." MAF_SANDBOX_DETAIL_STR(__GLIBCXX__)
#else
#define MAF_SANDBOX_DETAIL_STDLIB "unknown-stdlib"
#endif

// libstdc++'s debug mode changes the layout of every container.
#if defined(_GLIBCXX_DEBUG)
#define MAF_SANDBOX_DETAIL_STDLIB_MODE "-debug"
#else
#define MAF_SANDBOX_DETAIL_STDLIB_MODE ""
#endif

/// e.g. "core-0.1.0;gcc-12.2.0;libstdc++-12.20220819;boost-1_74;json-3.11.2;cxx-202002"
/// The factory takes an nlohmann::json, so its version is part of the ABI too; `__cplusplus`
/// because library layouts may differ per language mode.
#define MAF_SANDBOX_BUILD_FINGERPRINT                                                     \
  "core-" MAF_SANDBOX_VERSION_STRING ";" MAF_SANDBOX_DETAIL_COMPILER                      \
  ";" MAF_SANDBOX_DETAIL_STDLIB MAF_SANDBOX_DETAIL_STDLIB_MODE ";boost-" BOOST_LIB_VERSION                               \
  ";json-" MAF_SANDBOX_DETAIL_STR(NLOHMANN_JSON_VERSION_MAJOR) "." MAF_SANDBOX_DETAIL_STR( \
      NLOHMANN_JSON_VERSION_MINOR) "." MAF_SANDBOX_DETAIL_STR(NLOHMANN_JSON_VERSION_PATCH) \
  ";cxx-" MAF_SANDBOX_DETAIL_STR(__cplusplus)

namespace maf::sandbox {

/// Bumped whenever PluginDescriptor or the entry's contract changes. The fingerprint covers
/// the C++ types; this covers the descriptor itself.
inline constexpr std::uint32_t kPluginAbiVersion = 4;  // 2: SandboxBackend::facts(); 3: the acquire NVI (do_acquire);
                                                     // 4: credential sources, fork and snapshots, exec input (issues 46, 48, 49)

/// The exported symbol every plugin defines (through MAF_SANDBOX_PLUGIN).
inline constexpr const char* kPluginEntrySymbol = "maf_sandbox_plugin_v1";

/// The fingerprint of the translation unit that includes this header.
inline constexpr std::string_view kBuildFingerprint = MAF_SANDBOX_BUILD_FINGERPRINT;

/// Builds a backend from its JSON configuration (an object; `{}` when none was given).
using BackendFactory = std::shared_ptr<SandboxBackend> (*)(const nlohmann::json& config);

/// What a plugin's entry returns: a pointer to static, immutable data.
///
/// Layout rule: `abi_version` and `build_fingerprint` are the first two members and stay
/// there in every future ABI version, because the registry reads them before trusting
/// anything else in the struct.
struct PluginDescriptor {
  std::uint32_t abi_version;      ///< kPluginAbiVersion of the plugin's build
  const char* build_fingerprint;  ///< MAF_SANDBOX_BUILD_FINGERPRINT of the plugin's build
  const char* name;               ///< the backend's name: configuration key and CLI --backend
  const char* version;            ///< the backend's own version
  const char* description;        ///< one line for `maf-sandbox plugins`
  BackendFactory factory;
};

/// The entry's signature.
using PluginEntry = const PluginDescriptor* (*)() noexcept;

/// For plugin factories: throw ValueError naming the first key of `config` that is not in
/// `known`, and the backend, so a misspelt option is refused instead of silently ignored.
/// `config` must be a JSON object (null counts as empty).
inline void require_known_keys(const nlohmann::json& config, std::initializer_list<std::string_view> known,
                               std::string_view backend) {
  if (config.is_null()) return;
  if (!config.is_object())
    throw ValueError("backend '" + std::string(backend) + "': configuration must be a JSON object, got " +
                     std::string(config.type_name()));
  for (const auto& item : config.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == item.key();
    if (found) continue;
    std::string valid;
    for (std::string_view k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
    throw ValueError("backend '" + std::string(backend) + "': unknown configuration key '" + item.key() +
                     "' (known: " + (valid.empty() ? std::string("none") : valid) + ")");
  }
}

}  // namespace maf::sandbox

/// Defines the plugin entry. Use once per plugin library, at namespace scope.
/// NAME, VERSION, DESCRIPTION: string literals. FACTORY: a function (or captureless lambda)
/// taking `const nlohmann::json&` and returning a shared_ptr to a SandboxBackend or a type
/// derived from it.
#define MAF_SANDBOX_PLUGIN(NAME, VERSION, DESCRIPTION, FACTORY)                                    \
  extern "C" __attribute__((visibility("default"))) const ::maf::sandbox::PluginDescriptor*        \
  maf_sandbox_plugin_v1() noexcept {                                                               \
    static const ::maf::sandbox::PluginDescriptor descriptor{                                      \
        ::maf::sandbox::kPluginAbiVersion, MAF_SANDBOX_BUILD_FINGERPRINT, NAME, VERSION, DESCRIPTION, \
        [](const ::nlohmann::json& config) -> std::shared_ptr<::maf::sandbox::SandboxBackend> {    \
          return FACTORY(config);                                                                  \
        }};                                                                                        \
    return &descriptor;                                                                            \
  }
