#pragma once
// Shared by the reliability tests (issue 15): the trial record scripts/reliability turns into
// the table of docs/reliability.md, and the host-side counts a leak check compares.

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace reliability {

/// Appends one trial — what was tried, where, and what happened — as a JSON line to
/// $MAF_RELIABILITY_RESULTS/<id>.jsonl. Unset: the test runs the same and records nothing,
/// so ctest alone needs no setup. Outcomes are short phrases from a small fixed set per
/// fault, so the script can count them.
inline void record(const std::string& id, const std::string& fault, const std::string& where,
                   const std::string& outcome) {
  const char* dir = std::getenv("MAF_RELIABILITY_RESULTS");
  if (!dir || !*dir) return;
  std::ofstream out(std::string(dir) + "/" + id + ".jsonl", std::ios::app);
  out << nlohmann::json{{"id", id}, {"fault", fault}, {"where", where}, {"outcome", outcome}}.dump() << '\n';
}

/// Entries of a /proc directory (fds, tasks), "." and ".." excluded.
inline int count_entries(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n - (dir == "/proc/self/fd" ? 1 : 0);  // the descriptor opendir itself holds
}

inline int open_fds() { return count_entries("/proc/self/fd"); }
inline int threads() { return count_entries("/proc/self/task"); }

/// Live children of this process (zombies included: an unreaped child is a leak too).
inline int child_processes() {
  const std::string me = std::to_string(::getpid());
  int n = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return -1;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so parse after the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::string state, ppid;
    std::istringstream rest(line.substr(close + 1));
    rest >> state >> ppid;
    if (ppid == me) ++n;
  }
  ::closedir(d);
  return n;
}

/// A kibibyte field of /proc/self/status (VmHWM, VmRSS); -1 when absent.
inline long status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::strtol(line.c_str() + field.size() + 1, nullptr, 10);
  return -1;
}

/// Resets VmHWM to the current resident set (Linux ≥ 4.0); false when the kernel refuses.
inline bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.close();
  return static_cast<bool>(clear);
}

}  // namespace reliability
