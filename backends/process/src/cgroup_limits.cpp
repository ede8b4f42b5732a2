#include "cgroup_limits.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
constexpr const char* kSubtree = "maf-sandbox-process";

/// This process's cgroup path for a v1 controller, or for v2 ("" controller list).
std::string own_cgroup(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string list = line.substr(a + 1, b - a - 1);
    std::stringstream names(list);
    std::string name;
    bool match = controller.empty() ? list.empty() && line.substr(0, a) == "0" : false;
    while (!controller.empty() && std::getline(names, name, ','))
      if (name == controller) match = true;
    if (match) return line.substr(b + 1);
  }
  return {};
}

bool write_file(const fs::path& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

bool has_word(const fs::path& file, const std::string& word) {
  std::ifstream in(file);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

/// mkdir that tolerates an existing directory.
bool make_dir(const fs::path& dir) { return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST; }

/// A base this process can make sandbox cgroups in: it exists (made now, or by another user
/// earlier — then it may well not be ours to write) and is writable by us.
bool usable_base(const fs::path& dir) { return make_dir(dir) && ::access(dir.c_str(), W_OK) == 0; }

}  // namespace

std::vector<std::string> CgroupLimits::bases() const {
  std::vector<std::string> out;
  for (const auto& c : controllers_) out.push_back(c.base);
  return out;
}

CgroupLimits CgroupLimits::detect(std::uint64_t pids_limit, std::uint64_t memory_limit_bytes) {
  CgroupLimits limits;
  std::vector<std::string> unbounded;
  const bool v2 = fs::exists(fs::path(kCgroupRoot) / "cgroup.controllers");
  for (const auto& [resource, limit] :
       std::vector<std::pair<std::string, std::uint64_t>>{{"pids", pids_limit}, {"memory", memory_limit_bytes}}) {
    if (limit == 0) continue;  // configured unbounded
    Controller c{resource, {}, {}, limit, v2};
    if (v2) {
      // Unified: our own cgroup must delegate the controller to a subtree we create.
      const fs::path parent = fs::path(kCgroupRoot) / fs::path(own_cgroup("")).relative_path();
      const fs::path base = parent / kSubtree;
      if (usable_base(base) && has_word(base / "cgroup.controllers", resource) &&
          (has_word(base / "cgroup.subtree_control", resource) ||
           write_file(base / "cgroup.subtree_control", "+" + resource))) {
        c.base = base.string();
        c.limit_file = resource == "pids" ? "pids.max" : "memory.max";
      }
    } else {
      const fs::path mount = fs::path(kCgroupRoot) / resource;
      const std::string own = own_cgroup(resource);
      if (fs::exists(mount / "cgroup.procs") && !own.empty()) {
        const fs::path base = mount / fs::path(own).relative_path() / kSubtree;
        if (usable_base(base)) {
          c.base = base.string();
          c.limit_file = resource == "pids" ? "pids.max" : "memory.limit_in_bytes";
        }
      }
    }
    if (c.base.empty()) unbounded.push_back(resource);
    else limits.controllers_.push_back(c);
  }
  if (!unbounded.empty()) {
    std::string list;
    for (const auto& u : unbounded) list += (list.empty() ? "" : ", ") + u;
    logger()->warn("process backend: no cgroup this process may create bounds {} of its sandboxes (cgroup {}; "
                   "{}); a guest can exhaust the host's — see docs/backends/process.md \"Resources\"",
                   list, v2 ? "v2" : "v1", ::geteuid() == 0 ? "no usable controller" : "not root, no delegation");
  }
  return limits;
}

bool CgroupLimits::bounds_pids() const noexcept {
  for (const auto& c : controllers_)
    if (c.resource == "pids") return true;
  return false;
}

bool CgroupLimits::bounds_memory() const noexcept {
  for (const auto& c : controllers_)
    if (c.resource == "memory") return true;
  return false;
}

std::string CgroupLimits::describe() const {
  std::string out;
  for (const auto& c : controllers_)
    out += (out.empty() ? "" : ", ") + c.resource + " (cgroup " + (c.v2 ? "v2" : "v1") + ")";
  return out.empty() ? "nothing" : out;
}

std::vector<std::string> CgroupLimits::prepare(const std::string& name) const {
  std::vector<std::string> dirs;
  for (const auto& c : controllers_) {
    const fs::path dir = fs::path(c.base) / name;
    if (!make_dir(dir))
      throw OSError("process backend: cannot create cgroup '" + dir.string() + "': " + std::strerror(errno));
    if (!write_file(dir / c.limit_file, std::to_string(c.limit)))
      throw OSError("process backend: cannot set " + c.limit_file + " of cgroup '" + dir.string() + "'");
    dirs.push_back(dir.string());
  }
  return dirs;
}

std::vector<std::string> cgroup_procs_files(const std::vector<std::string>& dirs) {
  std::vector<std::string> files;
  for (const auto& d : dirs) files.push_back((fs::path(d) / "cgroup.procs").string());
  return files;
}

std::vector<std::string> remove_cgroups(const std::vector<std::string>& dirs) {
  std::vector<std::string> left;
  for (const auto& dir : dirs) {
    bool removed = false;
    // The killed processes leave the cgroup as they exit; bounded, never a hang.
    for (int attempt = 0; attempt < 100 && !removed; ++attempt) {
      std::ifstream procs(fs::path(dir) / "cgroup.procs");
      if (!procs) {
        removed = true;  // already gone
        break;
      }
      pid_t pid = 0;
      while (procs >> pid) ::kill(pid, SIGKILL);
      removed = ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
      if (!removed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!removed) left.push_back(dir + ": " + std::strerror(errno));
  }
  return left;
}

}  // namespace maf::sandbox::process
