#include "host_boundary.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "bwrap.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "seccomp_filter.hpp"
#include "said.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

/// The kernel's seccomp support, from this process's own status (no message parsing).
bool kernel_has_seccomp() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("Seccomp:", 0) == 0) return true;
  return false;
}

/// "key=value" lines the verification command prints.
std::string field(const std::string& text, const std::string& key) {
  const auto at = text.find(key + "=");
  if (at == std::string::npos) return {};
  const auto start = at + key.size() + 1;
  return text.substr(start, text.find('\n', start) - start);
}

// What the guest itself sees: its uid, the uid the kernel's own /proc/sys (owned by global
// root) shows as owner — equal iff the guest *is* host root, however many user namespaces
// lie between (bubblewrap nests two, so /proc/self/uid_map only shows the inner one) — and
// its seccomp mode.
constexpr const char* kVerify =
    "set -- $(ls -lnd /proc/sys/kernel) && echo \"kernel_owner=$3\"; "
    "while read key real effective rest; do [ \"$key\" = Uid: ] && echo \"uid=$effective\"; "
    "[ \"$key\" = Seccomp: ] && echo \"seccomp=$real\"; done < /proc/self/status; :";

}  // namespace

Boundary establish_boundary(const ProcessBackendConfig& config) {
  if (config.test_only_without_host_boundary) {
    if (!config.test_only_allow_unsafe)
      throw ValueError(said("test_only_without_host_boundary builds a backend WITHOUT its host "
                            "boundary (guest may be host root, /proc/sys writable, no seccomp); it is for conformance "
                            "self-tests only and needs test_only_allow_unsafe=true as well"));
    logger()->warn("backend 'process': TEST-ONLY double without its host boundary; never use it outside a test");
    return Boundary{false, std::nullopt, {}, {}};
  }
  Boundary b;
  if (::geteuid() == 0) {
    if (config.host_uid == 0 || config.host_gid == 0)
      throw ValueError(said("host_uid and host_gid must not be 0 (the guest would map onto host root)"));
    b.run_as = HostIdentity{static_cast<uid_t>(config.host_uid), static_cast<gid_t>(config.host_gid)};
  }
  if (!kernel_has_seccomp())
    throw SandboxBoundaryUnavailable(said("this kernel has no seccomp (no 'Seccomp:' in "
                                          "/proc/self/status); the os_process boundary needs a seccomp filter"));
  try {
    b.seccomp_program = compile_seccomp_program();
  } catch (const std::exception& e) {
    throw SandboxBoundaryUnavailable(std::string(said("no seccomp filter: ")) + e.what());
  }
  support::SubprocessResult r;
  try {
    r = run_in_scratch(config, b, {"sh", "-c", kVerify});
  } catch (const std::exception& e) {
    throw SandboxBoundaryUnavailable(std::string(said("cannot run bubblewrap to verify the boundary: ")) +
                                     e.what());
  }
  const std::string kernel_owner = field(r.stdout_bytes, "kernel_owner");
  const std::string uid = field(r.stdout_bytes, "uid");
  const std::string seccomp = field(r.stdout_bytes, "seccomp");
  if (r.exit_code != 0 || kernel_owner.empty() || uid.empty())
    throw SandboxBoundaryUnavailable(
        said("bubblewrap could not start a guest in its own user namespace") +
        std::string(b.run_as ? " as uid " + std::to_string(b.run_as->uid) : std::string()) +
        " (unprivileged user namespaces disabled? setpriv missing?): exit " + std::to_string(r.exit_code) + ", " +
        r.stderr_bytes);
  if (kernel_owner == uid)
    throw SandboxBoundaryUnavailable(said("the guest's uid ") + uid +
                                     " maps onto host uid 0 (it owns the kernel's /proc/sys); refusing to serve a "
                                     "guest that is host root");
  if (seccomp != "2")
    throw SandboxBoundaryUnavailable(said("the guest runs without the seccomp filter (Seccomp: '") +
                                     seccomp + "'); bubblewrap did not install it");
  return b;
}

void check_root(const ProcessBackendConfig& config, const Boundary& boundary) {
  const fs::path& root = config.root;
  const std::string name = said("root '") + root.string() + "'";
  std::error_code ec;
  if (!fs::exists(root, ec)) {
    fs::create_directories(root, ec);
    if (ec) throw SandboxStateRootUnusable(name + " cannot be created: " + ec.message());
    // Nobody else lists the sandboxes; bubblewrap as host_uid (root host) may pass through.
    const auto searchable = boundary.run_as ? fs::perms::group_exec | fs::perms::others_exec : fs::perms::none;
    fs::permissions(root, fs::perms::owner_all | searchable, ec);
    if (ec) throw SandboxStateRootUnusable(name + " cannot be restricted to its owner: " + ec.message());
  }
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) throw SandboxStateRootUnusable(name + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw SandboxStateRootUnusable(name + " is not a directory");
  if (st.st_uid != ::geteuid())
    throw SandboxStateRootUnusable(name + " is owned by uid " + std::to_string(st.st_uid) + ", not this user (uid " +
                              std::to_string(::geteuid()) + "): its owner could read and plant sandboxes; "
                              "configure a root of your own");
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    throw SandboxStateRootUnusable(name + " is writable by group or others: anyone could plant or replace sandboxes");
  if (!boundary.run_as) return;
  // bubblewrap runs as host_uid and binds the guest root by path, so every directory on the
  // way must be searchable by it. The root itself is ours to open (search only, no listing).
  if (!(st.st_mode & S_IXOTH) && ::chmod(root.c_str(), (st.st_mode & 07777) | S_IXOTH) != 0)
    throw SandboxStateRootUnusable(name + ": cannot make it searchable: " + std::strerror(errno));
  for (fs::path p = root.parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat a {};
    if (::stat(p.c_str(), &a) != 0) throw SandboxStateRootUnusable(name + ": '" + p.string() + "': " + std::strerror(errno));
    const bool searchable = a.st_uid == boundary.run_as->uid   ? (a.st_mode & S_IXUSR)
                            : a.st_gid == boundary.run_as->gid ? (a.st_mode & S_IXGRP)
                                                               : (a.st_mode & S_IXOTH);
    if (!searchable)
      throw SandboxStateRootUnusable(name + ": its ancestor '" + p.string() + "' cannot be searched by host_uid " +
                                std::to_string(boundary.run_as->uid) +
                                ", which bubblewrap runs as (chmod o+x it, or choose another root)");
    if (p == p.root_path()) break;
  }
}

}  // namespace maf::sandbox::process
