// ALLOWLIST egress on the process backend against real bubblewrap and the real proxy
// (issue 47; docs/backends/process.md "Egress", PE-1…PE-9): listeners the test starts on the
// host's loopback, reached only by the names the proxy pins and allows; attacks from inside
// on every other way out; the proxy's life from acquire to reap.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "egress_proxy.hpp"
#include "maf/sandbox/conformance/posix_guest_subject.hpp"
#include "maf/sandbox/conformance/suites.hpp"
#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/router.hpp"
#include "process_fixture.hpp"

using namespace maf::sandbox;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using maf::sandbox::process::test::Fixture;

namespace {

extern "C" char** environ;

/// A free port on the host's loopback (bound, read, released).
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

/// A program the test starts and ends (an upstream), ready once its port answers.
struct Server {
  pid_t pid = 0;
  int port = free_port();
  /// `err`: a file for its stderr (an upstream's request log); empty: /dev/null.
  explicit Server(std::vector<std::string> argv_with_port_placeholder, const std::string& err = "") {
    std::vector<std::string> args;
    for (auto& a : argv_with_port_placeholder) args.push_back(a == "{port}" ? std::to_string(port) : a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err.empty() ? "/dev/null" : err.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    REQUIRE(::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < 200 && !connects(port); ++i) std::this_thread::sleep_for(50ms);  // readiness, not a bound
    REQUIRE(connects(port));
  }
  ~Server() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

/// A directory served over plain HTTP on the host's loopback.
struct HttpDir {
  std::string dir;
  std::unique_ptr<Server> server;
  explicit HttpDir(const std::string& body) {
    char tmpl[] = "/tmp/maf-egress-www-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    std::ofstream(dir + "/index.html") << body;
    server = std::make_unique<Server>(
        std::vector<std::string>{"python3", "-m", "http.server", "{port}", "--bind", "127.0.0.1", "--directory", dir});
  }
  ~HttpDir() {
    server.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  int port() const { return server->port; }
};

void with_programs(process::ProcessBackendConfig& c) {
  c.egress_proxy_path = MAF_TEST_EGRESS_PROXY;
  c.egress_relay_path = MAF_TEST_EGRESS_RELAY;
}

SandboxSpec allow_spec(std::vector<EgressEntry> allow, std::string kind = "net") {
  return SandboxSpec({.kind = std::move(kind),
                      .egress_allow = std::move(allow),
                      .requires_capabilities = {Capability::Exec, Capability::FilesIn},
                      .egress = Egress::Allowlist});
}

std::string out_of(const ExecResult& r) { return r.stdout_text() + r.stderr_text() + "|exit=" + std::to_string(r.exit_code); }

std::string fact(const SandboxBackend& b, const std::string& name) {
  for (const auto& [k, v] : b.facts())
    if (k == name) return v;
  return {};
}

/// Gone, or a zombie its new parent has yet to reap: either way it serves nothing.
bool ended(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close == std::string::npos || text.compare(close + 2, 1, "Z") == 0;
}

/// A directory with a test CA, an upstream certificate for allowed.test and other.test, an
/// untrusted one for untrusted.test, and the files the upstream serves.
std::string make_tls_upstream_dir() {
  char tmpl[] = "/tmp/maf-egress-l7-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const std::string make =
      "cd " + dir +
      " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout testca.key -out testca.pem"
      " -days 2 -subj /CN=maf-egress-test-CA -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign"
      " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout up.key -out up.csr -subj /CN=allowed.test"
      " && printf 'subjectAltName=DNS:allowed.test,DNS:other.test\\nextendedKeyUsage=serverAuth\\n' >ext"
      " && openssl x509 -req -in up.csr -CA testca.pem -CAkey testca.key -CAcreateserial -out up.pem -days 2 -extfile ext"
      " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout bad.key -out bad.pem -days 2"
      " -subj /CN=untrusted.test -addext subjectAltName=DNS:untrusted.test"
      " && mkdir -p www/repo www/REPO && echo hello-from-repo >www/repo/x && echo upper >www/REPO/x && echo secret >www/admin";
  REQUIRE(std::system(("bash -ec \"" + make + "\" >/dev/null 2>&1").c_str()) == 0);
  return dir;
}

/// The (only) sandbox directory of a fixture.
std::string only_sandbox(const Fixture& f) {
  const auto dirs = f.sandbox_paths();
  REQUIRE(dirs.size() == 1);
  return dirs.front().string();
}

}  // namespace

TEST_CASE("PE-5: allowlist (and method/path rules) are declared only after the construction probe; a relay that "
          "does not relay, or no proxy, declares closed alone and says why") {
  Fixture f(with_programs);
  const auto& d = f.backend->declarations();
  CHECK(d.egress_modes == EgressSet{Egress::Closed, Egress::Allowlist});
  CHECK(d.capabilities.contains(Capability::EgressMethods));  // the proxy's --features: tls-termination
  CHECK(d.capabilities.contains(Capability::EgressPaths));
  CHECK_THAT(fact(*f.backend, "egress allowlist"), Catch::StartsWith("proven"));

  Fixture missing([](process::ProcessBackendConfig& c) {
    with_programs(c);
    c.root += "-missing";
    c.egress_proxy_path = "/nonexistent/maf-sandbox-egress-proxy";
  });
  CHECK(missing.backend->declarations().egress_modes == EgressSet{Egress::Closed});
  CHECK_THAT(fact(*missing.backend, "egress allowlist"), Catch::Contains("/nonexistent/maf-sandbox-egress-proxy"));
  SandboxRouter router({missing.backend}, RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}));
  CHECK_THROWS_AS(router.ensure_can_serve(allow_spec({std::string("example.com")})), SandboxEgressNotEnforced);

  // The probe can fail: a "relay" that runs the command without listening for it.
  const fs::path fake = fs::temp_directory_path() / ("maf-egress-fake-relay-" + std::to_string(::getpid()));
  std::ofstream(fake) << "#!/bin/sh\nshift 3\nexec \"$@\"\n";
  fs::permissions(fake, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  Fixture broken([&](process::ProcessBackendConfig& c) {
    with_programs(c);
    c.root += "-broken";
    c.egress_relay_path = fake.string();
  });
  CHECK(broken.backend->declarations().egress_modes == EgressSet{Egress::Closed});
  CHECK_THAT(fact(*broken.backend, "egress allowlist"), Catch::Contains("did not reach the allowed listener"));
  fs::remove(fake);
}

TEST_CASE("PE-1 PE-3 EG-1 EG-2: the allowed host is fetched, others are refused, and every other way out from "
          "inside is closed (host loopback, IPv6, raw and packet sockets, netlink, vsock, DNS)") {
  HttpDir allowed("hello-allowed\n"), denied("hello-denied\n");
  Fixture f([&](process::ProcessBackendConfig& c) {
    with_programs(c);
    c.egress_proxy_args = {"--resolve", "allowed.test=127.0.0.1", "--resolve", "denied.test=127.0.0.1",
                           "--resolve", "a.wild.test=127.0.0.1",  "--resolve", "b.a.wild.test=127.0.0.1"};
  });
  const std::string ap = std::to_string(allowed.port()), dp = std::to_string(denied.port());
  auto sb = f.acquire(f.key, allow_spec({"allowed.test:" + ap, "*.wild.test:" + ap, "127.0.0.1:" + dp}));
  auto sh = [&](const std::string& line) { return out_of(f.exec(*sb, Command(line))); };

  // PE-3: the variables, for every command.
  CHECK(sh("echo \"$HTTP_PROXY $HTTPS_PROXY $http_proxy $https_proxy [${NO_PROXY-unset}] [${no_proxy-unset}]\"") ==
        "http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 [] []\n|exit=0");
  // EG-1 and the wildcard (one label), through curl's own proxy support.
  CHECK(sh("curl -sS http://allowed.test:" + ap + "/") == "hello-allowed\n|exit=0");
  CHECK(sh("curl -sS http://a.wild.test:" + ap + "/") == "hello-allowed\n|exit=0");
  CHECK(sh("curl -sS -o /dev/null -w '%{http_code}' http://b.a.wild.test:" + ap + "/") == "403|exit=0");
  // EG-2: a host off the list, the allowed host on another port, a CONNECT to it.
  CHECK(sh("curl -sS -o /dev/null -w '%{http_code}' http://denied.test:" + dp + "/") == "403|exit=0");
  CHECK(sh("curl -sS -o /dev/null -w '%{http_code}' http://allowed.test:" + dp + "/") == "403|exit=0");
  CHECK_THAT(sh("curl -sS -p http://denied.test:" + dp + "/"), Catch::Contains("403") && !Catch::Contains("hello"));
  // Non-global addresses are refused even when listed, unless pinned: the host's loopback.
  CHECK(sh("curl -sS -o /dev/null -w '%{http_code}' http://127.0.0.1:" + dp + "/") == "403|exit=0");

  // Every other way out, from a hostile guest's Python: the host's loopback directly, IPv6,
  // raw, packet, netlink (only the guest's own namespace), vsock to the host, DNS.
  const std::string attack = R"PY(
import socket
def tryit(name, fn):
    try:
        r = fn()
        print(name, "OPEN", r)
    except Exception as e:
        print(name, "refused", type(e).__name__)
def tcp4(): s = socket.create_connection(("127.0.0.1", PORT), timeout=2); return "connected"
def tcp6(): s = socket.create_connection(("::1", PORT), timeout=2); return "connected"
def raw(): s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP); s.sendto(b"x", ("10.0.0.1", 9)); return "sent"
def packet(): s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); return "made"
def vsock(): s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); s.settimeout(2); s.connect((2, PORT)); return "connected"
def dns(): return socket.getaddrinfo("example.com", 80)
def links():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    import os; return sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else "no-sys"
tryit("tcp4", tcp4); tryit("tcp6", tcp6); tryit("raw", raw); tryit("packet", packet); tryit("vsock", vsock); tryit("dns", dns)
print("interfaces", [n for i, n in socket.if_nameindex()])
)PY";
  std::string script = attack;
  script.replace(script.find("PORT"), 4, dp);
  script.replace(script.find("PORT"), 4, dp);
  script.replace(script.find("PORT"), 4, dp);
  const auto r = f.exec(*sb, Command(std::vector<std::string>{"python3", "-c", script}));
  const std::string report = r.stdout_text();
  INFO(report << r.stderr_text());
  CHECK(report.find("OPEN") == std::string::npos);
  for (const char* attempt : {"tcp4 refused", "tcp6 refused", "raw refused", "packet refused", "vsock refused",
                              "dns refused", "interfaces ['lo']"})
    CHECK_THAT(report, Catch::Contains(attempt));
}

TEST_CASE("PE-6 PE-7 OBS-7: dispose ends the proxy and removes its socket; its decisions become NetworkDecision "
          "events with the sandbox's key") {
  HttpDir allowed("hello-allowed\n");
  Fixture f([&](process::ProcessBackendConfig& c) {
    with_programs(c);
    c.egress_proxy_args = {"--resolve", "allowed.test=127.0.0.1", "--resolve", "denied.test=127.0.0.1"};
  });
  std::vector<NetworkDecisionEvent> seen;
  auto observers = std::make_shared<const ObserverSet>(std::vector<std::shared_ptr<SandboxObserver>>{
      make_observer([&](const SandboxEvent& e) {
        if (const auto* d = std::get_if<NetworkDecisionEvent>(&e)) seen.push_back(*d);
      })});
  f.backend->attach_observers(observers);
  const std::string ap = std::to_string(allowed.port());
  auto sb = f.acquire(f.key, allow_spec({"allowed.test:" + ap}));
  CHECK(out_of(f.exec(*sb, Command("curl -sS http://allowed.test:" + ap + "/"))) == "hello-allowed\n|exit=0");
  CHECK(out_of(f.exec(*sb, Command("curl -sS -o /dev/null -w '%{http_code}' http://denied.test:" + ap + "/"))) ==
        "403|exit=0");
  const std::string dir = only_sandbox(f);
  const std::string socket_path = process::egress_dir(dir) + "/proxy.sock";
  REQUIRE(process::egress_proxy_running(dir));
  REQUIRE(fs::exists(socket_path));
  // The proxy runs as the guests' host identity, never as root.
  std::ifstream pidfile(process::egress_dir(dir) + "/proxy.pid");
  pid_t pid = 0;
  pidfile >> pid;
  REQUIRE(pid > 1);
  struct stat st {};
  REQUIRE(::stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0);
  CHECK(st.st_uid != 0);
  CHECK(st.st_uid == (::geteuid() == 0 ? f.config.host_uid : ::geteuid()));
  // PE-7: its log is capped on the host's disk (64 MiB), and reaching the cap does not kill it.
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  std::string max_file_size;
  for (std::string line; std::getline(limits, line);)
    if (line.rfind("Max file size", 0) == 0) max_file_size = line;
  CHECK_THAT(max_file_size, Catch::Contains("67108864"));

  sb.reset();
  const auto failure = f.run([&] { return f.backend->dispose(f.key, std::nullopt, std::nullopt); });
  CHECK_FALSE(failure.has_value());
  CHECK(ended(pid));  // ended (SIGKILL, and waited for) before dispose returned
  CHECK_FALSE(fs::exists(socket_path));
  CHECK(f.sandbox_dirs() == 0);
  bool allow = false, deny = false;
  for (const auto& e : seen) {
    CHECK(e.context.backend == "process");
    CHECK(e.context.key == f.key);
    allow |= e.decision == "ALLOW" && e.host == "allowed.test" && e.port == allowed.port();
    deny |= e.decision == "DENY" && e.host == "denied.test";
  }
  CHECK(allow);
  CHECK(deny);
}

TEST_CASE("PE-6: a killed proxy is started again at the next acquire; one a vanished host left is ended by the next "
          "reap; a proxy that refuses to start is reported word for word") {
  HttpDir allowed("hello-allowed\n");
  auto configure = [&](process::ProcessBackendConfig& c) {
    with_programs(c);
    c.egress_proxy_args = {"--resolve", "allowed.test=127.0.0.1"};
  };
  const std::string ap = std::to_string(allowed.port());
  const SandboxSpec spec = allow_spec({"allowed.test:" + ap});
  Fixture f(configure);
  std::string dir;
  {
    auto sb = f.acquire(f.key, spec);
    dir = only_sandbox(f);
    std::ifstream pidfile(process::egress_dir(dir) + "/proxy.pid");
    pid_t pid = 0;
    pidfile >> pid;
    REQUIRE(::kill(pid, SIGKILL) == 0);
    for (int i = 0; i < 500 && process::egress_proxy_running(dir); ++i) std::this_thread::sleep_for(2ms);
    REQUIRE_FALSE(process::egress_proxy_running(dir));
    auto again = f.acquire(f.key, spec);  // held, but its proxy is gone: started again
    CHECK(process::egress_proxy_running(dir));
    CHECK(out_of(f.exec(*again, Command("curl -sS http://allowed.test:" + ap + "/"))) == "hello-allowed\n|exit=0");
  }
  // The host that made it goes away without disposing (its backend object is dropped): the
  // proxy keeps serving the sandbox on disk, and another instance's reap ends it.
  f.backend.reset();
  REQUIRE(process::egress_proxy_running(dir));
  auto other = process::make_process_backend(f.config);
  const auto purge = f.run([&] { return other->reap(std::chrono::seconds(0), std::nullopt); });
  CHECK(purge.disposed == 1);
  CHECK_FALSE(purge.undisposed.has_value());
  CHECK_FALSE(fs::exists(dir));
  f.backend = other;

  // A start-up refusal, word for word (here a malformed option the backend passes on).
  Fixture bad([&](process::ProcessBackendConfig& c) {
    configure(c);
    c.root += "-bad";
    c.egress_proxy_args = {"--max-connections", "many"};
  });
  CHECK_THROWS_WITH(bad.acquire(bad.key, spec), Catch::Contains("maf-sandbox-egress-proxy: refusing to start:") &&
                                                    Catch::Contains("many"));
  CHECK(bad.sandbox_dirs() == 0);  // the sandbox that acquire made is not left behind
}

TEST_CASE("EL-1…EL-9 C-9 C-10: method/path rules on the process backend — the host-side proxy terminates TLS with "
          "a per-sandbox CA bound into the guest; curl and Python in the guest") {
  const std::string dir = make_tls_upstream_dir();
  Server up({"python3", MAF_TEST_TLS_UPSTREAM, "{port}", dir + "/www", dir + "/up.pem", dir + "/up.key", "127.0.0.1"});
  Server bad({"python3", MAF_TEST_TLS_UPSTREAM, "{port}", dir + "/www", dir + "/bad.pem", dir + "/bad.key", "127.0.0.1"});
  Fixture f([&](process::ProcessBackendConfig& c) {
    with_programs(c);
    c.egress_proxy_args = {"--resolve", "allowed.test=127.0.0.1", "--resolve", "other.test=127.0.0.1", "--resolve",
                           "untrusted.test=127.0.0.1"};
    c.egress_upstream_ca_file = dir + "/testca.pem";
  });
  const std::string p = std::to_string(up.port), bp = std::to_string(bad.port);
  using Strings = std::vector<std::string>;
  auto sb = f.acquire(f.key, allow_spec({EgressRule("allowed.test:" + p, Strings{"GET"}, Strings{"/repo/"}),
                                         std::string("other.test:" + p),
                                         EgressRule("untrusted.test:" + bp, Strings{"GET"})},
                                        "l7"));
  auto sh = [&](const std::string& line) { return out_of(f.exec(*sb, Command(line))); };
  const std::string base = "https://allowed.test:" + p;
  CHECK(sh("curl -sS " + base + "/repo/x") == "hello-from-repo\n|exit=0");
  CHECK(sh("python3 -c 'import urllib.request as u; print(u.urlopen(\"" + base +
           "/repo/x\").read().decode(), end=\"\")'") == "hello-from-repo\n|exit=0");
  CHECK_THAT(sh("curl -sS -w ' %{http_code}' -X DELETE " + base + "/repo/x"),
             Catch::Contains("method DELETE is not allowed") && Catch::Contains(" 403"));
  CHECK_THAT(sh("head -1 /etc/maf-sandbox/egress-ca.pem; echo $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS"),
             Catch::StartsWith("-----BEGIN CERTIFICATE-----\n/etc/maf-sandbox/egress-ca-bundle.pem "
                               "/etc/maf-sandbox/egress-ca.pem"));
  // The CA files are the host's, bound read-only: the guest cannot swap the CA.
  CHECK_THAT(sh("echo x > /etc/maf-sandbox/egress-ca.pem"), !Catch::EndsWith("|exit=0"));

  conformance::EgressL7Targets t;
  t.allowed_url = base + "/repo/x";
  t.refused_path_url = base + "/admin";
  t.refused_method = "DELETE";
  t.traversal_base = base + "/repo/";
  t.mixed_case_url = base + "/REPO/x";
  t.other_host = "other.test";
  t.untrusted_url = "https://untrusted.test:" + bp + "/repo/x";
  t.exec_timeout = 30s;
  conformance::PosixGuestSubject subject(f.run, sb, f.backend->declarations().capabilities, Egress::Allowlist);
  const auto results = conformance::run_egress_l7(subject, t);
  std::string failed;
  for (const auto& r : results)
    if (!r.passed()) failed += r.id + ": " + r.message + "\n";
  INFO(failed);
  CHECK(failed.empty());
  CHECK(results.size() == 9);
  sb.reset();
  std::error_code ec;
  fs::remove_all(dir, ec);
}

namespace {

/// Everything a host-side reader could find the value in: every file under `root` (the
/// sandbox's host tree: the guest's root, the egress directory with policy, logs and CA),
/// and the running proxy's command line and environment.
std::vector<std::string> value_found_on_host(const std::string& root, const std::vector<fs::path>& sandboxes,
                                             const std::string& value) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec || !it->is_regular_file(ec)) continue;
    std::ifstream in(it->path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find(value) != std::string::npos) found.push_back(it->path().string());
  }
  for (const auto& dir : sandboxes) {
    std::ifstream pid_file(dir / "egress" / "proxy.pid");
    long long pid = 0;
    if (!(pid_file >> pid) || pid <= 1) continue;
    for (const char* what : {"cmdline", "environ"}) {
      std::ifstream in("/proc/" + std::to_string(pid) + "/" + what, std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find(value) != std::string::npos) found.push_back(std::string("the proxy's /proc/pid/") + what);
    }
  }
  return found;
}

SandboxSpec credential_spec(const std::string& port) {
  AttachedCredential::Fields c;
  c.name = "github";
  c.hosts = {"allowed.test:" + port};
  c.env = "GITHUB_TOKEN";
  SandboxSpec::Fields f{.kind = "cred",
                        .egress_allow = {std::string("allowed.test:" + port), std::string("other.test:" + port)},
                        .requires_capabilities = {Capability::Exec, Capability::FilesIn},
                        .egress = Egress::Allowlist};
  f.attached_identity.push_back(AttachedCredential(std::move(c)));
  return SandboxSpec(std::move(f));
}

std::string failed_ids(const std::vector<conformance::ProbeResult>& results) {
  std::string out;
  for (const auto& r : results)
    if (!r.passed()) out += r.id + ": " + r.message + "\n";
  return out;
}

}  // namespace

TEST_CASE("AI-1 AI-2 AI-3 AI-4 PE-10 CRED-7: ATTACHED_IDENTITY on the process backend — the host-side proxy gets the "
          "value through a pipe; the guest, the sandbox's host tree, the proxy's argv/environ and its log never hold "
          "it; the probes fail against a proxy that swaps toward any host and a guest given the value") {
  const std::string dir = make_tls_upstream_dir();
  Server up({"python3", MAF_TEST_TLS_UPSTREAM, "{port}", dir + "/www", dir + "/up.pem", dir + "/up.key", "127.0.0.1"},
            dir + "/up.log");
  const std::string p = std::to_string(up.port);
  auto configure = [&](std::vector<std::string> extra) {
    return [&, extra](process::ProcessBackendConfig& c) {
      with_programs(c);
      c.egress_proxy_args = {"--resolve", "allowed.test=127.0.0.1", "--resolve", "other.test=127.0.0.1"};
      c.egress_proxy_args.insert(c.egress_proxy_args.end(), extra.begin(), extra.end());
      c.egress_upstream_ca_file = dir + "/testca.pem";
    };
  };
  auto upstream_log = [&] {
    std::ifstream in(dir + "/up.log");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string value = "ghs_" + std::to_string(std::random_device{}()) + std::to_string(std::random_device{}());
  auto run_ai = [&](Fixture& f, std::shared_ptr<Sandbox> sb) {
    conformance::AttachedIdentityTargets t;
    t.bound_url = "https://allowed.test:" + p + "/repo/x";
    t.other_url = "https://other.test:" + p + "/repo/x";
    t.env = "GITHUB_TOKEN";
    t.value = value;
    t.upstream_log = upstream_log;
    t.where_found = [&](const std::string& v) { return value_found_on_host(f.root.string(), f.sandbox_paths(), v); };
    conformance::PosixGuestSubject subject(f.run, sb, f.backend->declarations().capabilities, Egress::Allowlist);
    return conformance::run_attached_identity(subject, t);
  };
  std::vector<CredentialRequest> asked;
  {
    Fixture f(configure({}));
    REQUIRE(f.backend->declarations().capabilities.contains(Capability::AttachedIdentity));
    // No source attached: refused, nothing written into the guest instead.
    CHECK_THROWS_WITH(f.acquire(f.key, credential_spec(p)), Catch::Contains("no credential source"));
    f.backend->attach_credential_source([&](const CredentialRequest& r) {
      asked.push_back(r);
      return SecretValue(value);
    });
    auto sb = f.acquire(f.key, credential_spec(p));
    const auto results = run_ai(f, sb);
    INFO(failed_ids(results));
    CHECK(failed_ids(results).empty());
    CHECK(results.size() == 4);
    REQUIRE(asked.size() == 1);
    CHECK(asked[0].credential == "github");
    CHECK(asked[0].backend == "process");
    // A kept proxy holds the value: a warm acquire asks nothing.
    (void)f.acquire(f.key, credential_spec(p));
    CHECK(asked.size() == 1);
    // The proxy's log names the credential in its decisions, never the value.
    const std::string sandbox = only_sandbox(f);
    std::ifstream log_in(sandbox + "/egress/proxy.log");
    const std::string log((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
    CHECK_THAT(log, Catch::Contains("\"credential\":\"github\"") && !Catch::Contains(value));
    // Shown able to fail: a guest that was handed the value (here: a file the host puts in)
    // is seen by AI-4 in the sandbox's host tree.
    f.run([&] { return sb->write_file("leak.txt", value); });
    const auto leaked = run_ai(f, sb);
    CHECK_THAT(failed_ids(leaked), Catch::Contains("AI-4"));
    sb.reset();
  }

  // ...and a proxy that swaps toward any host (the --unsafe-pass-through double) fails AI-2.
  Fixture loose(configure({"--unsafe-pass-through"}));
  loose.backend->attach_credential_source([&](const CredentialRequest&) { return SecretValue(value); });
  auto loose_sb = loose.acquire(loose.key, credential_spec(p));
  CHECK_THAT(failed_ids(run_ai(loose, loose_sb)), Catch::Contains("AI-2"));
  loose_sb.reset();
  std::error_code ec;
  fs::remove_all(dir, ec);
}
