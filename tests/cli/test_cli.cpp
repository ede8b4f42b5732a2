// `maf-sandbox` as a subprocess: exit codes, --json parsed back, files landed on disk
// (docs/cli.md). The backend is tests/plugins' in-process double, loaded via
// MAF_SANDBOX_PLUGIN_PATH exactly as a host's plugin would be.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "otel/otlp_receiver.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
  json parsed() const { return json::parse(out); }
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// A scratch directory per test case, removed afterwards.
struct Scratch {
  Scratch() : dir(fs::temp_directory_path() / ("maf-cli-test-" + std::to_string(getpid()) + "-" + std::to_string(++n))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& content) const {
    std::ofstream(dir / name, std::ios::binary) << content;
    return dir / name;
  }
  fs::path dir;
  static inline int n = 0;
};

/// Runs the command; `env` is prepended as shell assignments (`NAME='value' ...`).
Outcome cli(const std::vector<std::string>& args, const std::string& plugin_path = MAF_TEST_GOOD_PLUGIN_DIR,
            const std::vector<std::pair<std::string, std::string>>& env = {}, const std::string& stdin_path = {}) {
  const fs::path err_file = fs::temp_directory_path() / ("maf-cli-stderr-" + std::to_string(getpid()));
  std::string command = "MAF_SANDBOX_PLUGIN_PATH=" + quote(plugin_path) + " ";
  for (const auto& [name, value] : env) command += name + "=" + quote(value) + " ";
  command += quote(MAF_TEST_CLI);
  for (const auto& a : args) command += " " + quote(a);
  command += " 2>" + quote(err_file.string());
  if (!stdin_path.empty()) command += " <" + quote(stdin_path);
  Outcome o;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) o.out.append(buf, n);
  const int status = pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  o.err = ss.str();
  fs::remove(err_file);
  INFO("stderr: " << o.err);
  return o;
}

/// The entry of `plugins --json` for backend `name`, or null: the build tree's own plugin
/// directory is searched too, so other backends may be listed beside it.
const json* backend_named(const json& plugins, const std::string& name) {
  for (const auto& candidate : plugins["backends"])
    if (candidate["name"] == name) return &candidate;
  return nullptr;
}

/// `check --json` of a POSIX python spec on `backend` built from `config`: `check` hands the
/// config to the plugin's factory and asks only the declarations (C-65), so it passes exactly
/// when the factory built an instance without reaching anything.
[[maybe_unused]] void check_serves_posix(const std::string& backend, const std::string& config,
                                         const std::string& plugin_dir, const std::string& floor) {
  Scratch s;
  const auto config_file = s.write(backend + ".json", config);
  const auto spec = s.write("spec.json", R"({"kind": "python", "requires_os_family": "posix"})");
  const Outcome o = cli({"check", "--backend", backend, "--config", config_file.string(), "--spec", spec.string(),
                         "--min-isolation", floor, "--json"},
                        plugin_dir);
  REQUIRE(o.exit_code == 0);
  const json j = o.parsed();
  CHECK(j["ok"] == true);
  CHECK(j["backend"] == backend);
  CHECK(j["declarations"]["os_families"] == json({"posix"}));
}

const std::string kGoodConfig = R"({"outputs": {"hello": "hello from the guest\n"}})";

}  // namespace

TEST_CASE("cli: usage errors exit 2, as JSON when asked") {
  CHECK(cli({}).exit_code == 2);
  CHECK(cli({"--help"}).exit_code == 0);
  const Outcome o = cli({"frobnicate", "--json"});
  CHECK(o.exit_code == 2);
  CHECK(o.parsed()["error"]["type"] == "UsageError");
  CHECK(cli({"check", "--spec"}).exit_code == 2);
  CHECK(cli({"check", "--backend", "test-good"}).exit_code == 2);  // no --spec
  CHECK(cli({"plugins", "stray"}).exit_code == 2);
}

TEST_CASE("cli: plugins lists the good plugin's name, version, file and declarations") {
  const Outcome o = cli({"plugins", "--json"});
  REQUIRE(o.exit_code == 0);
  const json j = o.parsed();
  CHECK(j["search_dirs"][0] == MAF_TEST_GOOD_PLUGIN_DIR);
  // The build tree's own plugin directory is searched too: find ours by name.
  const json* found = nullptr;
  for (const auto& candidate : j["backends"])
    if (candidate["name"] == "test-good") found = &candidate;
  REQUIRE(found != nullptr);
  const json& b = *found;
  CHECK(b["version"] == "0.0.1");
  CHECK(b["file"] == std::string(MAF_TEST_GOOD_PLUGIN_DIR) + "/libmaf-sandbox-test-good.so");
  CHECK(b["isolation"] == "microvm");
  CHECK(b["declarations"]["egress_modes"] == json({"allowlist", "closed"}));
  CHECK(b["declarations"]["os_families"] == json({"posix"}));
  CHECK(b["declarations"]["isolation_scopes"] == json({"conversation"}));
  CHECK(b["declarations"]["limits"]["files_in"]["max_files"] == 64);
  for (const auto& f : j["failures"]) CHECK_THAT(f["file"].get<std::string>(), !Contains(MAF_TEST_GOOD_PLUGIN_DIR));

  const Outcome human = cli({"plugins"});
  CHECK(human.exit_code == 0);
  CHECK_THAT(human.out, Contains("test-good 0.0.1") && Contains("egress modes:     allowlist, closed"));
}

#ifdef MAF_TEST_DOCKER_PLUGIN_DIR
TEST_CASE("cli: D-5: plugins describes the docker backend with no engine to ask — its factory makes no engine call") {
  // An endpoint nobody answers and a client that does not exist: a factory that contacted
  // the engine would fail, or declare no os family.
  const Outcome o = cli({"plugins", "--json"}, MAF_TEST_DOCKER_PLUGIN_DIR,
                        {{"DOCKER_HOST", "unix:///nonexistent/maf-test/docker.sock"},
                         {"MAF_SANDBOX_DOCKER", "/nonexistent/maf-test/docker"}});
  REQUIRE(o.exit_code == 0);
  const json j = o.parsed();
  const json* found = backend_named(j, "docker");
  REQUIRE(found != nullptr);
  CHECK((*found)["describe_error"].is_null());
  CHECK((*found)["declarations"]["os_families"] == json({"posix"}));
  CHECK((*found)["isolation"] == "container");
}
#endif

#ifdef MAF_TEST_DOCKER_PLUGIN_DIR
TEST_CASE("cli: SNAP-2: check shows the fidelity asked and declared; a higher rung is a typed refusal") {
  Scratch s;
  const std::vector<std::pair<std::string, std::string>> no_engine{{"DOCKER_HOST", "unix:///nonexistent/maf-test/docker.sock"},
                                                     {"MAF_SANDBOX_DOCKER", "/nonexistent/maf-test/docker"}};
  const auto config = s.write("docker.json", R"({"snapshots": true})");
  const auto asks = s.write("spec.json", R"({"kind": "python", "min_snapshot_fidelity": "work_tree"})");
  const Outcome o = cli({"check", "--backend", "docker", "--config", config.string(), "--spec", asks.string(),
                         "--min-isolation", "container", "--json"},
                        MAF_TEST_DOCKER_PLUGIN_DIR, no_engine);
  REQUIRE(o.exit_code == 0);
  const json j = o.parsed();
  CHECK(j["min_snapshot_fidelity"] == "work_tree");
  CHECK(j["declarations"]["snapshot_fidelity"] == "work_tree");
  CHECK_THAT(cli({"check", "--backend", "docker", "--config", config.string(), "--spec", asks.string(),
                  "--min-isolation", "container"},
                 MAF_TEST_DOCKER_PLUGIN_DIR, no_engine)
                 .out,
             Contains("snapshots:    work_tree (declared: work_tree)"));
  const auto more = s.write("more.json", R"({"kind": "python", "min_snapshot_fidelity": "filesystem"})");
  const Outcome refused = cli({"check", "--backend", "docker", "--config", config.string(), "--spec", more.string(),
                               "--min-isolation", "container", "--json"},
                              MAF_TEST_DOCKER_PLUGIN_DIR, no_engine);
  CHECK(refused.exit_code == 3);
  CHECK_THAT(refused.out + refused.err, Contains("SandboxSnapshotFidelityNotSupported"));
  // Without the key, silence: nothing kept, and the human listing says so.
  const Outcome plugins = cli({"plugins"}, MAF_TEST_DOCKER_PLUGIN_DIR, no_engine);
  CHECK_THAT(plugins.out, Contains("snapshots keep:   nothing"));
}
#endif

#ifdef MAF_TEST_WSLC_PLUGIN_DIR
TEST_CASE("cli: W-42/W-3: plugins and check describe the wslc backend with no wslc to run — its factory runs none") {
  // W-42 puts the first wslc call (`wslc version`) in the first acquire. Neither the default
  // `wslc` (PATH holds no directory that exists) nor a configured path exists here: a factory
  // that ran wslc would throw, and the backend would be listed as needing configuration.
  const Outcome listed = cli({"plugins", "--json"}, MAF_TEST_WSLC_PLUGIN_DIR, {{"PATH", "/nonexistent/maf-test/bin"}});
  REQUIRE(listed.exit_code == 0);
  const json plugins = listed.parsed();
  const json* found = backend_named(plugins, "wslc");
  REQUIRE(found != nullptr);
  CHECK((*found)["describe_error"].is_null());
  CHECK((*found)["isolation"] == "container");                          // W-1
  CHECK((*found)["declarations"]["os_families"] == json({"posix"}));    // W-3
  CHECK((*found)["declarations"]["egress_modes"] == json({"closed"}));  // W-4, no proxy image

  check_serves_posix("wslc", R"({"wslc_path": "/nonexistent/maf-test/wslc"})", MAF_TEST_WSLC_PLUGIN_DIR, "container");
}
#endif

#ifdef MAF_TEST_ACAS_PLUGIN_DIR
TEST_CASE("cli: A-70/R-1: plugins and check describe the acas backend with no service and no credentials — its factory sends nothing") {
  // The endpoint is checked (R-1) and a token fetched on the first operation, never by the
  // factory. Port 1 on loopback answers nobody and `token_env` names a variable that is not
  // set, so a factory that fetched a token or sent a request would throw.
  const Outcome listed = cli({"plugins", "--json"}, MAF_TEST_ACAS_PLUGIN_DIR);
  REQUIRE(listed.exit_code == 0);
  const json plugins = listed.parsed();
  const json* found = backend_named(plugins, "acas");
  REQUIRE(found != nullptr);
  CHECK((*found)["describe_error"].is_null());
  CHECK((*found)["isolation"] == "microvm");
  CHECK((*found)["declarations"]["os_families"] == json({"posix"}));
  CHECK((*found)["declarations"]["egress_modes"] == json({"allowlist", "closed"}));

  check_serves_posix("acas",
                     R"({"endpoint": "http://127.0.0.1:1", "allow_insecure_loopback": true,
                         "token_env": "MAF_TEST_ACAS_NO_SUCH_TOKEN"})",
                     MAF_TEST_ACAS_PLUGIN_DIR, "microvm");
}
#endif

TEST_CASE("cli: plugins reports a refused file beside the good backends") {
  const Outcome o = cli({"plugins", "--json"},
                        std::string(MAF_TEST_FINGERPRINT_PLUGIN_DIR) + ":" + MAF_TEST_GOOD_PLUGIN_DIR);
  REQUIRE(o.exit_code == 0);
  const json j = o.parsed();
  const json* refused = nullptr;
  for (const auto& f : j["failures"])
    if (f["file"] == std::string(MAF_TEST_FINGERPRINT_PLUGIN_DIR) + "/libmaf-sandbox-fingerprint.so") refused = &f;
  REQUIRE(refused != nullptr);
  CHECK((*refused)["reason"] == "fingerprint_mismatch");
  CHECK_THAT((*refused)["message"].get<std::string>(), Contains("was built as"));
  bool good_listed = false;
  for (const auto& b : j["backends"]) good_listed = good_listed || b["name"] == "test-good";
  CHECK(good_listed);
}

TEST_CASE("cli: C-65: check passes and says what matched") {
  Scratch s;
  const auto spec = s.write("spec.json", R"({"kind": "python", "requires_os_family": "posix"})");
  const Outcome o = cli({"check", "--backend", "test-good", "--spec", spec.string(), "--json"});
  REQUIRE(o.exit_code == 0);
  const json j = o.parsed();
  CHECK(j["ok"] == true);
  CHECK(j["backend"] == "test-good");
  CHECK(j["effective_floor"] == "microvm");
  CHECK(j["requires"] == json({"exec", "files_in"}));
  CHECK(j["egress"] == "closed");
  CHECK(j["requires_os_family"] == "posix");
  CHECK_THAT(cli({"check", "--backend", "test-good", "--spec", spec.string()}).out, Contains("ok: backend 'test-good'"));
}

TEST_CASE("cli: check prints each kind of typed refusal with exit code 3") {
  Scratch s;
  struct Case {
    const char* rule;
    std::string spec;
    std::string config;
    std::vector<std::string> extra;
    const char* type;
  };
  const std::vector<Case> cases{
      {"C-62/C-65 #3: below the floor", R"({"kind": "k"})", R"({"isolation": "container"})", {},
       "SandboxBackendNotPermitted"},
      {"C-66: the spec raises the floor", R"({"kind": "k", "min_isolation": "vm"})", "{}", {},
       "SandboxBackendNotPermitted"},
      {"C-65 #4: capability not declared", R"({"kind": "k", "requires": ["exec", "snapshot"]})", "{}", {},
       "SandboxCapabilityNotSupported"},
      {"C-65 #5: os family not served", R"({"kind": "k", "requires_os_family": "windows"})", "{}", {},
       "SandboxOsFamilyNotSupported"},
      {"C-65 #7: limits above the ceiling",
       R"({"kind": "k", "files_out": {"max_bytes_per_file": 1, "max_total_bytes": 1, "max_files": 1000}})", "{}", {},
       "SandboxTransferLimitsNotPermitted"},
      {"C-65 #8/C-67: egress not enforced", R"({"kind": "k", "egress": "unrestricted"})", "{}", {},
       "SandboxEgressNotEnforced"},
      {"C-68: isolation scope not served", R"({"kind": "k", "isolation_scope": "call"})", "{}", {},
       "SandboxCapabilityNotSupported"},
  };
  for (const auto& c : cases) {
    SECTION(c.rule) {
      const auto spec = s.write("spec.json", c.spec);
      const auto config = s.write("config.json", c.config);
      std::vector<std::string> args{"check", "--backend", "test-good", "--config", config.string(),
                                    "--spec", spec.string(), "--json"};
      args.insert(args.end(), c.extra.begin(), c.extra.end());
      const Outcome o = cli(args);
      CHECK(o.exit_code == 3);
      CHECK(o.parsed()["error"]["type"] == c.type);
      CHECK_THAT(o.parsed()["error"]["message"].get<std::string>(), Contains("test-good"));
      // The human form names the type too, on stderr.
      args.pop_back();
      CHECK_THAT(cli(args).err, Contains(std::string("maf-sandbox: ") + c.type + ": "));
    }
  }
}

TEST_CASE("cli: C-1/C-60: --min-isolation parses per C-1; an unknown rung is a typed usage error") {
  Scratch s;
  const auto spec = s.write("spec.json", R"({"kind": "k"})");
  const auto config = s.write("config.json", R"({"isolation": "os_process"})");
  const std::vector<std::string> base{"check", "--backend", "test-good", "--config", config.string(),
                                      "--spec", spec.string(), "--json"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli(a);
  };
  CHECK(with({}).exit_code == 3);  // the default floor is microvm
  CHECK(with({"--min-isolation", "os_process"}).exit_code == 0);
  for (const char* bad : {"process", "MICROVM", "quantum"}) {
    const Outcome o = with({"--min-isolation", bad});
    CHECK(o.exit_code == 2);
    CHECK(o.parsed()["error"]["type"] == "ValueError");
    CHECK_THAT(o.parsed()["error"]["message"].get<std::string>(), Contains("not a valid Isolation"));
  }
}

TEST_CASE("cli: a bad spec file or config is refused naming the field or key") {
  Scratch s;
  const auto bad_spec = s.write("bad.json", R"({"kind": "k", "egress": "open"})");
  Outcome o = cli({"check", "--backend", "test-good", "--spec", bad_spec.string(), "--json"});
  CHECK(o.exit_code == 2);
  CHECK_THAT(o.parsed()["error"]["message"].get<std::string>(), Contains("spec field 'egress': 'open' is not a valid Egress"));

  const auto not_json = s.write("nj.json", "{kind:");
  CHECK(cli({"check", "--backend", "test-good", "--spec", not_json.string()}).exit_code == 2);

  const auto spec = s.write("spec.json", R"({"kind": "k"})");
  const auto config = s.write("config.json", R"({"isolaton": "vm"})");
  o = cli({"check", "--backend", "test-good", "--config", config.string(), "--spec", spec.string(), "--json"});
  CHECK(o.exit_code == 2);  // a config key spelt wrong is bad input, like a bad spec
  CHECK(o.parsed()["error"]["type"] == "ValueError");
  CHECK_THAT(o.parsed()["error"]["message"].get<std::string>(), Contains("'isolaton'"));

  o = cli({"check", "--backend", "nope", "--spec", spec.string(), "--json"});
  CHECK(o.exit_code == 4);
  CHECK(o.parsed()["error"]["type"] == "NoSandboxBackend");
}

TEST_CASE("cli: run writes inputs, runs the command, prints its output and lands declared outputs") {
  Scratch s;
  const auto config = s.write("config.json", kGoodConfig);
  const auto input = s.write("input.csv", "a,b\n1,2\n");
  const auto spec = s.write("spec.json", R"({"kind": "report", "declared_outputs": [{"path": "in/data.csv", "name": "data.csv"}]})");
  const fs::path out = s.dir / "out";
  const Outcome o = cli({"run", "--backend", "test-good", "--config", config.string(), "--spec", spec.string(),
                         "--put", input.string() + "=in/data.csv", "--output", "in/copy.csv", "--put",
                         input.string() + "=in/copy.csv", "--out", out.string(), "--json", "--", "sh", "-c",
                         "say hello"});
  REQUIRE(o.exit_code == 0);
  const json j = o.parsed();
  CHECK(j["stdout"] == "hello from the guest\n");
  CHECK(j["exit_code"] == 0);
  CHECK(j["kind"] == "report");
  CHECK(j["kept"] == false);
  CHECK(j["disposal_failure"].is_null());
  REQUIRE(j["outputs"].size() == 2);
  CHECK(j["outputs"][0]["name"] == "data.csv");
  CHECK(j["outputs"][1]["name"] == "in/copy.csv");
  std::ifstream landed(out / "data.csv");
  std::stringstream content;
  content << landed.rdbuf();
  CHECK(content.str() == "a,b\n1,2\n");
  CHECK(fs::exists(out / "in" / "copy.csv"));

  SECTION("the human form prints the program's stdout untouched and a summary on stderr") {
    const Outcome h = cli({"run", "--backend", "test-good", "--config", config.string(), "--image", "alpine",
                           "--keep", "--", "echo", "hello"});
    CHECK(h.exit_code == 0);
    CHECK(h.out == "hello from the guest\n");
    CHECK_THAT(h.err, Contains("exit code 0") && Contains("kept the sandbox"));
  }
}

TEST_CASE("cli: C-83: run refuses landing outputs without --out before acquiring") {
  const Outcome o = cli({"run", "--backend", "test-good", "--image", "alpine", "--output", "x.txt", "--json", "--",
                         "true"});
  CHECK(o.exit_code == 2);
  CHECK_THAT(o.parsed()["error"]["message"].get<std::string>(), Contains("--out"));
}

TEST_CASE("cli: C-85: a required output that is missing is a typed backend-side failure") {
  Scratch s;
  const Outcome o = cli({"run", "--backend", "test-good", "--image", "alpine", "--output", "never.txt", "--out",
                         (s.dir / "out").string(), "--json", "--", "true"});
  CHECK(o.exit_code == 4);
  CHECK(o.parsed()["error"]["type"] == "SandboxOutputMissing");
}

TEST_CASE("cli: run is refused by policy with exit code 3 (C-69: acquire runs the same checks)") {
  const Outcome o = cli({"run", "--backend", "test-good", "--image", "alpine", "--min-isolation", "vm", "--json", "--",
                         "true"});
  CHECK(o.exit_code == 3);
  CHECK(o.parsed()["error"]["type"] == "SandboxBackendNotPermitted");
}

TEST_CASE("cli: C-57: dispose-scope reports the purge") {
  const Outcome o = cli({"dispose-scope", "--backend", "test-good", "--scope", "tenant", "--thread", "t1", "--json"});
  REQUIRE(o.exit_code == 0);
  CHECK(o.parsed()["disposed"] == 1);
  CHECK(o.parsed()["undisposed"].is_null());
  CHECK(cli({"dispose-scope", "--backend", "test-good", "--scope", "tenant"}).exit_code == 2);  // no --thread
}

TEST_CASE("cli: reap runs where the backend offers it and is a typed refusal where it does not") {
  Scratch s;
  const auto reaping = s.write("reap.json", R"({"reap": true})");
  Outcome o = cli({"reap", "--backend", "test-good", "--config", reaping.string(), "--older-than", "1h", "--json"});
  REQUIRE(o.exit_code == 0);
  CHECK(o.parsed()["disposed"] == 3600 % 7);  // the test plugin echoes the age it was given

  o = cli({"reap", "--backend", "test-good", "--older-than", "1h", "--json"});
  CHECK(o.exit_code == 4);
  CHECK(o.parsed()["error"]["type"] == "NotImplementedError");

  o = cli({"reap", "--backend", "test-good", "--config", reaping.string(), "--older-than", "soon", "--json"});
  CHECK(o.exit_code == 2);
}

TEST_CASE("cli: LIM-7: reap --expired disposes what is past its ttl; a backend without it is a typed refusal") {
  Scratch s;
  const auto config = s.write("process.json", json{{"root", (s.dir / "root").string()}}.dump());
  // Nothing has expired in an empty root: zero disposed, exit 0.
  Outcome o = cli({"reap", "--backend", "process", "--config", config.string(), "--expired", "--json"},
                  MAF_TEST_PROCESS_PLUGIN_DIR);
  REQUIRE(o.exit_code == 0);
  CHECK(o.parsed()["disposed"] == 0);
  o = cli({"reap", "--backend", "test-good", "--expired", "--json"});
  CHECK(o.exit_code == 4);
  CHECK(o.parsed()["error"]["type"] == "NotImplementedError");
  CHECK(cli({"reap", "--backend", "test-good", "--expired", "--older-than", "1h"}).exit_code == 2);
}

// The process backend (a real guest under bubblewrap) for what the in-process double cannot
// show: a run with no spec at all, and an error thrown nested by collect_outputs.
TEST_CASE("cli: run with neither --spec nor --image runs the minimal `cli` spec on the backend's default (process)") {
  Scratch s;
  const auto config = s.write("process.json", json{{"root", (s.dir / "root").string()}}.dump());
  const Outcome o = cli({"run", "--backend", "process", "--config", config.string(), "--min-isolation", "os_process",
                         "--json", "--", "echo", "hi"},
                        MAF_TEST_PROCESS_PLUGIN_DIR);
  REQUIRE(o.exit_code == 0);
  CHECK(o.parsed()["stdout"] == "hi\n");
  CHECK(o.parsed()["kind"] == "cli");
}

TEST_CASE("cli: OBS-9: run --events writes the observer's events as JSON lines; OTEL variables export spans") {
  Scratch s;
  maf::sandbox::test::OtlpReceiver receiver;
  ::setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url().c_str(), 1);
  ::setenv("OTEL_SERVICE_NAME", "cli-under-test", 1);
  const auto config = s.write("process.json", json{{"root", (s.dir / "root").string()}}.dump());
  const auto input = s.write("in.txt", "payload-bytes");
  const fs::path events = s.dir / "events.jsonl";
  const Outcome o = cli({"run", "--backend", "process", "--config", config.string(), "--min-isolation", "os_process",
                         "--put", input.string() + "=in.txt", "--events", events.string(), "--json", "--",
                         "cat", "in.txt"},
                        MAF_TEST_PROCESS_PLUGIN_DIR);
  ::unsetenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  ::unsetenv("OTEL_SERVICE_NAME");
  REQUIRE(o.exit_code == 0);
  CHECK(o.parsed()["stdout"] == "payload-bytes");

  std::ifstream in(events);
  std::vector<json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  std::vector<std::string> types;
  for (const auto& l : lines) types.push_back(l["event"]);
  CHECK(types == std::vector<std::string>{"acquisition", "transfer", "exec", "cleanup"});
  for (const auto& l : lines) {
    CHECK(l["key"]["scope"] == "cli");
    CHECK(l["backend"] == "process");
  }
  CHECK(lines[1]["bytes"] == 13);
  CHECK(lines[2]["exit_code"] == 0);
  CHECK(lines[3]["rung"] == "dispose");
  // Sizes and digests, never the bytes themselves.
  std::ifstream raw(events);
  std::stringstream all;
  all << raw.rdbuf();
  CHECK(all.str().find("payload-bytes") == std::string::npos);

  // The run flushed before exiting: every span is at the receiver.
  const auto spans = receiver.spans();
  REQUIRE(spans.size() == 4);
  for (const auto& span : spans) {
    CHECK(span["_service"] == "cli-under-test");
    CHECK(span["traceId"] == spans[0]["traceId"]);  // one run, one trace
  }
}

TEST_CASE("cli: OBS-9: an --events path that cannot be opened is bad input before any sandbox exists") {
  const Outcome o = cli({"run", "--backend", "test-good", "--events", "/nonexistent-dir/events.jsonl", "--json", "--",
                         "echo", "hi"});
  CHECK(o.exit_code == 2);
  CHECK(o.parsed()["error"]["type"] == "ValueError");
  CHECK_THAT(o.parsed()["error"]["message"].get<std::string>(), Contains("/nonexistent-dir/events.jsonl"));
}

TEST_CASE("cli: C-43: a guest that swaps its work directory for a link to / gets the error type "
          "SandboxOutputNotConfined, the class name (process)") {
  Scratch s;
  const auto config = s.write("process.json", json{{"root", (s.dir / "root").string()}}.dump());
  const Outcome o = cli({"run", "--backend", "process", "--config", config.string(), "--min-isolation", "os_process",
                         "--output", "etc/passwd", "--out", (s.dir / "out").string(), "--json", "--", "sh", "-c",
                         "w=$(pwd); cd / && rm -rf \"$w\" && ln -s / \"$w\""},
                        MAF_TEST_PROCESS_PLUGIN_DIR);
  CHECK(o.exit_code == 4);
  CHECK(o.parsed()["error"]["type"] == "SandboxOutputNotConfined");
  CHECK_FALSE(fs::exists(s.dir / "out" / "etc" / "passwd"));
}

TEST_CASE("cli: a config key the backend refuses is bad input: exit 2 for run too, naming the key") {
  Scratch s;
  const auto config = s.write("config.json", R"({"transprt": "api"})");
  const Outcome o = cli({"run", "--backend", "process", "--config", config.string(), "--min-isolation", "os_process",
                         "--json", "--", "true"},
                        MAF_TEST_PROCESS_PLUGIN_DIR);
  CHECK(o.exit_code == 2);
  CHECK(o.parsed()["error"]["type"] == "ValueError");
  CHECK_THAT(o.parsed()["error"]["message"].get<std::string>(), Contains("'transprt'"));
}

TEST_CASE("cli: a collection error after the program ran still prints its output and exit status") {
  Scratch s;
  const auto config = s.write("config.json", kGoodConfig);
  SECTION("human form: the program's bytes, its exit code, then the error") {
    const Outcome o = cli({"run", "--backend", "test-good", "--config", config.string(), "--image", "alpine",
                           "--output", "nope.txt", "--out", (s.dir / "out").string(), "--", "say", "hello"});
    CHECK(o.exit_code == 4);
    CHECK(o.out == "hello from the guest\n");
    CHECK_THAT(o.err, Contains("exit code 0") && Contains("SandboxOutputMissing"));
  }
  SECTION("JSON: the error with the run beside it") {
    const Outcome o = cli({"run", "--backend", "test-good", "--config", config.string(), "--image", "alpine",
                           "--output", "nope.txt", "--out", (s.dir / "out").string(), "--json", "--", "say", "hello"});
    CHECK(o.exit_code == 4);
    const json j = o.parsed();
    CHECK(j["error"]["type"] == "SandboxOutputMissing");
    CHECK(j["run"]["exit_code"] == 0);
    CHECK(j["run"]["stdout"] == "hello from the guest\n");
  }
}

TEST_CASE("cli: C-81: an output name that can never land is refused before anything runs (exit 2)") {
  Scratch s;
  const Outcome o = cli({"run", "--backend", "test-good", "--image", "alpine", "--output", "/tmp/o.txt", "--out",
                         (s.dir / "out").string(), "--json", "--", "true"});
  CHECK(o.exit_code == 2);  // exit 2 is only ever given before the backend is touched
  CHECK(o.parsed()["error"]["type"] == "SandboxArtifactNameInvalid");
  CHECK_THAT(o.parsed()["error"]["message"].get<std::string>(), Contains("/tmp/o.txt"));
}

TEST_CASE("cli: STR-1: run prints a streaming backend's output as it arrives, before the program exits") {
  // Causality, not a clock: the program waits for a marker that this test makes only after
  // `first` came out of `maf-sandbox run`; output held until exit would never let it.
  Scratch s;
  const fs::path root = s.dir / "root";
  const auto config = s.write("process.json", json{{"root", root.string()}}.dump());
  const std::string program =
      "printf first; i=0; while [ $i -lt 150 ]; do [ -e go ] && { echo saw-marker; exit 0; }; sleep 0.1; "
      "i=$((i+1)); done; echo no-marker; exit 3";
  std::string command = "MAF_SANDBOX_PLUGIN_PATH=" + quote(MAF_TEST_PROCESS_PLUGIN_DIR) + " " + quote(MAF_TEST_CLI) +
                        " run --backend process --config " + quote(config.string()) +
                        " --min-isolation os_process -- sh -c " + quote(program) + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  bool marked = false;
  char buf[256];
  for (ssize_t n; (n = ::read(fileno(pipe), buf, sizeof buf)) > 0;) {
    out.append(buf, static_cast<std::size_t>(n));
    if (marked || out.find("first") == std::string::npos) continue;
    // The guest's working directory is a host directory under the backend's root, laid out
    // by conversation (docs/backends/process.md "State layout"): <root>/<conversation>/<sandbox>.
    for (const auto& conversation : fs::directory_iterator(root))
      if (conversation.is_directory())
        for (const auto& e : fs::directory_iterator(conversation.path()))
          if (fs::exists(e.path() / "root/maf-sandbox/work")) std::ofstream(e.path() / "root/maf-sandbox/work/go");
    marked = true;
  }
  const int status = pclose(pipe);
  CHECK(marked);
  CHECK(out == "firstsaw-marker\n");
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("cli: ENV-4 STDIN-1: run --env NAME=VALUE, --env NAME from our own environment, and --stdin (process)") {
  Scratch s;
  const auto config = s.write("process.json", json{{"root", (s.dir / "root").string()}}.dump());
  const auto input = s.write("stdin.txt", "piped bytes");
  const fs::path events = s.dir / "events.jsonl";
  const std::string secret = "cli-secret-" + std::to_string(getpid());
  const Outcome o = cli({"run", "--backend", "process", "--config", config.string(), "--min-isolation", "os_process",
                         "--env", "GREETING=hello", "--env", "MAF_CLI_SECRET", "--stdin", "--events", events.string(),
                         "--json", "--", "sh", "-c", "printf '%s %s ' \"$GREETING\" \"$MAF_CLI_SECRET\"; cat"},
                        MAF_TEST_PROCESS_PLUGIN_DIR, {{"MAF_CLI_SECRET", secret}}, input.string());
  REQUIRE(o.exit_code == 0);
  CHECK(o.parsed()["stdout"] == "hello " + secret + " piped bytes");
  std::ifstream in(events);
  std::stringstream lines;
  lines << in.rdbuf();
  CHECK(lines.str().find("MAF_CLI_SECRET") != std::string::npos);  // the name is there…
  CHECK(lines.str().find(secret) == std::string::npos);            // …its value never
  // A name with no '=' and no such variable is a usage error, naming it.
  const Outcome missing = cli({"run", "--backend", "process", "--config", config.string(), "--min-isolation",
                               "os_process", "--env", "MAF_NO_SUCH_VARIABLE_48", "--", "true"},
                              MAF_TEST_PROCESS_PLUGIN_DIR);
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("MAF_NO_SUCH_VARIABLE_48"));
}
