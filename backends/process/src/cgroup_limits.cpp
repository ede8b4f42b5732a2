#include "cgroup_limits.hpp"

#include <fcntl.h>
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
#include <tuple>

#include <spdlog/spdlog.h>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/logging.hpp"
#include "said.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSubtree = "maf-sandbox-process";

}  // namespace

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

namespace {

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

std::vector<std::pair<std::string, std::string>> CgroupLimits::limit_writes(const Controller& c,
                                                                            const ResourceLimits& asked) const {
  if (c.resource == "pids") {
    const std::uint64_t n = asked.processes() ? static_cast<std::uint64_t>(*asked.processes()) : c.default_limit;
    return {{"pids.max", n ? std::to_string(n) : "max"}};
  }
  if (c.resource == "memory") {
    const std::uint64_t n = asked.memory_bytes() ? static_cast<std::uint64_t>(*asked.memory_bytes()) : c.default_limit;
    if (c.v2) return {{"memory.max", n ? std::to_string(n) : "max"}};
    return {{"memory.limit_in_bytes", n ? std::to_string(n) : "-1"}};
  }
  // cpu: a quota of CPU time per period (100 ms), the share `cpus` of one CPU times cpus.
  constexpr std::int64_t kPeriodUs = 100000;
  const std::optional<std::int64_t> quota =
      asked.cpus() ? std::optional<std::int64_t>(static_cast<std::int64_t>(*asked.cpus() * kPeriodUs)) : std::nullopt;
  if (c.v2) return {{"cpu.max", (quota ? std::to_string(*quota) : "max") + " " + std::to_string(kPeriodUs)}};
  return {{"cpu.cfs_period_us", std::to_string(kPeriodUs)}, {"cpu.cfs_quota_us", quota ? std::to_string(*quota) : "-1"}};
}

CgroupLimits CgroupLimits::detect(const std::filesystem::path& cgroup_root, std::uint64_t pids_limit,
                                  std::uint64_t memory_limit_bytes) {
  CgroupLimits limits;
  const bool v2 = fs::exists(cgroup_root / "cgroup.controllers");
  const std::vector<std::pair<std::string, std::uint64_t>> wanted{
      {"pids", pids_limit}, {"memory", memory_limit_bytes}, {"cpu", 0}};
  for (const auto& [resource, limit] : wanted) {
    Controller c{resource, {}, limit, v2};
    std::string why;
    fs::path base;
    if (v2) {
      // Unified: our own cgroup must delegate the controller to a subtree we create.
      base = cgroup_root / fs::path(own_cgroup("")).relative_path() / kSubtree;
      if (!usable_base(base)) why = "cannot create '" + base.string() + "'";
      else if (!has_word(base / "cgroup.controllers", resource)) why = "not delegated to '" + base.string() + "'";
      else if (!has_word(base / "cgroup.subtree_control", resource) &&
               !write_file(base / "cgroup.subtree_control", "+" + resource))
        why = "cannot enable it in '" + (base / "cgroup.subtree_control").string() + "'";
    } else {
      const fs::path mount = cgroup_root / resource;
      const std::string own = own_cgroup(resource);
      base = mount / fs::path(own).relative_path() / kSubtree;
      if (!fs::exists(mount / "cgroup.procs") || own.empty()) why = "no v1 hierarchy at '" + mount.string() + "'";
      else if (!usable_base(base)) why = "cannot create '" + base.string() + "'";
    }
    if (why.empty()) {
      // Detect, don't assume: a probe cgroup must take this controller's limit files.
      c.base = base.string();
      const fs::path probe = base / (".probe-" + std::to_string(::getpid()));
      if (!make_dir(probe)) {
        why = "cannot create a cgroup in '" + base.string() + "': " + std::strerror(errno);
      } else {
        for (const auto& [file, value] : limits.limit_writes(c, ResourceLimits{}))
          if (why.empty() && !write_file(probe / file, value)) why = "cannot write " + file + " in '" + base.string() + "'";
        ::rmdir(probe.c_str());
      }
    }
    if (why.empty()) limits.controllers_.push_back(c);
    else limits.unusable_.push_back(resource + " (cgroup " + (v2 ? "v2" : "v1") + "): " + why);
  }
  if (!limits.unusable_.empty()) {
    std::string list;
    for (const auto& u : limits.unusable_) list += (list.empty() ? "" : "; ") + u;
    logger()->warn("backend 'process': cannot bound these resources of its sandboxes ({}): {}; those bounds are not "
                   "declared and a guest can exhaust the host's — see docs/backends/process.md \"Resources\"",
                   ::geteuid() == 0 ? "root" : "not root, no delegation", list);
  }
  return limits;
}

ResourceBoundSet CgroupLimits::enforceable() const noexcept {
  ResourceBoundSet out;
  for (const auto& c : controllers_)
    out.insert(c.resource == "pids" ? ResourceBound::Processes
               : c.resource == "memory" ? ResourceBound::Memory
                                        : ResourceBound::Cpus);
  return out;
}

std::string CgroupLimits::describe() const {
  std::string out;
  for (const auto& c : controllers_)
    out += (out.empty() ? "" : ", ") + c.resource + " (cgroup " + (c.v2 ? "v2" : "v1") + ")";
  return out.empty() ? "nothing" : out;
}

std::vector<std::string> CgroupLimits::prepare(const std::string& name, const ResourceLimits& asked) const {
  std::vector<std::string> dirs;
  for (const auto& c : controllers_) {
    const fs::path dir = fs::path(c.base) / name;
    if (!make_dir(dir))
      throw OSError(said("cannot create cgroup '") + dir.string() + "': " + std::strerror(errno));
    for (const auto& [file, value] : limit_writes(c, asked))
      if (!write_file(dir / file, value))
        throw OSError(said("cannot set ") + file + " = " + value + " in cgroup '" + dir.string() + "'");
    dirs.push_back(dir.string());
  }
  return dirs;
}

namespace {

/// The value after `key` in a flat-keyed file ("oom_kill 3", "max 7"); 0 when absent.
std::uint64_t keyed_counter(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

}  // namespace

CgroupEvents read_cgroup_events(const std::vector<std::string>& dirs) {
  CgroupEvents e;
  for (const auto& d : dirs) {
    const fs::path dir(d);
    e.oom_kills += keyed_counter(dir / "memory.oom_control", "oom_kill") + keyed_counter(dir / "memory.events", "oom_kill");
    e.fork_refusals += keyed_counter(dir / "pids.events", "max");
  }
  return e;
}

std::vector<CgroupEventFile> cgroup_event_files(const std::vector<std::string>& dirs) {
  std::vector<CgroupEventFile> out;
  for (const auto& d : dirs) {
    const fs::path dir(d);
    for (const auto& [file, key, oom] : {std::tuple{"memory.oom_control", "oom_kill", true},
                                         std::tuple{"memory.events", "oom_kill", true},
                                         std::tuple{"pids.events", "max", false}})
      if (::access((dir / file).c_str(), R_OK) == 0) out.push_back({(dir / file).string(), key, oom});
  }
  return out;
}

CgroupEvents read_cgroup_events(const std::vector<CgroupEventFile>& files) {
  CgroupEvents e;
  for (const auto& f : files) {
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    std::istringstream in(std::string(buf, static_cast<std::size_t>(n)));
    std::string k;
    std::uint64_t v = 0;
    while (in >> k >> v)
      if (k == f.key) {
        (f.oom ? e.oom_kills : e.fork_refusals) += v;
        break;
      }
  }
  return e;
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
