#include "bwrap.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "maf/sandbox/support/subprocess.hpp"
#include "seccomp_filter.hpp"
#include "said.hpp"

namespace maf::sandbox::process {

const std::vector<std::string>& guest_etc_files() {
  static const std::vector<std::string> files{"/etc/passwd",   "/etc/group",        "/etc/nsswitch.conf",
                                              "/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives",
                                              "/etc/ssl/certs"};
  return files;
}

std::vector<MountView> guest_read_only_views(const ProcessBackendConfig& config) {
  std::vector<MountView> views{{"/usr", "/usr"}};
  for (const auto& f : guest_etc_files())
    if (std::filesystem::exists(f)) views.push_back({f, f});
  for (const auto& b : config.extra_ro_binds) views.push_back({b.guest, b.host});
  return views;
}

std::vector<std::string> guest_virtual_dirs() { return {"/proc", "/dev"}; }

void prepare_guest_root(const GuestTree& tree, const ProcessBackendConfig& config) {
  namespace fs = std::filesystem;
  const fs::path root = tree.root_dir();
  for (const char* dir : {"usr", "proc", "dev", "tmp", "etc", "etc/ssl"}) fs::create_directories(root / dir);
  fs::permissions(root / "tmp", fs::perms::all | fs::perms::sticky_bit);
  // The guest's / is its own (it may create files there, as before): owned by the identity
  // it maps onto. Nothing in the fresh root is the guest's yet, so the name is safe.
  if (const auto& owner = tree.owner(); owner && ::chown(root.c_str(), owner->uid, owner->gid) != 0)
    throw OSError(said("cannot hand '") + root.string() + "' to uid " + std::to_string(owner->uid) + ": " +
                  std::strerror(errno));
  // Debian's merged /usr: the guest's /bin, /lib… are links into the read-only /usr.
  for (const char* link : {"bin", "sbin", "lib", "lib32", "lib64", "libx32"}) {
    const fs::path host = fs::path("/") / link;
    std::error_code ec;
    if (fs::is_symlink(host, ec)) fs::create_symlink(fs::read_symlink(host), root / link, ec);
  }
  for (const auto& view : guest_read_only_views(config)) {
    if (view.guest == "/usr") continue;
    const fs::path point = root / fs::path(view.guest).relative_path();
    fs::create_directories(point.parent_path());
    if (fs::is_directory(view.host)) {
      fs::create_directories(point);
    } else if (!fs::exists(point)) {
      std::ofstream touch(point);
    }
  }
}

const std::vector<std::string>& proc_read_only_paths() {
  // What runc/Docker make read-only: writes here reconfigure the host kernel (sysctls,
  // sysrq, interrupt affinity, PCI/USB buses, filesystem tunables).
  static const std::vector<std::string> paths{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus",
                                              "/proc/fs"};
  return paths;
}

const std::vector<std::string>& proc_masked_paths() {
  // What runc/Docker mask: kernel memory, every user's keys, kernel timers and scheduler
  // internals (addresses and side channels), firmware and device tables.
  static const std::vector<std::string> paths{"/proc/kcore",        "/proc/keys",        "/proc/key-users",
                                              "/proc/timer_list",   "/proc/timer_stats", "/proc/sched_debug",
                                              "/proc/latency_stats", "/proc/kallsyms",   "/proc/acpi",
                                              "/proc/scsi",         "/proc/asound"};
  return paths;
}

/// Only what the host's kernel has: bwrap refuses to bind a missing source or create a file
/// in procfs.
std::vector<std::string> proc_closure_args() {
  std::vector<std::string> args;
  std::error_code ec;
  for (const auto& p : proc_read_only_paths())
    if (std::filesystem::exists(p, ec)) args.insert(args.end(), {"--ro-bind", p, p});
  for (const auto& p : proc_masked_paths()) {
    if (std::filesystem::is_directory(p, ec)) args.insert(args.end(), {"--tmpfs", p, "--remount-ro", p});
    else if (std::filesystem::exists(p, ec)) args.insert(args.end(), {"--ro-bind", "/dev/null", p});
  }
  return args;
}

Launch::Launch(const ProcessBackendConfig& config, const Boundary& boundary, const std::string& root_dir,
               const std::string& working_directory, const std::string& home, const std::vector<std::string>& command,
               const std::vector<std::string>& join_cgroups, const GuestEgress* egress,
               const std::map<std::string, std::string>& environment) {
  // The cgroups are joined by the runner's child between fork and exec (issue 55): no
  // helper process, and bubblewrap and every guest process start inside the bound.
  cgroup_procs = join_cgroups;
  if (boundary.run_as) {
    // setpriv (util-linux) drops to the unprivileged identity before bwrap starts, so the
    // user namespace bwrap creates maps the guest onto it, never onto host root. Dropping
    // from root clears every capability (no keep-caps), and --clear-groups root's groups.
    argv.insert(argv.end(), {config.setpriv_path, "--reuid=" + std::to_string(boundary.run_as->uid),
                             "--regid=" + std::to_string(boundary.run_as->gid), "--clear-groups", "--"});
  }
  argv.insert(argv.end(), {config.bwrap_path, "--bind", root_dir, "/"});
  // The pieces every command shares were worked out once (Boundary); a Boundary built by
  // hand without them gets them here.
  std::vector<MountView> computed_views;
  if (boundary.views.empty()) computed_views = guest_read_only_views(config);
  for (const auto& view : boundary.views.empty() ? computed_views : boundary.views)
    argv.insert(argv.end(), {"--ro-bind", view.host, view.guest});
  argv.insert(argv.end(), {"--proc", "/proc", "--dev", "/dev"});
  if (boundary.enforced) {
    std::vector<std::string> computed_closure;
    if (boundary.proc_closure.empty()) computed_closure = proc_closure_args();
    const auto& closure = boundary.proc_closure.empty() ? computed_closure : boundary.proc_closure;
    argv.insert(argv.end(), closure.begin(), closure.end());
    int fd = boundary.sealed_seccomp ? reopen_program_fd(boundary.sealed_seccomp->get()) : -1;
    if (fd < 0) fd = seccomp_program_fd(boundary.seccomp_program);
    keep_fds.push_back(fd);
    argv.insert(argv.end(), {"--seccomp", std::to_string(fd)});
  }
  if (egress) {
    argv.insert(argv.end(), {"--ro-bind", egress->relay, kGuestRelay, "--ro-bind", egress->socket, kGuestProxySocket});
    if (!egress->ca_file.empty())
      argv.insert(argv.end(), {"--ro-bind", egress->ca_file, kGuestCaFile, "--ro-bind", egress->ca_bundle, kGuestCaBundle});
  }
  argv.insert(argv.end(), {// Namespaces: the guest is an unprivileged uid in its own user
                           // namespace, with no capabilities and no network but loopback.
                           "--unshare-user", "--uid", std::to_string(config.guest_uid), "--gid",
                           std::to_string(config.guest_gid), "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                           "--unshare-net", "--unshare-cgroup-try", "--hostname", "maf-sandbox",
                           "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
                           "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", home,
                           "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp"});
  // After --clearenv, which bubblewrap applies where it stands.
  if (egress)
    for (const auto& [name, value] : guest_egress_env(*egress)) argv.insert(argv.end(), {"--setenv", name, value});
  if (!environment.empty()) {
    // ENV-4: bubblewrap reads these `--setenv` triples, NUL-separated, from a descriptor at
    // this point of its arguments (after the base, so they override it) and closes it. On
    // its argv they would be readable in /proc/<pid>/cmdline by every host user; in its own
    // environment they would steer the host-side programs before it (LD_PRELOAD, PATH).
    std::string args;
    for (const auto& [name, value] : environment) {
      for (const std::string_view part : {std::string_view("--setenv"), std::string_view(name), std::string_view(value)}) {
        args.append(part);
        args.push_back('\0');
      }
    }
    const int fd = seccomp_program_fd(args);  // the same one-shot memfd, read to EOF
    keep_fds.push_back(fd);
    argv.insert(argv.end(), {"--args", std::to_string(fd)});
  }
  argv.insert(argv.end(), {"--chdir", working_directory, "--"});
  // The relay listens on the guest's loopback, then execs the command (egress_relay.cpp).
  if (egress) argv.insert(argv.end(), {kGuestRelay, std::to_string(kGuestProxyPort), kGuestProxySocket, "--"});
  argv.insert(argv.end(), command.begin(), command.end());
}

Launch::~Launch() {
  for (const int fd : keep_fds) ::close(fd);
}

void prepare_guest_egress_points(const GuestTree& tree) {
  namespace fs = std::filesystem;
  const fs::path root = tree.root_dir();
  for (const char* file : {kGuestRelay, kGuestProxySocket, kGuestCaFile, kGuestCaBundle}) {
    const fs::path point = root / fs::path(file).relative_path();
    fs::create_directories(point.parent_path());
    if (!fs::exists(point)) std::ofstream touch(point);
  }
}

std::vector<std::pair<std::string, std::string>> guest_egress_env(const GuestEgress& egress) {
  auto env = egress_proxy::guest_proxy_env("http://127.0.0.1:" + std::to_string(kGuestProxyPort), !egress.ca_file.empty());
  // No host is exempt from the proxy: there is no other way out of the guest's namespace.
  env.insert(env.begin() + 4, {{"NO_PROXY", ""}, {"no_proxy", ""}});
  env.insert(env.end(), egress.env.begin(), egress.env.end());  // placeholders (CRED-6), never values
  return env;
}

support::SubprocessResult run_in_scratch(const ProcessBackendConfig& config, const Boundary& boundary,
                                         const std::vector<std::string>& command, const GuestEgress* egress) {
  namespace fs = std::filesystem;
  static std::atomic<unsigned> counter{0};
  const fs::path scratch = fs::temp_directory_path() / ("maf-sandbox-probe-" + std::to_string(::getpid()) + "-" +
                                                        std::to_string(counter++));
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      try {
        remove_host_tree(path.string());
      } catch (const std::exception&) {
      }
    }
  } cleanup{scratch};
  fs::create_directories(scratch);
  GuestTree tree(scratch.string(), guest_read_only_views(config), guest_virtual_dirs(), boundary.run_as);
  prepare_guest_root(tree, config);
  if (egress) prepare_guest_egress_points(tree);
  const Launch launch(config, boundary, scratch.string(), "/", "/tmp", command, {}, egress);
  boost::asio::io_context io;
  support::SubprocessResult result;
  std::exception_ptr error;
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        support::SubprocessOptions o;
        o.argv = launch.argv;
        o.keep_fds = launch.keep_fds;
        o.cwd = "/";
        o.timeout = config.internal_timeout;
        o.max_stdout = 4096;
        o.max_stderr = 4096;
        result = co_await support::run_subprocess(std::move(o));
      },
      [&](std::exception_ptr e) { error = e; });
  io.run();
  if (error) std::rethrow_exception(error);
  return result;
}

bool probe_network_namespace(const ProcessBackendConfig& config, const Boundary& boundary) {
  // A listener on the host's loopback; the confined child tries to connect. The kernel
  // completes a connection into the backlog without accept(), so "nothing queued" after the
  // child exits means it never got through.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 4) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listener);
    return false;
  }
  const std::string port = std::to_string(ntohs(addr.sin_port));
  bool confined = false;
  try {
    // bash's /dev/tcp needs no tool beyond the shell Debian always ships. Exit 0 = reached.
    const auto result =
        run_in_scratch(config, boundary, {"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo reached"});
    const int queued = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (queued >= 0) ::close(queued);
    // Confined iff bwrap ran (its own failures exit 1 with "bwrap:" on stderr), the connect
    // failed, and nothing arrived at the host listener.
    const bool bwrap_failed = result.stderr_bytes.rfind("bwrap:", 0) == 0;
    confined = !bwrap_failed && result.exit_code != 0 && queued < 0 &&
               result.stdout_bytes.find("reached") == std::string::npos;
    if (!confined)
      logger()->warn("backend 'process': network-namespace probe did not confine (exit {}, stderr: {}); declaring no egress mode",
                     result.exit_code, result.stderr_bytes);
  } catch (const std::exception& e) {
    logger()->warn("backend 'process': network-namespace probe failed: {}; declaring no egress mode", e.what());
    confined = false;
  }
  ::close(listener);
  return confined;
}

}  // namespace maf::sandbox::process
