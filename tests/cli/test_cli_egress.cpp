// `maf-sandbox run --backend process` with an allowlist spec (issue 47 item 5): no path to the
// proxy is configured — the build tree's plugin finds it beside itself (PE-4) — and the run
// fetches from the allowed upstream, is refused another, and leaves no proxy behind. The
// upstreams are HTTP servers this test starts on the host's loopback, reached by names the
// proxy pins (docs/backends/process.md "Egress").
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using namespace std::chrono_literals;
extern "C" char** environ;

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Outcome {
  int exit_code = -1;
  std::string out;
};

/// The CLI with the process plugin's build directory as its plugin path; stderr folded in;
/// `env`: more NAME=VALUE for its environment.
Outcome cli(const std::vector<std::string>& args, const std::string& env = "") {
  std::string command = "MAF_SANDBOX_PLUGIN_PATH=" + quote(MAF_TEST_PROCESS_PLUGIN_DIR) + " " +
                        (env.empty() ? std::string() : env + " ") + quote(MAF_TEST_CLI);  // env: NAME=VALUE, no quoting needed
  for (const auto& a : args) command += " " + quote(a);
  command += " 2>&1";
  Outcome o;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) o.out.append(buf, n);
  const int status = ::pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  INFO("output: " << o.out);
  return o;
}

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(s);
  return ntohs(a.sin_port);
}

bool connects(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

/// python3's http.server for `dir` on the host's loopback; or, with `tls` (the directory of
/// make_certificates), the TLS upstream that logs every request's headers to `<tls>/up.log`.
struct Upstream {
  pid_t pid = 0;
  int port = free_port();
  explicit Upstream(const std::string& dir, const std::string& tls = "") {
    std::vector<std::string> args{"python3", "-m", "http.server", std::to_string(port), "--bind", "127.0.0.1",
                                  "--directory", dir};
    if (!tls.empty())
      args = {"python3", MAF_TEST_TLS_UPSTREAM, std::to_string(port), dir, tls + "/up.pem", tls + "/up.key", "127.0.0.1"};
    const std::string err = tls.empty() ? "/dev/null" : tls + "/up.log";
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(::posix_spawnp(&pid, "python3", &fa, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < 200 && !connects(port); ++i) std::this_thread::sleep_for(50ms);  // readiness only
    REQUIRE(connects(port));
  }
  ~Upstream() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

std::string text_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A test CA and an upstream certificate for allowed.test and other.test in `dir`.
void make_certificates(const fs::path& dir) {
  const std::string make =
      "cd " + quote(dir.string()) +
      " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 2"
      " -subj /CN=maf-cli-test-CA -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign"
      " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout up.key -out up.csr -subj /CN=allowed.test"
      " && printf 'subjectAltName=DNS:allowed.test,DNS:other.test\\nextendedKeyUsage=serverAuth\\n' >ext"
      " && openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out up.pem -days 2 -extfile ext"
      " && chmod a+r up.key";
  REQUIRE(std::system(("bash -ec " + quote(make) + " >/dev/null 2>&1").c_str()) == 0);
}

/// Running egress proxies whose allowlist is `entry` (argv[0] the proxy, `--allow entry`).
int proxies_allowing(const std::string& entry) {
  int n = 0;
  for (const auto& p : fs::directory_iterator("/proc")) {
    std::ifstream in(p.path() / "cmdline", std::ios::binary);
    std::vector<std::string> argv;
    for (std::string a; std::getline(in, a, '\0');) argv.push_back(a);
    if (argv.empty() || argv[0].find("maf-sandbox-egress-proxy") == std::string::npos) continue;
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == "--allow" && argv[i + 1] == entry) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("issue 47 PE-4: maf-sandbox run --backend process with an allowlist spec fetches from the allowed host "
          "and is refused another, with no proxy path configured and no proxy left behind") {
  const fs::path dir = fs::temp_directory_path() / ("maf-cli-egress-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "www");
  // Searchable by the process backend's host_uid, which a root host runs bubblewrap as.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  std::ofstream(dir / "www" / "index.html") << "fetched-through-the-proxy\n";
  Upstream allowed((dir / "www").string()), other((dir / "www").string());
  const std::string ap = std::to_string(allowed.port), op = std::to_string(other.port);
  std::ofstream(dir / "config.json") << R"({"root": ")" << (dir / "root").string()
                                     << R"(", "egress_proxy_args": ["--resolve", "allowed.test=127.0.0.1",)"
                                     << R"( "--resolve", "other.test=127.0.0.1"]})";
  std::ofstream(dir / "spec.json") << R"({"kind": "fetch", "egress": "allowlist", "egress_allow": ["allowed.test:)"
                                   << ap << R"("], "requires": ["exec"]})";
  const std::vector<std::string> run{"run",         "--backend",       "process", "--config", (dir / "config.json").string(),
                                     "--spec",      (dir / "spec.json").string(), "--min-isolation", "os_process",
                                     "--events",    (dir / "events.jsonl").string(), "--"};

  auto fetched = run;
  fetched.insert(fetched.end(), {"curl", "-sS", "http://allowed.test:" + ap + "/"});
  const Outcome ok = cli(fetched);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("fetched-through-the-proxy") != std::string::npos);

  auto refused = run;
  refused.insert(refused.end(), {"curl", "-sS", "-o", "/dev/null", "-w", "status=%{http_code}\\n",
                                 "http://other.test:" + op + "/"});
  const Outcome no = cli(refused);
  CHECK(no.out.find("status=403") != std::string::npos);
  CHECK(no.out.find("fetched-through-the-proxy") == std::string::npos);
  // The same host on the other upstream's port is off the list too.
  auto other_port = run;
  other_port.insert(other_port.end(), {"curl", "-sS", "-o", "/dev/null", "-w", "status=%{http_code}\\n",
                                       "http://allowed.test:" + op + "/"});
  CHECK(cli(other_port).out.find("status=403") != std::string::npos);

  // OBS-7 through the CLI's --events: the decisions, published when each run disposed.
  std::ifstream events(dir / "events.jsonl");
  std::stringstream text;
  text << events.rdbuf();
  CHECK(text.str().find(R"("decision":"ALLOW","event":"network_decision","host":"allowed.test")") != std::string::npos);
  CHECK(text.str().find(R"("decision":"DENY","event":"network_decision","host":"other.test")") != std::string::npos);

  // Each run disposed its sandbox, and its proxy with it.
  const Outcome left = cli({"reap", "--backend", "process", "--config", (dir / "config.json").string(), "--older-than",
                            "0s"});
  CHECK(left.exit_code == 0);
  CHECK(proxies_allowing("allowed.test:" + ap) == 0);
  fs::remove_all(dir);
}

TEST_CASE("issue 46/47 CRED-5 CRED-10: maf-sandbox run with a credentialed spec is refused by default, served with "
          "--max-identity-scope and --credential (the upstream sees the value), and the value is in none of the "
          "CLI's JSON output, its events or the guest's") {
  const fs::path dir = fs::temp_directory_path() / ("maf-cli-cred-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "www" / "repo");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  std::ofstream(dir / "www" / "repo" / "x") << "hello-from-repo\n";
  make_certificates(dir);
  Upstream up((dir / "www").string(), dir.string());
  const std::string p = std::to_string(up.port);
  std::ofstream(dir / "config.json") << R"({"root": ")" << (dir / "root").string()
                                     << R"(", "egress_upstream_ca_file": ")" << (dir / "ca.pem").string()
                                     << R"(", "egress_proxy_args": ["--resolve", "allowed.test=127.0.0.1",)"
                                     << R"( "--resolve", "other.test=127.0.0.1"]})";
  std::ofstream(dir / "spec.json") << R"({"kind": "cred", "egress": "allowlist", "egress_allow": ["allowed.test:)" << p
                                   << R"(", "other.test:)" << p << R"("], "requires": ["exec"], "attached_identity": )"
                                   << R"([{"name": "api", "hosts": ["allowed.test:)" << p << R"("], "env": "API_TOKEN"}]})";
  const std::string value = "ghs_cli_" + std::to_string(::getpid()) + "_" + std::to_string(up.port * 7919);
  std::ofstream(dir / "value.txt") << value << "\n";
  const std::vector<std::string> base{"run",    "--backend", "process", "--config", (dir / "config.json").string(),
                                      "--spec", (dir / "spec.json").string(), "--min-isolation", "os_process", "--json",
                                      "--events", (dir / "events.jsonl").string()};
  const std::vector<std::string> guest{
      "--", "sh", "-c",
      "curl -sS -H \"Authorization: Bearer $API_TOKEN\" https://allowed.test:" + p + "/repo/x; echo \"token=$API_TOKEN\"; "
      "curl -sS -o /dev/null -w 'other=%{http_code}\\n' -H \"Authorization: Bearer $API_TOKEN\" https://other.test:" +
          p + "/repo/x"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    a.insert(a.end(), guest.begin(), guest.end());
    return a;
  };

  // CRED-5: a default router permits no credential; refused before anything is made.
  const Outcome refused = cli(with({}), "MAF_TEST_API_VALUE=" + value);
  CHECK(refused.exit_code == 3);
  CHECK_THAT(refused.out, Catch::Contains("SandboxIdentityScopeDenied") && Catch::Contains("'api'"));
  const Outcome checked = cli({"check", "--backend", "process", "--config", (dir / "config.json").string(), "--spec",
                               (dir / "spec.json").string(), "--min-isolation", "os_process"});
  CHECK(checked.exit_code == 3);
  // Allowed, but no source named for it: a usage error naming the credential.
  const Outcome unnamed = cli(with({"--max-identity-scope", "sandbox"}));
  CHECK(unnamed.exit_code == 2);
  CHECK_THAT(unnamed.out, Catch::Contains("--credential api=env:VARIABLE"));
  const Outcome bad_scope = cli(with({"--max-identity-scope", "everything"}));
  CHECK(bad_scope.exit_code == 2);
  CHECK_THAT(bad_scope.out, Catch::Contains("--max-identity-scope") && Catch::Contains("everything"));

  // Served: the bound host sees the value, another host is refused, the guest holds a placeholder.
  for (const std::string& source : std::vector<std::string>{"env:MAF_TEST_API_VALUE", "file:" + (dir / "value.txt").string()}) {
    const auto before = text_of(dir / "up.log").size();
    const Outcome ok =
        cli(with({"--max-identity-scope", "sandbox", "--credential", "api=" + source}), "MAF_TEST_API_VALUE=" + value);
    INFO(source << ": " << ok.out);
    CHECK(ok.exit_code == 0);
    CHECK_THAT(ok.out, Catch::Contains("hello-from-repo") && Catch::Contains("token=maf-cred-api-") &&
                           Catch::Contains("other=403"));
    CHECK(ok.out.find(value) == std::string::npos);
    CHECK(text_of(dir / "up.log").substr(before).find("Bearer " + value) != std::string::npos);
  }
  CHECK(text_of(dir / "events.jsonl").find("credential") != std::string::npos);  // the decisions name it...
  CHECK(text_of(dir / "events.jsonl").find(value) == std::string::npos);         // ...never the value

  const Outcome left = cli({"reap", "--backend", "process", "--config", (dir / "config.json").string(), "--older-than",
                            "0s"});
  CHECK(left.exit_code == 0);
  CHECK(proxies_allowing("allowed.test:" + p + ",other.test:" + p) == 0);
  fs::remove_all(dir);
}
