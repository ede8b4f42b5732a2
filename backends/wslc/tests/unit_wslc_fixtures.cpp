// Recorded wslc output (wslc C-24…C-26, W-43) parsed and classified without an engine:
// the fixtures are written to files from the exact bytes the spec records, then read back
// (T-7, T-8, T-9, T-12, T-14; W-2, W-8, W-43).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/wslc/backend.hpp"
#include "maf/sandbox/wslc/commands.hpp"
#include "maf/sandbox/wslc/container_list.hpp"
#include "maf/sandbox/wslc/error_codes.hpp"
#include "maf/sandbox/wslc/errors.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::wslc;

namespace {

// C-24, verbatim (2.9.4.0): sorted keys, 2-space indent; the recording is CRLF.
const std::string kArray294 =
    "[\n"
    "  {\n"
    "    \"CreatedAt\": 1786228146,\n"
    "    \"Id\": \"65d2ca6ec35c22f4db72c43d0e613dc13fe09ace6bc15061764cd9cabfadeee7\",\n"
    "    \"Image\": \"alpine:3\",\n"
    "    \"Name\": \"maf-sandbox-wslc-c63d0bd23ebf\",\n"
    "    \"Ports\": [],\n"
    "    \"State\": 2,\n"
    "    \"StateChangedAt\": 1786228144\n"
    "  }\n"
    "]\n";

// C-26, verbatim (2.9.12.0): Docker's `ps --format json` shape, one object per line.
const std::string kDocker2912 =
    R"({"Command":"\"sleep infinity\"","CreatedAt":"2026-09-18 15:39:48 +0200 CEST","HealthStatus":"","ID":"5830ec9a00c6","Image":"maf-wslc-e2e:local","Labels":"com.microsoft.wsl.container.metadata={\"V1\":{\"Flags\":0,\"InitProcessFlags\":0,\"Ports\":[],\"Volumes\":[]}}","LocalVolumes":"0","Mounts":"","Names":"maf-sandbox-wslc-5059e019ae0b","Networks":"none","Platform":{"architecture":"amd64","os":"linux"},"Ports":"","RunningFor":"10 seconds ago","Size":"0B","State":"exited","Status":"Exited (137) Less than a second ago"})"
    "\n"
    R"({"Command":"\"sleep infinity\"","CreatedAt":"2026-09-18 15:39:47 +0200 CEST","HealthStatus":"","ID":"bcf6e5af9f21","Image":"maf-wslc-e2e:local","Labels":"com.microsoft.wsl.container.metadata={\"V1\":{\"Flags\":0,\"InitProcessFlags\":0,\"Ports\":[],\"Volumes\":[]}}","LocalVolumes":"0","Mounts":"","Names":"maf-sandbox-wslc-5059e019ae0a","Networks":"none","Platform":{"architecture":"amd64","os":"linux"},"Ports":"","RunningFor":"11 seconds ago","Size":"0B","State":"running","Status":"Up 10 seconds"})"
    "\n";

// C-25 (≈2.9.8): the C-24 keys, one compact object per line.
const std::string kLegacyLines =
    R"({"CreatedAt":1786228146,"Id":"65d2ca6ec35c22f4db72c43d0e613dc13fe09ace6bc15061764cd9cabfadeee7","Image":"alpine:3","Name":"maf-sandbox-wslc-c63d0bd23ebf","Ports":[],"State":2,"StateChangedAt":1786228144})"
    "\n"
    R"({"CreatedAt":1786228150,"Id":"77d2ca6ec35c22f4db72c43d0e613dc13fe09ace6bc15061764cd9cabfadeee7","Image":"alpine:3","Name":"maf-sandbox-wslc-c63d0bd23ebf-proxy","Ports":[],"State":3,"StateChangedAt":1786228151})"
    "\n";

std::string crlf(const std::string& lf) {
  std::string out;
  for (char c : lf) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

/// Writes a fixture file and reads it back as bytes (the parser sees what a file holds).
std::string fixture(const std::string& name, const std::string& bytes) {
  const auto dir = std::filesystem::temp_directory_path() / "maf-wslc-fixtures";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("C-24/T-7: the 2.9.4 array fixture (CRLF and LF) lists one running container") {
  for (const auto& bytes : {fixture("wslc-container-list-2.9.4.json", crlf(kArray294)),
                            fixture("wslc-container-list-2.9.4-lf.json", kArray294)}) {
    auto listed = parse_container_list(bytes);
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].names == std::vector<std::string>{"maf-sandbox-wslc-c63d0bd23ebf"});
    CHECK(listed[0].id == "65d2ca6ec35c22f4db72c43d0e613dc13fe09ace6bc15061764cd9cabfadeee7");
    CHECK(listed[0].state == ListedState::Running);
  }
}

TEST_CASE("C-26/T-7: the 2.9.12 Docker-shape fixture (LF and CRLF) lists both, with Docker's state words") {
  for (const auto& bytes : {fixture("wslc-container-list-2.9.12.jsonl", kDocker2912),
                            fixture("wslc-container-list-2.9.12-crlf.jsonl", crlf(kDocker2912))}) {
    auto listed = parse_container_list(bytes);
    REQUIRE(listed.size() == 2);
    CHECK(listed[0].names == std::vector<std::string>{"maf-sandbox-wslc-5059e019ae0b"});
    CHECK(listed[0].id == "5830ec9a00c6");
    CHECK(listed[0].state == ListedState::Stopped);
    CHECK(listed[1].names == std::vector<std::string>{"maf-sandbox-wslc-5059e019ae0a"});
    CHECK(listed[1].state == ListedState::Running);
  }
}

TEST_CASE("C-25/T-7: compact legacy lines list every entry with numeric states") {
  auto listed = parse_container_list(fixture("wslc-container-list-2.9.8.jsonl", crlf(kLegacyLines)));
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].state == ListedState::Running);
  CHECK(listed[1].names == std::vector<std::string>{"maf-sandbox-wslc-c63d0bd23ebf-proxy"});
  CHECK(listed[1].state == ListedState::Stopped);
}

TEST_CASE("C-24…C-26/T-7: empty shapes, blank lines and junk select nothing and never throw") {
  for (std::string empty : {"", "[]", "[]\r\n", "null", "\r\n", "\n\n  \r\n", "not json", "{\"Name\":", "[1,2,3]",
                            "{\"Other\":\"x\"}", "\x01\x02\xff"})
    CHECK(parse_container_list(empty).empty());
  // A junk line between two good ones costs only itself.
  auto listed = parse_container_list("{\"Name\":\"a\",\"State\":2}\r\n\r\ngarbage\r\n{\"Names\":\"b\",\"State\":\"created\"}\r\n");
  REQUIRE(listed.size() == 2);
  CHECK(listed[1].state == ListedState::Stopped);
}

TEST_CASE("T-7: an empty name is no container, in either key (regression from fuzz_wslc_list)") {
  CHECK(parse_container_list(R"({"Name":"/","State":2})").empty());
  CHECK(parse_container_list(R"([{"Name":"","Id":"ab","State":2}])").empty());
  CHECK(parse_container_list(R"({"Names":"/, ,","State":"running"})").empty());
  CHECK(find_exact(parse_container_list(R"({"Name":"/"})"), "") == nullptr);
}

TEST_CASE("W-14/T-7: names match exactly — a prefix or the -proxy sibling is not the container") {
  auto listed = parse_container_list(crlf(kLegacyLines));
  CHECK(find_exact(listed, "maf-sandbox-wslc-c63d0bd23ebf") == &listed[0]);
  CHECK(find_exact(listed, "maf-sandbox-wslc-c63d0bd23eb") == nullptr);
  auto only_proxy = parse_container_list(
      R"({"Name":"maf-sandbox-wslc-c63d0bd23ebf-proxy","State":2})");
  CHECK(find_exact(only_proxy, "maf-sandbox-wslc-c63d0bd23ebf") == nullptr);
  // Docker's Names: comma-joined, possibly with a leading '/'.
  auto several = parse_container_list(R"({"Names":"/first,maf-sandbox-wslc-0123456789ab, /third","ID":"abc","State":"running"})");
  REQUIRE(several.size() == 1);
  CHECK(several[0].names == std::vector<std::string>{"first", "maf-sandbox-wslc-0123456789ab", "third"});
  CHECK(find_exact(several, "maf-sandbox-wslc-0123456789ab") != nullptr);
}

TEST_CASE("C-24: state numbers — 1 created and 3 exited are stopped, 0 and 4 are neither") {
  auto state = [](int n) {
    return parse_container_list(R"({"Name":"x","State":)" + std::to_string(n) + "}").at(0).state;
  };
  CHECK(state(0) == ListedState::Other);
  CHECK(state(1) == ListedState::Stopped);
  CHECK(state(2) == ListedState::Running);
  CHECK(state(3) == ListedState::Stopped);
  CHECK(state(4) == ListedState::Other);
}

// ---- error symbols ----------------------------------------------------------------------

TEST_CASE("C-8/T-8: verbatim stderr of the recorded failures is recognised by symbol, in any locale") {
  struct Case {
    std::string stderr_text;
    WslcSymbol symbol;
  };
  const std::vector<Case> cases{
      {"Container 'x' not found.\r\nError code: WSLC_E_CONTAINER_NOT_FOUND\r\n", WslcSymbol::ContainerNotFound},
      {"コンテナー 'x' が見つかりません。\r\nエラー コード: WSLC_E_CONTAINER_NOT_FOUND\r\n", WslcSymbol::ContainerNotFound},
      {"Container '65d2ca6ec35c22f4db72c43d0e613dc13fe09ace6bc15061764cd9cabfadeee7' is not running.\r\n"
       "Error code: WSLC_E_CONTAINER_NOT_RUNNING\r\n",
       WslcSymbol::ContainerNotRunning},
      {"Conflict. The container name \"/N\" is already in use by container \"65d2\". You have to remove (or rename) "
       "that container to be able to reuse that name.\r\nError code: ERROR_ALREADY_EXISTS\r\n",
       WslcSymbol::AlreadyExists},
      {"Cannot create a file when that file already exists. \r\nError code: ERROR_ALREADY_EXISTS\r\n",
       WslcSymbol::AlreadyExists},
      {"Network not found: 'n'\r\n", WslcSymbol::None},  // C-19: no symbol without --force
      {"Network not found: 'n'\r\nError code: WSLC_E_NETWORK_NOT_FOUND\r\n", WslcSymbol::NetworkNotFound},
      {"Could not find the file /a in container 65d2\r\nError code: ERROR_PATH_NOT_FOUND\r\n",
       WslcSymbol::PathNotFound},
      {"Cannot copy a directory to a file path. Use a directory target (with trailing separator) instead.\r\n"
       "Error code: E_FAIL\r\n",
       WslcSymbol::Fail},
      {"pull access denied for x, repository does not exist or may require 'docker login'\r\n"
       "Error code: WSLC_E_IMAGE_NOT_FOUND\r\n",
       WslcSymbol::ImageNotFound},
      {"The parameter is incorrect. \r\nError code: E_INVALIDARG\r\n", WslcSymbol::InvalidArg},
      {"something\r\nError code: 0x80070005\r\n", WslcSymbol::None},
      {"", WslcSymbol::None},
  };
  for (const auto& c : cases) {
    INFO(c.stderr_text);
    CHECK(find_symbol(c.stderr_text) == c.symbol);
  }
  CHECK(is_directory_copy_refusal(cases[8].stderr_text));
  CHECK(is_directory_copy_refusal("CANNOT COPY A DIRECTORY TO A FILE PATH."));
  CHECK_FALSE(is_directory_copy_refusal(cases[7].stderr_text));
}

TEST_CASE("C-27/T-8: a symbol is a whole word — a longer token containing one is not it") {
  CHECK(find_symbol("XWSLC_E_CONTAINER_NOT_FOUND") == WslcSymbol::None);
  CHECK(find_symbol("WSLC_E_CONTAINER_NOT_FOUND_2") == WslcSymbol::None);
  CHECK(find_symbol("code:E_FAIL.") == WslcSymbol::Fail);
  // Python's invented symbols do not exist in the CLI (W-43) and are not recognised.
  CHECK(find_symbol("Error code: WSLC_E_CONTAINER_CORRUPT") == WslcSymbol::None);
  CHECK(find_symbol("Error code: WSLC_E_SERVICE_UNAVAILABLE") == WslcSymbol::None);
  CHECK(find_symbol("Error code: WSLC_E_PATH_NOT_FOUND") == WslcSymbol::None);
}

TEST_CASE("W-43/§1.5: every WSLC_E_* and Win32/HRESULT symbol maps to its class and raised type") {
  struct Expect {
    WslcErrorClass cls;
    const char* type;
  };
  const std::map<std::string, Expect> expected{
      {"WSLC_E_IMAGE_NOT_FOUND", {WslcErrorClass::ImageMissing, "image"}},
      {"WSLC_E_CONTAINER_PREFIX_AMBIGUOUS", {WslcErrorClass::Failed, "failed"}},
      {"WSLC_E_CONTAINER_NOT_FOUND", {WslcErrorClass::Vanished, "vanished"}},
      {"WSLC_E_VOLUME_NOT_FOUND", {WslcErrorClass::Failed, "failed"}},
      {"WSLC_E_CONTAINER_NOT_RUNNING", {WslcErrorClass::NotRunning, "failed"}},
      {"WSLC_E_CONTAINER_IS_RUNNING", {WslcErrorClass::Failed, "failed"}},
      {"WSLC_E_SESSION_RESERVED", {WslcErrorClass::Unavailable, "unavailable"}},
      {"WSLC_E_INVALID_SESSION_NAME", {WslcErrorClass::Unavailable, "unavailable"}},
      {"WSLC_E_NETWORK_NOT_FOUND", {WslcErrorClass::Failed, "failed"}},
      {"WSLC_E_WU_SEARCH_FAILED", {WslcErrorClass::Unavailable, "unavailable"}},
      {"WSLC_E_SDK_UPDATE_NEEDED", {WslcErrorClass::Unavailable, "unavailable"}},
      {"WSLC_E_CONTAINER_DISABLED", {WslcErrorClass::Unavailable, "unavailable"}},
      {"WSLC_E_REGISTRY_BLOCKED_BY_POLICY", {WslcErrorClass::ImageMissing, "image"}},
      {"WSLC_E_VOLUME_NOT_AVAILABLE", {WslcErrorClass::Failed, "failed"}},
      {"WSLC_E_SESSION_NOT_FOUND", {WslcErrorClass::Unavailable, "unavailable"}},
      {"WSLC_E_VM_NOT_RUNNING", {WslcErrorClass::Unavailable, "unavailable"}},
      {"ERROR_ALREADY_EXISTS", {WslcErrorClass::Exists, "failed"}},
      {"ERROR_PATH_NOT_FOUND", {WslcErrorClass::PathMissing, "failed"}},
      {"E_INVALIDARG", {WslcErrorClass::Failed, "failed"}},
      {"E_FAIL", {WslcErrorClass::Failed, "failed"}},
      {"ERROR_ELEVATION_REQUIRED", {WslcErrorClass::Unavailable, "unavailable"}},
  };
  REQUIRE(known_symbols().size() == expected.size());
  for (WslcSymbol symbol : known_symbols()) {
    const std::string name(symbol_name(symbol));
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    const std::string stderr_text = "message\r\nError code: " + name + "\r\n";
    CHECK(find_symbol(stderr_text) == symbol);
    CHECK(classify(symbol) == expected.at(name).cls);
    std::string raised;
    try {
      raise_wslc_failure("wslc container start of c (kind 'k')", 1, stderr_text);
    } catch (const WslcBackendUnavailable& e) {
      raised = "unavailable";
      CHECK(std::string(e.what()).find(name) != std::string::npos);
    } catch (const WslcImageNotFound& e) {
      raised = "image";
      CHECK(e.symbol() == name);
    } catch (const WslcContainerVanished& e) {
      raised = "vanished";
      CHECK(e.symbol() == name);
    } catch (const WslcCommandFailed& e) {
      raised = "failed";
      CHECK(e.symbol() == name);
      CHECK(e.stderr_text() == "message\r\nError code: " + name);
    }
    CHECK(raised == expected.at(name).type);
  }
  // Every type is catchable by its core base (errors.hpp lineage).
  CHECK_THROWS_AS(raise_wslc_failure("x", 1, "Error code: WSLC_E_VM_NOT_RUNNING"), OSError);
  CHECK_THROWS_AS(raise_wslc_failure("x", 1, "no symbol at all"), WslcCommandFailed);
}

// ---- argv, version, config, declarations --------------------------------------------------

TEST_CASE("T-9: golden argv of every verb the backend sends (C-10…C-19)") {
  using V = std::vector<std::string>;
  CHECK(version_args() == V{"version"});
  CHECK(list_args({.name = "N"}) == V{"container", "list", "--format", "json", "--filter", "name=N"});
  CHECK(list_args({.all = true, .name = "N"}) == V{"container", "list", "-a", "--format", "json", "--filter", "name=N"});
  // Label filters carry the selector's values, already mapped by label_value (W-12), in
  // key_selector's order: scope, thread, agent, kind, call.
  ListSelector by_key{.all = true};
  for (auto& [l, v] : support::key_selector(SandboxKey{"s", "a b", "x", "c"}, std::string_view("k")))
    by_key.labels.emplace_back(l, v);
  CHECK(list_args(by_key) ==
        V{"container", "list", "-a", "--format", "json", "--filter", "label=maf-sandbox.scope=s", "--filter",
          "label=maf-sandbox.thread=sha256-" + support::sha256_hex("a b").substr(0, 48), "--filter",
          "label=maf-sandbox.agent=x", "--filter", "label=maf-sandbox.kind=k", "--filter", "label=maf-sandbox.call=c"});
  CHECK(run_args("N", {{"maf-sandbox.scope", "s"}, {"maf-sandbox.kind", "k"}}, "img:1") ==
        V{"container", "run", "-d", "--name", "N", "--network", "none", "-l", "maf-sandbox.scope=s", "-l",
          "maf-sandbox.kind=k", "img:1", "sleep", "infinity"});
  CHECK(start_args("N") == V{"container", "start", "N"});
  CHECK(exec_args("N", "/w", {"sh", "-c", "echo; $(x)"}) ==
        V{"container", "exec", "-w", "/w", "N", "sh", "-c", "echo; $(x)"});
  CHECK(exec_args("N", "/", {"/usr/bin/test", "-L", "/a"}, "0") ==
        V{"container", "exec", "--user", "0", "-w", "/", "N", "/usr/bin/test", "-L", "/a"});
  CHECK(copy_in_args("N") == V{"container", "cp", "-", "N:/"});
  CHECK(copy_out_args("N", "/a/b") == V{"container", "cp", "N:/a/b", "-"});
  CHECK(remove_args("N") == V{"container", "remove", "-f", "N"});
  CHECK(network_remove_args("N-net") == V{"network", "remove", "--force", "N-net"});
}

TEST_CASE("W-42/T-12: `wslc version` parsing, CRLF included, and the 2.9.4.0 floor") {
  CHECK(parse_wslc_version("wslc 2.9.4.0\r\n") == std::array<int, 4>{2, 9, 4, 0});
  CHECK(parse_wslc_version("wslc 2.9.12.0\n") == std::array<int, 4>{2, 9, 12, 0});
  CHECK(parse_wslc_version("wslc 3.0.1") == std::array<int, 4>{3, 0, 1, 0});
  CHECK_FALSE(parse_wslc_version("wsl 2.9.4.0"));
  CHECK_FALSE(parse_wslc_version("wslc 2.9.x"));
  CHECK_FALSE(parse_wslc_version("wslc "));
  CHECK_FALSE(parse_wslc_version("wslc 2..4"));
  CHECK(*parse_wslc_version("wslc 2.9.3.0") < kMinimumWslcVersion);
  CHECK_FALSE(*parse_wslc_version("wslc 2.9.4.0") < kMinimumWslcVersion);
  CHECK_FALSE(*parse_wslc_version("wslc 2.10.0.0") < kMinimumWslcVersion);
}

TEST_CASE("W-8: config keys, defaults, and unknown keys refused by name") {
  auto c = parse_wslc_config(nlohmann::json::object());
  CHECK(c.wslc_path == "wslc");
  CHECK(c.command_timeout() == std::chrono::milliseconds(60'000));
  c = parse_wslc_config({{"wslc_path", "/opt/wslc"}, {"command_timeout_seconds", 1.5}, {"image", "i:1"},
                         {"egress_proxy_image", ""}});
  CHECK(c.wslc_path == "/opt/wslc");
  CHECK(c.command_timeout() == std::chrono::milliseconds(1'500));
  CHECK(c.image == "i:1");
  CHECK_THROWS_WITH(parse_wslc_config({{"wslc_pth", "x"}}), Catch::Contains("wslc_pth"));
  CHECK_THROWS_AS(parse_wslc_config({{"wslc_path", ""}}), ValueError);
  CHECK_THROWS_AS(parse_wslc_config({{"command_timeout_seconds", 0}}), ValueError);
  CHECK_THROWS_AS(parse_wslc_config({{"command_timeout_seconds", "5"}}), ValueError);
  CHECK_FALSE(c.egress_proxy_image);  // "" is unset (W-8); a real image: unit_wslc_egress.cpp
}

TEST_CASE("W-1…W-5: declarations without a proxy image — container, {EXEC, FILES_IN, RECLAIM}, {POSIX}, {CLOSED}") {
  WslcSandboxBackend backend(WslcConfig{});
  CHECK(backend.name() == "wslc");
  CHECK(backend.isolation() == "container");
  const auto& d = backend.declarations();
  // W-2's set plus RECLAIM (issue 26, docs/tools.md); never SNAPSHOT.
  CHECK(d.capabilities ==
        CapabilitySet{Capability::Exec, Capability::FilesIn, Capability::Reclaim, Capability::ExecStream});
  CHECK(d.os_families == OsFamilySet{OsFamily::Posix});
  CHECK(d.egress_modes == EgressSet{Egress::Closed});
  CHECK(d.isolation_scopes == IsolationScopeSet{IsolationScope::Conversation, IsolationScope::Call});
  CHECK(d.limits == kDefaultSandboxLimits);
  CHECK_FALSE(backend.supports_reap());
}

TEST_CASE("W-10/T-10: names are length-prefixed digests; call and a non-default base change them") {
  const SandboxKey key{"s", "t", "a", ""};
  const std::string n = WslcSandboxBackend::container_name(key, "k", kDefaultWorkDir);
  CHECK(n.rfind("maf-sandbox-wslc-", 0) == 0);
  CHECK(n.size() == std::string("maf-sandbox-wslc-").size() + 12);
  CHECK(n == support::sandbox_name("maf-sandbox-wslc-", key, "k"));
  CHECK(WslcSandboxBackend::container_name(key, "k2", kDefaultWorkDir) != n);
  CHECK(WslcSandboxBackend::container_name({"s", "t", "a", "c"}, "k", kDefaultWorkDir) != n);
  CHECK(WslcSandboxBackend::container_name(key, "k", "/other") != n);
  // Upstream's `|` join collides here; the length prefix does not.
  CHECK(WslcSandboxBackend::container_name({"a|b", "c", "x", ""}, "k", kDefaultWorkDir) !=
        WslcSandboxBackend::container_name({"a", "b|c", "x", ""}, "k", kDefaultWorkDir));
}

namespace {
class ThrowingRunner final : public WslcRunner {
public:
  boost::asio::awaitable<WslcOutcome> run(WslcCall) override {
    throw WslcBackendUnavailable("runner always fails");
    co_return WslcOutcome{};
  }
};
}  // namespace

TEST_CASE("W-35/W-36/T-14: dispose and dispose_scope never throw when every wslc call fails") {
  BlockingRunner run;
  auto backend = std::make_shared<WslcSandboxBackend>(WslcConfig{}, std::make_shared<ThrowingRunner>());
  const SandboxKey key{"s", "t", "a", ""};
  std::optional<DisposalFailure> failure;
  REQUIRE_NOTHROW(failure = run([&] { return backend->dispose(key, std::nullopt, std::nullopt); }));
  REQUIRE(failure);
  CHECK(failure->code == kDisposalUnlisted);
  ScopePurge purge;
  REQUIRE_NOTHROW(purge = run([&] { return backend->dispose_scope("s", "t"); }));
  CHECK(purge.disposed == 0);
  REQUIRE(purge.undisposed);
  CHECK(purge.undisposed->code == kDisposalUnlisted);
  // acquire raises the runner's typed error (the first call is `version`).
  SandboxSpec spec({.kind = "k", .image = "i:1", .requires_capabilities = {Capability::Exec}});
  CHECK_THROWS_AS(run([&] { return backend->acquire(key, spec); }), WslcBackendUnavailable);
}

TEST_CASE("W-16/W-43: acquire refuses a spec without an image, a bad label key, or a relative base before any call") {
  BlockingRunner run;
  auto backend = std::make_shared<WslcSandboxBackend>(WslcConfig{}, std::make_shared<ThrowingRunner>());
  const SandboxKey key{"s", "t", "a", ""};
  CHECK_THROWS_AS(run([&] { return backend->acquire(key, SandboxSpec({.kind = "k"})); }), ValueError);
  CHECK_THROWS_AS(run([&] {
                    return backend->acquire(key, SandboxSpec({.kind = "k", .image = "i", .labels = {{"bad key", "v"}}}));
                  }),
                  ValueError);
}
