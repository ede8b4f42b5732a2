// The host side of a process sandbox's egress (egress_proxy.hpp).
#include "egress_proxy.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "fd.hpp"
#include "maf/sandbox/egress_proxy/brokering.hpp"
#include "maf/sandbox/egress_proxy/launch.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "said.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

/// How long a new proxy has to print its readiness line, and at most how much of its log is
/// read back for decisions (the Docker backend's bound, kProxyLogBytes).
constexpr std::chrono::seconds kReadiness{10};
constexpr std::size_t kLogBytes = std::size_t{1} << 20;
/// The most a proxy's log may hold on the host's disk (RLIMIT_FSIZE on the proxy).
constexpr rlim_t kLogCap = rlim_t{64} << 20;

/// The last `max_bytes` of a file (`cut`: there was more before them). A file whose size the
/// kernel does not report (/proc) is read from its start.
std::string read_text(const fs::path& file, std::size_t max_bytes, bool* cut = nullptr) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  const auto end = in.tellg();
  const auto size = end > 0 ? static_cast<std::size_t>(end) : 0;
  if (size == 0) {
    std::ifstream whole(file, std::ios::binary);
    std::string text(max_bytes, '\0');
    whole.read(text.data(), static_cast<std::streamsize>(max_bytes));
    text.resize(static_cast<std::size_t>(whole.gcount()));
    return text;
  }
  const std::size_t from = size > max_bytes ? size - max_bytes : 0;
  if (cut) *cut = from > 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string text(size - from, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

void write_file(const fs::path& file, const std::string& text, mode_t mode) {
  const fs::path tmp = file.string() + ".new";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw OSError(said("cannot write '") + tmp.string() + "'");
  }
  ::chmod(tmp.c_str(), mode);
  fs::rename(tmp, file);
}

/// The start time (clock ticks since boot, /proc/<pid>/stat field 22) of a running,
/// non-zombie process; nullopt when there is none.
std::optional<unsigned long long> start_time(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat", 4096);
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 2));
  std::string state;
  rest >> state;
  if (state == "Z" || state == "X") return std::nullopt;
  std::string field;
  for (int i = 4; i < 22 && rest >> field; ++i) {
  }
  unsigned long long ticks = 0;
  if (!(rest >> ticks)) return std::nullopt;
  return ticks;
}

struct Recorded {
  pid_t pid = 0;
  unsigned long long started = 0;
};

std::optional<Recorded> recorded_proxy(const fs::path& dir) {
  std::istringstream in(read_text(dir / "proxy.pid", 256));
  Recorded r;
  long long pid = 0;
  if (!(in >> pid >> r.started) || pid <= 1) return std::nullopt;
  r.pid = static_cast<pid_t>(pid);
  return r;
}

bool alive(const Recorded& r) {
  const auto now = start_time(r.pid);
  return now && *now == r.started;
}

/// A descriptor at 10 or above, close-on-exec: the child's dup2 steps onto 0-5 never
/// collide with one of ours.
int high(int fd) {
  if (fd < 0) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return moved;
}

/// A fresh listening unix socket at `<dir>/proxy.sock` (bound through /proc/self/fd, so the
/// sandbox's path may be longer than sun_path), mode 0600, owned by the guest's host identity.
Fd listen_on(const Fd& dir, const fs::path& dir_path, const Boundary& boundary) {
  ::unlinkat(dir.get(), "proxy.sock", 0);
  Fd s(high(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)));
  if (!s) throw OSError(said("socket: ") + std::strerror(errno));
  const std::string path = "/proc/self/fd/" + std::to_string(dir.get()) + "/proxy.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(s.get(), 128) != 0)
    throw OSError(said("cannot listen on '") + (dir_path / "proxy.sock").string() + "': " + std::strerror(errno));
  ::fchmodat(dir.get(), "proxy.sock", 0600, 0);
  if (boundary.run_as && ::fchownat(dir.get(), "proxy.sock", boundary.run_as->uid, boundary.run_as->gid,
                                    AT_SYMLINK_NOFOLLOW) != 0)
    throw OSError(said("cannot hand the proxy socket to uid ") + std::to_string(boundary.run_as->uid) + ": " +
                  std::strerror(errno));
  return s;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "(none)" : text;
}

/// Writes `text` (a literal) to fd 2 in a forked child: async-signal-safe.
void child_says(const char* text) {
  std::size_t n = 0;
  while (text[n]) ++n;
  [[maybe_unused]] const ssize_t w = ::write(2, text, n);
}

/// The proxy's descriptor for the credentials' values (`--credential-values`).
constexpr int kValuesFd = 5;

/// PE-10: the values reach the proxy through a pipe it inherits as kValuesFd, written whole
/// and closed before it starts: nothing of them is in its argv, its environment or any file.
/// The pipe is handed to the proxy's identity, which reopens it through /proc/self/fd (the
/// proxy reads `--credential-values PATH`, its one input for them on every backend).
Fd values_pipe(const Boundary& boundary, const EgressPolicy& policy, const CredentialValues& supply) {
  const auto names = egress_proxy::credential_names(policy.credentials_json);
  if (!supply) throw OSError(said("the sandbox's credentials need values, and none were supplied"));
  const auto values = supply();
  if (values.size() != names.size())
    throw OSError(said("the host supplied ") + std::to_string(values.size()) + " credential values for " +
                  std::to_string(names.size()) + " credentials");
  std::string text = egress_proxy::values_json(names, values);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw OSError(said("pipe: ") + std::strerror(errno));
  Fd read_end(high(fds[0])), write_end(high(fds[1]));
  const bool fits = text.size() < 60 * 1024;  // below the pipe's capacity: written before any reader
  bool written = fits;
  for (std::size_t at = 0; fits && at < text.size();) {
    const ssize_t n = ::write(write_end.get(), text.data() + at, text.size() - at);
    if (n <= 0) {
      written = false;
      break;
    }
    at += static_cast<std::size_t>(n);
  }
  std::fill(text.begin(), text.end(), '\0');
  if (!written) throw OSError(said("cannot hand the credentials' values to the proxy (over 60 KiB, or the pipe failed)"));
  if (boundary.run_as && ::fchown(read_end.get(), boundary.run_as->uid, boundary.run_as->gid) != 0)
    throw OSError(said("cannot hand the credentials' pipe to uid ") + std::to_string(boundary.run_as->uid) + ": " +
                  std::strerror(errno));
  return read_end;
}

/// Starts the proxy detached: forked twice (so it is nobody's child here and never a zombie
/// of this process), in a session of its own, with default signal handling, as the guests'
/// host identity (the uid and gid set and the groups cleared by raw syscalls between fork and
/// exec — no helper program, no shell), stdout and stderr into the egress directory, the
/// listener as fd 3 (and the credentials' pipe as kValuesFd, PE-10). Answers its pid. Between fork and exec only async-signal-safe calls.
pid_t spawn_proxy(const ProcessBackendConfig& config, const Boundary& boundary, const EgressPrograms& programs,
                  const fs::path& dir, const Fd& listener, const EgressPolicy& policy,
                  const CredentialValues& supply) {
  std::vector<std::string> args{programs.proxy, "--listen-fd", "3"};
  std::string allow;
  for (const auto& h : policy.allow) allow += (allow.empty() ? "" : ",") + h;
  if (!allow.empty()) args.insert(args.end(), {"--allow", allow});
  if (!policy.rules_json.empty()) args.insert(args.end(), {"--rules", policy.rules_json});
  Fd values;
  if (!policy.credentials_json.empty()) {
    values = values_pipe(boundary, policy, supply);
    args.insert(args.end(), {"--credentials", policy.credentials_json, "--credential-values",
                             "/proc/self/fd/" + std::to_string(kValuesFd)});
  }
  args.insert(args.end(), config.egress_proxy_args.begin(), config.egress_proxy_args.end());
  std::vector<std::string> env{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"};
  if (config.egress_upstream_ca_file) {
    const auto pem = egress_proxy::upstream_ca_pem(*config.egress_upstream_ca_file);
    if (!pem)
      throw OSError(said("egress_upstream_ca_file '") + *config.egress_upstream_ca_file +
                    "' cannot be read or holds no PEM certificate");
    // Read here: the proxy's identity may not be able to read the operator's file.
    env.push_back(std::string(egress_proxy::kUpstreamCaVariable) + "=" + *pem);
  }

  Fd null(high(::open("/dev/null", O_RDONLY | O_CLOEXEC)));
  Fd log(high(::open((dir / "proxy.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)));
  Fd err(high(::open((dir / "proxy.err").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)));
  int pipe_fds[2];
  if (!null || !log || !err || ::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw OSError(said("cannot open the proxy's log in '") + dir.string() + "': " + std::strerror(errno));
  Fd pid_read(high(pipe_fds[0])), pid_write(high(pipe_fds[1]));
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const bool drop = boundary.run_as.has_value();
  const uid_t uid = drop ? boundary.run_as->uid : 0;
  const gid_t gid = drop ? boundary.run_as->gid : 0;

  const pid_t child = ::fork();
  if (child < 0) throw OSError(said("cannot start the egress proxy: fork: ") + std::strerror(errno));
  if (child == 0) {
    ::setsid();
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    // The log grows with what the guest asks for: past kLogCap the proxy's writes fail
    // (EFBIG, SIGXFSZ ignored) and it keeps serving; only the log's tail is ever read.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGXFSZ, &ignore, nullptr);
    const struct rlimit cap {kLogCap, kLogCap};
    ::setrlimit(RLIMIT_FSIZE, &cap);
    if (::dup2(null.get(), 0) < 0 || ::dup2(log.get(), 1) < 0 || ::dup2(err.get(), 2) < 0 ||
        ::dup2(listener.get(), 3) < 0 || ::dup2(pid_write.get(), 4) < 0 ||
        (values && ::dup2(values.get(), kValuesFd) < 0))
      ::_exit(126);
    ::syscall(SYS_close_range, values ? kValuesFd + 1U : 5U, ~0U, 0U);
    // Groups first, then the gid, then the uid: after the uid no capability is left.
    if (drop && (::syscall(SYS_setgroups, 0, nullptr) != 0 || ::syscall(SYS_setresgid, gid, gid, gid) != 0 ||
                 ::syscall(SYS_setresuid, uid, uid, uid) != 0)) {
      child_says("maf-sandbox-egress-proxy: refusing to start: cannot drop to the host identity of the guests\n");
      ::_exit(126);
    }
    const pid_t proxy = ::fork();
    if (proxy < 0) ::_exit(125);
    if (proxy > 0) {
      [[maybe_unused]] const ssize_t w = ::write(4, &proxy, sizeof proxy);
      ::_exit(0);
    }
    ::close(4);
    ::execve(argv[0], argv.data(), envp.data());
    child_says("maf-sandbox-egress-proxy: refusing to start: the proxy program could not be executed\n");
    ::_exit(127);
  }
  pid_write.reset();
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  pid_t pid = 0;
  ssize_t n = 0;
  while ((n = ::read(pid_read.get(), &pid, sizeof pid)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof pid) || pid <= 1)
    throw OSError(said("egress proxy of '") + dir.parent_path().string() + "' was not started: " +
                  trimmed(read_text(dir / "proxy.err", 4096)));
  return pid;
}


/// The file this code was loaded from (the plugin, or the program it is linked into).
std::optional<fs::path> this_code_file() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&this_code_file), &info) == 0 || !info.dli_fname) return std::nullopt;
  std::error_code ec;
  fs::path p = fs::weakly_canonical(info.dli_fname, ec);
  return ec ? std::nullopt : std::optional<fs::path>(p);
}

}  // namespace

std::optional<EgressPrograms> find_egress_programs(const ProcessBackendConfig& config, std::string& why) {
  std::vector<fs::path> dirs;
  if (const auto self = this_code_file()) dirs = {self->parent_path(), self->parent_path().parent_path() / "bin"};
  auto find = [&](const std::string& configured, const char* name) -> std::optional<std::string> {
    if (!configured.empty()) {
      if (::access(configured.c_str(), X_OK) == 0) return configured;
      why += std::string(why.empty() ? "" : "; ") + "the configured " + name + " '" + configured + "' is not executable";
      return std::nullopt;
    }
    std::string looked;
    for (const auto& d : dirs) {
      const fs::path p = d / name;
      if (::access(p.c_str(), X_OK) == 0) return p.string();
      looked += (looked.empty() ? "" : ", ") + p.string();
    }
    why += std::string(why.empty() ? "" : "; ") + "no " + name + " beside the plugin (looked for " +
           (looked.empty() ? std::string("nothing: the plugin's own path is unknown") : looked) + ")";
    return std::nullopt;
  };
  auto proxy = find(config.egress_proxy_path, kProxyProgram);
  auto relay = find(config.egress_relay_path, kRelayProgram);
  if (!proxy || !relay) return std::nullopt;
  return EgressPrograms{*proxy, *relay};
}

std::optional<EgressPolicy> egress_policy_of(const SandboxSpec& spec) {
  if (spec.egress() != Egress::Allowlist || spec.egress_allow().empty()) return std::nullopt;
  EgressPolicy p;
  for (const auto& entry : spec.egress_allow())
    if (const auto* host = std::get_if<std::string>(&entry)) p.allow.push_back(*host);
  if (egress_proxy::spec_has_rules(spec)) p.rules_json = egress_proxy::rules_json(spec);
  if (!spec.attached_identity().empty()) {
    // CRED-6: new placeholders; kept only by a sandbox this policy creates (policy.json).
    std::vector<std::string> placeholders;
    try {
      for (const auto& c : spec.attached_identity()) placeholders.push_back(egress_proxy::new_placeholder(c.name()));
    } catch (const std::runtime_error& e) {
      throw OSError(said(e.what()));
    }
    p.credentials_json = egress_proxy::credentials_json(spec, placeholders);
    p.credential_env = egress_proxy::placeholder_env(spec, placeholders);
  }
  return p;
}

std::vector<std::string> egress_identity(const SandboxSpec& spec) {
  std::vector<std::string> out;
  // As egress_policy_of decides, without making placeholders only to drop them.
  if (spec.egress() != Egress::Allowlist || spec.egress_allow().empty()) return out;
  for (const auto& entry : spec.egress_allow()) out.push_back(egress_proxy::entry_identity(entry));
  for (const auto& c : spec.attached_identity()) out.push_back(egress_proxy::credential_identity(c));
  return out;
}

std::string egress_dir(const std::string& sandbox_dir) { return sandbox_dir + "/egress"; }

void write_egress_policy(const std::string& sandbox_dir, const EgressPolicy& policy, const Boundary& /*boundary*/) {
  const fs::path dir = egress_dir(sandbox_dir);
  fs::create_directories(dir);
  // Searchable (not listable) by the identity bubblewrap runs as: it binds the socket and CA.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  nlohmann::json j{{"allow", policy.allow}, {"rules", policy.rules_json}};
  if (!policy.credentials_json.empty())  // placeholders only: the values never touch a file
    j.update({{"credentials", policy.credentials_json}, {"credential_env", policy.credential_env}});
  write_file(dir / "policy.json", j.dump(), 0600);
}

std::optional<EgressPolicy> read_egress_policy(const std::string& sandbox_dir) {
  const std::string text = read_text(fs::path(egress_dir(sandbox_dir)) / "policy.json", 1 << 20);
  if (text.empty()) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(text);
    EgressPolicy p;
    p.allow = j.at("allow").get<std::vector<std::string>>();
    p.rules_json = j.at("rules").get<std::string>();
    p.credentials_json = j.value("credentials", std::string());
    if (j.contains("credential_env"))
      p.credential_env = j.at("credential_env").get<std::vector<std::pair<std::string, std::string>>>();
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw OSError(said("unreadable egress policy of '") + sandbox_dir + "': " + e.what());
  }
}

GuestEgress ensure_egress_proxy(const ProcessBackendConfig& config, const Boundary& boundary,
                                const EgressPrograms& programs, const std::string& sandbox_dir,
                                const EgressPolicy& policy, const CredentialValues& values) {
  const fs::path dir = egress_dir(sandbox_dir);
  Fd dfd(high(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)));
  if (!dfd) throw OSError(said("sandbox '") + sandbox_dir + "' has no egress directory: " + std::strerror(errno));
  Fd lock(high(::openat(dfd.get(), "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)));
  if (!lock || ::flock(lock.get(), LOCK_EX) != 0)
    throw OSError(said("cannot lock the egress directory of '") + sandbox_dir + "': " + std::strerror(errno));
  GuestEgress egress{programs.relay, (dir / "proxy.sock").string()};
  // Brokering terminates every allowed host (CRED-8), so the guest needs the CA as with rules.
  const bool terminating = !policy.rules_json.empty() || !policy.credentials_json.empty();
  egress.env = policy.credential_env;
  if (terminating) {
    egress.ca_file = (dir / "ca.pem").string();
    egress.ca_bundle = (dir / "ca-bundle.pem").string();
  }
  if (const auto r = recorded_proxy(dir); r && alive(*r)) return egress;  // kept: one per sandbox

  Fd listener = listen_on(dfd, dir, boundary);
  const pid_t pid = spawn_proxy(config, boundary, programs, dir, listener, policy, values);
  listener.reset();  // the proxy holds it now: when the proxy dies, connections are refused
  const auto started = start_time(pid);
  write_file(dir / "proxy.pid", std::to_string(pid) + " " + std::to_string(started.value_or(0)) + "\n", 0600);

  const auto deadline = std::chrono::steady_clock::now() + kReadiness;
  std::string log;
  for (;;) {
    log = read_text(dir / "proxy.log", 64 * 1024);
    if (log.find("\"listening\"") != std::string::npos) break;
    if (!started || !alive(Recorded{pid, *started})) {
      // A proxy that refused to start has exited: its own line is the reason (issue 22).
      throw OSError(said("egress proxy of '") + sandbox_dir + "' exited: " +
                    trimmed(read_text(dir / "proxy.err", 4096)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      throw OSError(said("egress proxy of '") + sandbox_dir + "' never reported `listening` within " +
                    std::to_string(kReadiness.count()) + " s; its output: " + trimmed(log) + " " +
                    trimmed(read_text(dir / "proxy.err", 4096)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (terminating) {
    // The CA is the proxy's own, made in memory; only its certificate is printed (issue 45).
    const auto ca = support::ca_certificate_in_readiness(log);
    if (!ca) {
      ::kill(pid, SIGKILL);
      throw OSError(said("egress proxy of '") + sandbox_dir +
                    "' terminates TLS (method/path rules or credentials) but printed no CA certificate in its readiness line");
    }
    std::string bundle = read_text("/etc/ssl/certs/ca-certificates.crt", 8 << 20);
    if (!bundle.empty() && bundle.back() != '\n') bundle += '\n';
    write_file(egress.ca_file, *ca, 0644);
    write_file(egress.ca_bundle, bundle + *ca, 0644);
  }
  logger()->debug("backend 'process': egress proxy {} serves {}", pid, sandbox_dir);
  return egress;
}

support::ProxyDecisions end_egress_proxy(const std::string& sandbox_dir) {
  const fs::path dir = egress_dir(sandbox_dir);
  if (const auto r = recorded_proxy(dir); r && alive(*r)) {
    // The proxy keeps nothing worth a grace period: its log is flushed per line.
    if (::kill(r->pid, SIGKILL) != 0 && errno != ESRCH)
      throw OSError(said("cannot end egress proxy ") + std::to_string(r->pid) + ": " + std::strerror(errno));
    for (int i = 0; i < 500 && alive(*r); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  bool cut = false;
  const std::string log = read_text(dir / "proxy.log", kLogBytes, &cut);
  ::unlink((dir / "proxy.sock").c_str());
  return support::parse_proxy_decisions(log, cut, 0);
}

bool egress_proxy_running(const std::string& sandbox_dir) {
  const auto r = recorded_proxy(egress_dir(sandbox_dir));
  return r && alive(*r);
}

}  // namespace maf::sandbox::process
