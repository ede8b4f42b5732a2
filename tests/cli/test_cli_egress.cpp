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

/// The CLI with the process plugin's build directory as its plugin path; stderr folded in.
Outcome cli(const std::vector<std::string>& args) {
  std::string command = "MAF_SANDBOX_PLUGIN_PATH=" + quote(MAF_TEST_PROCESS_PLUGIN_DIR) + " " + quote(MAF_TEST_CLI);
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

/// python3's http.server for `dir` on the host's loopback.
struct Upstream {
  pid_t pid = 0;
  int port = free_port();
  explicit Upstream(const std::string& dir) {
    std::vector<std::string> args{"python3", "-m", "http.server", std::to_string(port), "--bind", "127.0.0.1",
                                  "--directory", dir};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
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
