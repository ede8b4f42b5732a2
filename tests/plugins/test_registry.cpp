// PluginRegistry against real shared libraries built in tests/plugins (registry.hpp,
// plugin.hpp). Each refused plugin lives in its own directory, so every test chooses
// exactly which files the registry sees.
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "maf/sandbox/plugin.hpp"
#include "maf/sandbox/registry.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

namespace fs = std::filesystem;
using namespace maf::sandbox;
using Catch::Matchers::Contains;

namespace {

const fs::path kRoot = MAF_TEST_PLUGIN_ROOT;
const fs::path kGood = kRoot / "good";
const fs::path kGoodFile = kGood / "libmaf-sandbox-test-good.so";

const PluginLoadFailure* failure_for(const PluginCatalog& catalog, const fs::path& file) {
  for (const auto& f : catalog.failures)
    if (f.file == file) return &f;
  return nullptr;
}

bool library_loaded(const fs::path& file) {
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);  // RTLD_NOLOAD still counts a reference
  return h != nullptr;
}

/// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { old_ ? (void)setenv(name_, old_->c_str(), 1) : (void)unsetenv(name_); }
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("registry: MAF_SANDBOX_PLUGIN_PATH is searched first, in order, empty entries skipped") {
  ScopedEnv env("MAF_SANDBOX_PLUGIN_PATH", kGood.string() + "::" + (kRoot / "abi").string());
  const auto dirs = PluginRegistry::default_plugin_dirs();
  REQUIRE(dirs.size() >= 3);
  CHECK(dirs[0] == kGood);
  CHECK(dirs[1] == kRoot / "abi");
  // Running from the build tree: its plugin dir comes next, and the install dir is not searched.
  CHECK(dirs[2] == fs::path(MAF_TEST_BUILD_PLUGIN_DIR));
}

TEST_CASE("registry: the good plugin loads through dlopen via MAF_SANDBOX_PLUGIN_PATH and lists its declarations") {
  ScopedEnv env("MAF_SANDBOX_PLUGIN_PATH", kGood.string());
  PluginRegistry registry;  // default search order
  const PluginCatalog catalog = registry.list();
  // The build tree's plugin directory is searched too; only our file matters here.
  CHECK(failure_for(catalog, kGoodFile) == nullptr);
  const BackendListing* good = nullptr;
  for (const auto& b : catalog.backends)
    if (b.name == "test-good") good = &b;
  REQUIRE(good != nullptr);
  CHECK(good->version == "0.0.1");
  CHECK(good->file == kGoodFile);
  CHECK(good->isolation == std::optional<std::string>("microvm"));
  REQUIRE(good->declarations);
  CHECK(good->declarations->capabilities.contains(Capability::FilesOut));
  CHECK(good->declarations->egress_modes == EgressSet{Egress::Allowlist, Egress::Closed});
  CHECK(good->declarations->os_families == OsFamilySet{OsFamily::Posix});
  CHECK_FALSE(good->describe_error);
}

TEST_CASE("registry: a created plugin backend serves a router end to end (C-62, C-69)") {
  PluginRegistry registry({kGood});
  auto backend = registry.create("test-good", {{"outputs", {{"hello", "hi from the plugin\n"}}}});
  CHECK(backend->name() == "test-good");
  SandboxRouter router({backend});
  BlockingRunner run;
  SandboxSpec spec({.kind = "shell"});
  auto sandbox = run([&] { return router.acquire({"s", "t", "a"}, spec); });
  auto result = run([&] { return sandbox->exec(std::vector<std::string>{"echo", "hello"}); });
  CHECK(result.stdout_text() == "hi from the plugin\n");
}

TEST_CASE("registry: unknown configuration keys are refused by name and backend") {
  PluginRegistry registry({kGood});
  try {
    registry.create("test-good", {{"isolaton", "vm"}});
    FAIL("an unknown key was accepted");
  } catch (const ValueError& e) {
    CHECK_THAT(e.what(), Contains("'isolaton'") && Contains("test-good"));
  }
  CHECK_THROWS_AS(registry.create("test-good", nlohmann::json::array()), ValueError);
}

TEST_CASE("registry: require_known_keys names the key, the backend and the known keys") {
  CHECK_NOTHROW(require_known_keys(nlohmann::json(), {"a"}, "b"));
  CHECK_NOTHROW(require_known_keys({{"a", 1}}, {"a"}, "b"));
  CHECK_THROWS_WITH(require_known_keys({{"z", 1}}, {"a", "c"}, "mine"),
                    Contains("backend 'mine'") && Contains("'z'") && Contains("known: a, c"));
}

TEST_CASE("registry: an unknown backend name is NoSandboxBackend listing the known names (C-62 wording)") {
  PluginRegistry registry({kGood});
  CHECK_THROWS_AS(registry.create("docker", {}), NoSandboxBackend);
  CHECK_THROWS_WITH(registry.create("docker", {}), Contains("'docker'") && Contains("known: test-good"));
}

TEST_CASE("registry: a different build fingerprint is refused naming the file and both fingerprints") {
  PluginRegistry registry({kRoot / "fingerprint", kGood});
  const auto catalog = registry.list();
  const auto* f = failure_for(catalog, kRoot / "fingerprint" / "libmaf-sandbox-fingerprint.so");
  REQUIRE(f != nullptr);
  CHECK(f->reason == PluginFailure::FingerprintMismatch);
  CHECK_THAT(f->message, Contains("libmaf-sandbox-fingerprint.so") && Contains("core-0.0.0+othercc-1.0") &&
                             Contains(std::string(kBuildFingerprint)));
  // The bad file does not poison the good one.
  CHECK(registry.names() == std::vector<std::string>{"test-good"});
  CHECK(registry.create("test-good", {}) != nullptr);
  // Its (unread) name is not registered either.
  CHECK_THROWS_AS(registry.create("mismatched", {}), NoSandboxBackend);
}

TEST_CASE("registry: a different plugin ABI version is refused naming the file and both versions") {
  PluginRegistry registry({kRoot / "abi"});
  const auto catalog = registry.list();
  REQUIRE(catalog.failures.size() == 1);
  CHECK(catalog.failures[0].reason == PluginFailure::AbiMismatch);
  CHECK_THAT(catalog.failures[0].message, Contains("libmaf-sandbox-abi.so") && Contains("999") &&
                                              Contains("version " + std::to_string(kPluginAbiVersion)));
  CHECK(catalog.backends.empty());
}

TEST_CASE("registry: a library without the entry symbol is refused naming the symbol") {
  PluginRegistry registry({kRoot / "no-entry"});
  const auto catalog = registry.list();
  REQUIRE(catalog.failures.size() == 1);
  CHECK(catalog.failures[0].reason == PluginFailure::EntryMissing);
  CHECK_THAT(catalog.failures[0].message,
             Contains("libmaf-sandbox-no-entry.so") && Contains(std::string(kPluginEntrySymbol)));
}

TEST_CASE("registry: a file dlopen cannot load is refused with dlerror's text") {
  const fs::path dir = fs::temp_directory_path() / ("maf-registry-garbage-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "libmaf-sandbox-garbage.so") << "not an ELF file";
  std::ofstream(dir / "README.txt") << "not a candidate";
  PluginRegistry registry({dir});
  const auto catalog = registry.list();
  fs::remove_all(dir);
  REQUIRE(catalog.failures.size() == 1);
  CHECK(catalog.failures[0].reason == PluginFailure::OpenFailed);
  CHECK_THAT(catalog.failures[0].message, Contains("libmaf-sandbox-garbage.so") && Contains("could not be loaded"));
  // dlerror() names the file and what was wrong with it.
  CHECK_THAT(catalog.failures[0].message, Contains("file too short") || Contains("invalid ELF header"));
}

TEST_CASE("registry: a name served by an earlier search directory shadows a later one, as PATH does") {
  PluginRegistry registry({kGood, kRoot / "duplicate"});
  const auto catalog = registry.list();
  const fs::path copy = kRoot / "duplicate" / "libmaf-sandbox-test-good-copy.so";
  REQUIRE(catalog.backends.size() == 1);
  CHECK(catalog.backends[0].file == kGoodFile);
  CHECK(failure_for(catalog, kGoodFile) == nullptr);
  const auto* shadowed = failure_for(catalog, copy);
  REQUIRE(shadowed != nullptr);
  CHECK(shadowed->reason == PluginFailure::Shadowed);
  CHECK(to_string(shadowed->reason) == "shadowed");
  CHECK_THAT(shadowed->message, Contains(kGoodFile.string()) && Contains(copy.string()) && Contains("'test-good'"));
  CHECK(registry.create("test-good", {})->name() == "test-good");
  // The other order serves the other file.
  PluginRegistry reversed({kRoot / "duplicate", kGood});
  const auto other = reversed.list();
  REQUIRE(other.backends.size() == 1);
  CHECK(other.backends[0].file == copy);
}

TEST_CASE("registry: two files claiming one name in one directory are both refused, naming both files") {
  const fs::path dir = fs::temp_directory_path() / ("maf-registry-same-dir-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path a = dir / "libmaf-sandbox-a.so";
  const fs::path b = dir / "libmaf-sandbox-b.so";
  fs::copy_file(kGoodFile, a, fs::copy_options::overwrite_existing);
  fs::copy_file(kRoot / "duplicate" / "libmaf-sandbox-test-good-copy.so", b, fs::copy_options::overwrite_existing);
  PluginRegistry registry({dir});
  const auto catalog = registry.list();
  const auto* first = failure_for(catalog, a);
  const auto* second = failure_for(catalog, b);
  REQUIRE(first != nullptr);
  REQUIRE(second != nullptr);
  CHECK(first->reason == PluginFailure::DuplicateName);
  CHECK(second->reason == PluginFailure::DuplicateName);
  CHECK_THAT(second->message, Contains(a.string()) && Contains(b.string()) && Contains("'test-good'"));
  CHECK(catalog.backends.empty());
  try {
    registry.create("test-good", {});
    FAIL("a duplicated name was served");
  } catch (const PluginDuplicateName& e) {
    CHECK_THAT(e.what(), Contains(a.string()) && Contains(b.string()));
  }
  fs::remove_all(dir);
}

TEST_CASE("registry: one file reached through two directories loads once") {
  PluginRegistry registry({kGood, kGood / "." });
  const auto catalog = registry.list();
  CHECK(catalog.failures.empty());
  CHECK(catalog.backends.size() == 1);
}

std::shared_ptr<SandboxBackend> make_static_backend(const nlohmann::json& config) {
  require_known_keys(config, {}, "test-good");
  return std::make_shared<testing::InProcessSandboxBackend>(
      testing::InProcessSandboxBackendOptions{.sandbox = nullptr, .name = "test-good", .isolation = "vm"});
}

TEST_CASE("registry: a static registration is created by name, without a file") {
  PluginRegistry registry(std::vector<fs::path>{});
  registry.register_backend("test-good", "9.9", make_static_backend, "linked in");
  const auto catalog = registry.list();
  REQUIRE(catalog.backends.size() == 1);
  CHECK_FALSE(catalog.backends[0].file);
  CHECK(catalog.backends[0].isolation == std::optional<std::string>("vm"));
  CHECK(registry.create("test-good", {})->isolation() == "vm");
  CHECK_THROWS_AS(registry.register_backend("test-good", "1", make_static_backend), PluginDuplicateName);
  CHECK_THROWS_AS(registry.register_backend("", "1", make_static_backend), ValueError);
}

TEST_CASE("registry: a static registration and a plugin file with one name are both refused, either order") {
  SECTION("static first, then discovery") {
    PluginRegistry registry({kGood});
    registry.register_backend("test-good", "9.9", make_static_backend);
    const auto catalog = registry.list();
    const auto* f = failure_for(catalog, kGoodFile);
    REQUIRE(f != nullptr);
    CHECK(f->reason == PluginFailure::DuplicateName);
    CHECK_THAT(f->message, Contains("static registration") && Contains(kGoodFile.string()));
    CHECK_THROWS_AS(registry.create("test-good", {}), PluginDuplicateName);
  }
  SECTION("discovery first, then static") {
    PluginRegistry registry({kGood});
    CHECK(registry.names() == std::vector<std::string>{"test-good"});
    CHECK_THROWS_WITH(registry.register_backend("test-good", "9.9", make_static_backend),
                      Contains("static registration") && Contains(kGoodFile.string()));
    CHECK_THROWS_AS(registry.create("test-good", {}), PluginDuplicateName);
  }
}

TEST_CASE("registry: the library stays loaded while a backend or a sandbox from it lives") {
  REQUIRE_FALSE(library_loaded(kGoodFile));
  std::shared_ptr<SandboxBackend> backend;
  {
    PluginRegistry registry({kGood});
    backend = registry.create("test-good", {{"default_stdout", "still here"}});
    CHECK(library_loaded(kGoodFile));
  }  // the registry, and its own handle, are gone
  CHECK(library_loaded(kGoodFile));
  CHECK(backend->name() == "test-good");

  BlockingRunner run;
  std::shared_ptr<Sandbox> sandbox =
      run([&] { return backend->acquire({"s", "t", "a"}, SandboxSpec({.kind = "shell"})); });
  backend.reset();  // only the sandbox holds the plugin now
  CHECK(library_loaded(kGoodFile));
  CHECK(run([&] { return sandbox->exec("anything"); }).stdout_text() == "still here");

  sandbox.reset();
  // Built with -fno-gnu-unique, so the last reference really unmaps it.
  CHECK_FALSE(library_loaded(kGoodFile));
}

TEST_CASE("registry: the core's fingerprint names compiler, stdlib, Boost, json and core version") {
  const std::string fp(kBuildFingerprint);
  CHECK_THAT(fp, Contains("core-" MAF_SANDBOX_VERSION_STRING) && Contains(";boost-") && Contains(";json-") &&
                     Contains(";cxx-"));
}
