#include "freezer.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cgroup_limits.hpp"
#include "maf/sandbox/errors.hpp"
#include "process_sandbox.hpp"
#include "said.hpp"

namespace maf::sandbox::process {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFreezerSubtree = "maf-sandbox-process-freezer";

bool write_value(const fs::path& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

std::string read_all(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The pids whose root directory is `root_dir` (the guests of one sandbox).
std::set<pid_t> guest_pids(const std::string& root_dir) {
  std::set<pid_t> out;
  struct stat root {};
  if (::stat(root_dir.c_str(), &root) != 0) return out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (dirent* e = ::readdir(proc)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    struct stat st {};
    const std::string link = std::string("/proc/") + e->d_name + "/root";
    if (::stat(link.c_str(), &st) == 0 && st.st_dev == root.st_dev && st.st_ino == root.st_ino)
      out.insert(static_cast<pid_t>(std::stol(e->d_name)));
  }
  ::closedir(proc);
  return out;
}

std::set<pid_t> members(const fs::path& cgroup) {
  std::set<pid_t> out;
  std::ifstream in(cgroup / "cgroup.procs");
  long pid = 0;
  while (in >> pid) out.insert(static_cast<pid_t>(pid));
  return out;
}

bool frozen(const fs::path& cgroup, bool v2) {
  if (v2) return read_all(cgroup / "cgroup.events").find("frozen 1") != std::string::npos;
  return read_all(cgroup / "freezer.state").rfind("FROZEN", 0) == 0;
}

bool set_frozen(const fs::path& cgroup, bool v2, bool on) {
  return v2 ? write_value(cgroup / "cgroup.freeze", on ? "1" : "0")
            : write_value(cgroup / "freezer.state", on ? "FROZEN" : "THAWED");
}

/// Waits (bounded) for the kernel to report the cgroup frozen: v1 passes through FREEZING.
bool settle_frozen(const fs::path& cgroup, bool v2) {
  for (int i = 0; i < 200; ++i) {
    if (frozen(cgroup, v2)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

fs::path recorded(const fs::path& sandbox_dir) {
  std::ifstream in(sandbox_dir / "freezer");
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::optional<Freezer> Freezer::detect(const fs::path& cgroup_root, std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<Freezer> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  Freezer f;
  if (fs::exists(cgroup_root / "freezer" / "cgroup.procs")) {
    const std::string own = own_cgroup("freezer");
    if (own.empty()) return refuse("this process is in no v1 freezer cgroup");
    f.base_ = (cgroup_root / "freezer" / fs::path(own).relative_path() / kFreezerSubtree).string();
  } else if (fs::exists(cgroup_root / "cgroup.controllers")) {
    f.v2_ = true;
    f.base_ = (cgroup_root / fs::path(own_cgroup("")).relative_path() / kFreezerSubtree).string();
  } else {
    return refuse("no v1 freezer hierarchy and no v2 tree at '" + cgroup_root.string() + "'");
  }
  if (::mkdir(f.base_.c_str(), 0755) != 0 && errno != EEXIST)
    return refuse("cannot create '" + f.base_ + "': " + std::strerror(errno));
  // Detect, don't assume: a probe cgroup must freeze and thaw.
  const fs::path probe = fs::path(f.base_) / (".probe-" + std::to_string(::getpid()));
  if (::mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST)
    return refuse("cannot create a cgroup in '" + f.base_ + "': " + std::strerror(errno));
  const bool ok = set_frozen(probe, f.v2_, true) && settle_frozen(probe, f.v2_) && set_frozen(probe, f.v2_, false);
  ::rmdir(probe.c_str());
  if (!ok) return refuse("cannot freeze a cgroup in '" + f.base_ + "'");
  return f;
}

std::string Freezer::describe() const { return v2_ ? "cgroup.freeze (cgroup v2)" : "freezer (cgroup v1)"; }

void Freezer::freeze(const std::string& sandbox_dir) const {
  fs::path cgroup = fs::path(base_) / fs::path(sandbox_dir).filename();
  // v2 has one hierarchy: a guest moved out of the sandbox's own cgroup would leave its
  // bounds (LIM-5), so where the sandbox has one, that cgroup is the one frozen.
  if (v2_)
    for (const auto& dir : recorded_cgroups(sandbox_dir))
      if (fs::exists(fs::path(dir) / "cgroup.freeze")) {
        cgroup = dir;
        break;
      }
  if (::mkdir(cgroup.c_str(), 0755) != 0 && errno != EEXIST)
    throw OSError(said("cannot create the freezer cgroup '") + cgroup.string() + "': " + std::strerror(errno));
  if (recorded(sandbox_dir).empty() && !write_value(fs::path(sandbox_dir) / "freezer", cgroup.string() + "\n"))
    throw OSError(said("cannot record the freezer cgroup in '") + sandbox_dir + "'");
  if (!set_frozen(cgroup, v2_, true))
    throw OSError(said("cannot freeze '") + cgroup.string() + "'");
  // Move every guest in; one joining a frozen cgroup is frozen as it joins. Repeat until a
  // scan finds none outside: what a guest forked before it was moved is caught by the next.
  for (int round = 0; round < 50; ++round) {
    const std::set<pid_t> inside = members(cgroup);
    bool moved = false;
    for (pid_t pid : guest_pids(fs::path(sandbox_dir) / "root"))
      if (!inside.count(pid)) {
        // A guest that exited since the scan is not an error.
        if (!write_value(cgroup / "cgroup.procs", std::to_string(pid)) && ::kill(pid, 0) == 0)
          throw OSError(said("cannot move guest process ") + std::to_string(pid) + " into '" + cgroup.string() + "'");
        moved = true;
      }
    if (!moved) break;
  }
  if (!settle_frozen(cgroup, v2_)) throw OSError(said("'") + cgroup.string() + "' did not report frozen");
}

void Freezer::thaw(const std::string& sandbox_dir) const {
  const fs::path cgroup = recorded(sandbox_dir);
  if (cgroup.empty()) return;
  if (!set_frozen(cgroup, v2_, false)) throw OSError(said("cannot thaw '") + cgroup.string() + "'");
}

void release_freezer(const fs::path& sandbox_dir) noexcept {
  try {
    const fs::path cgroup = recorded(sandbox_dir);
    if (cgroup.empty()) return;
    const bool v2 = fs::exists(cgroup / "cgroup.freeze");
    set_frozen(cgroup, v2, false);
    // The killed guests leave as they thaw; rmdir succeeds once the last is gone.
    for (int i = 0; i < 200 && ::rmdir(cgroup.c_str()) != 0 && errno == EBUSY; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } catch (...) {
  }
}

}  // namespace maf::sandbox::process
