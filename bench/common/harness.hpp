#pragma once
// The chrono harness the backend benchmarks share (bench/acas, bench/wslc, the memory phases
// of bench/process and bench/docker): each operation and its floor alternate within one
// process, so machine drift hits both alike, and the table reports medians and their ratio.
// Header-only and not a benchmark itself (no CMakeLists.txt here, so bench/CMakeLists.txt
// and scripts/test.d/70-bench-build do not take it for one).
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "maf/sandbox/async.hpp"

extern char** environ;

namespace maf_bench {

using Clock = std::chrono::steady_clock;

inline double millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Milliseconds `f` took.
template <class F>
double timed(F&& f) {
  const auto start = Clock::now();
  f();
  return millis(Clock::now() - start);
}

inline void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

/// Keeps nothing: collect_outputs is measured, not the host's storage.
class DiscardingSink final : public maf::sandbox::OutputSink {
public:
  boost::asio::awaitable<maf::sandbox::LandedArtifact> deliver(maf::sandbox::Artifact artifact) override {
    co_return maf::sandbox::LandedArtifact{artifact.name, artifact.name, std::nullopt};
  }
};

struct Row {
  std::string operation;
  double ours_ms;
  double floor_ms;
  std::string floor_is;
  int runs = 0;           // how many times each side ran (throughput rows: batches)
  int conversations = 0;  // throughput rows: conversations per batch
};

/// Batches per throughput row: $MAF_BENCH_THROUGHPUT_BATCHES, else 3 — and 1 for 32 or more
/// conversations, which on a shared two-core engine take minutes per batch (RESULTS.md).
inline int throughput_batches(int conversations) {
  if (const char* v = std::getenv("MAF_BENCH_THROUGHPUT_BATCHES"); v && std::atoi(v) > 0) return std::atoi(v);
  return conversations >= 32 ? 1 : 3;
}

/// Rows of one benchmark, printed as the markdown table scripts/bench puts into RESULTS.md.
class Table {
public:
  /// Runs `ours` and `floor` alternately `runs` times; each returns the milliseconds of its
  /// timed part (set-up and tear-down stay outside).
  Row& measure(const std::string& operation, const std::string& floor_is, int runs, const std::function<double()>& ours,
               const std::function<double()>& floor) {
    std::vector<double> a, b;
    for (int i = 0; i < runs; ++i) {
      a.push_back(ours());
      b.push_back(floor());
    }
    rows_.push_back({operation, median(a), median(b), floor_is, runs});
    std::fprintf(stderr, "  %-34s ours %10.1f ms   floor %10.1f ms\n", operation.c_str(), rows_.back().ours_ms,
                 rows_.back().floor_ms);
    return rows_.back();
  }

  void print(int runs) const {
    std::printf("Median of %d runs (throughput: of the batches named below the table), milliseconds.\n\n", runs);
    std::printf("| operation | ours (ms) | floor (ms) | ratio | floor is |\n|---|---:|---:|---:|---|\n");
    for (const auto& r : rows_)
      std::printf("| %s | %s | %s | %s | %s |\n", r.operation.c_str(), fixed(r.ours_ms).c_str(),
                  fixed(r.floor_ms).c_str(), r.floor_ms > 0 ? fixed2(r.ours_ms / r.floor_ms).c_str() : "—",
                  r.floor_is.c_str());
    for (const auto& r : rows_)
      if (r.conversations > 0)
        std::printf("\n%s: %.2f conversations/s (floor %.2f/s); median of %d batch%s.", r.operation.c_str(),
                    r.conversations / r.ours_ms * 1e3, r.conversations / r.floor_ms * 1e3, r.runs, r.runs == 1 ? "" : "es");
    std::printf("\n");
  }

private:
  static std::string fixed(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : v >= 1 ? "%.1f" : "%.2f", v);
    return buf;
  }
  static std::string fixed2(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
  }
  std::vector<Row> rows_;
};

/// `program` (searched on PATH) with `args` (argv[1..]), spawned bare and waited for — the
/// floors' way to run a CLI, safe from any thread: `stdin_bytes` on its stdin (a pipe; when
/// empty, /dev/null), stdout and stderr discarded, run from `cwd` when given. Returns the
/// exit status (-1: killed by a signal).
inline int spawn_and_wait(const std::string& program, const std::vector<std::string>& args,
                          const std::string& stdin_bytes = {}, const std::string& cwd = {}) {
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int in[2] = {-1, -1};
  const bool feeds = !stdin_bytes.empty();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (feeds) {
    require(::pipe2(in, O_CLOEXEC) == 0, "pipe2");
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (feeds) {
    ::close(in[0]);
    for (std::size_t at = 0; rc == 0 && at < stdin_bytes.size();) {
      const ssize_t n = ::write(in[1], stdin_bytes.data() + at, stdin_bytes.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    ::close(in[1]);
  }
  require(rc == 0, "cannot spawn " + program);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---- cleanup, also when interrupted ----------------------------------------------------

/// The engine resources a benchmark makes carry labels it knows; `filter` is one docker
/// `--filter` argument selecting them (e.g. `label=wslc-shim.session=wslc-bench-42`).
/// Appended to $MAF_BENCH_SWEEP_FILE when set, so scripts/bench can remove what is left by
/// label once the benchmark has ended, whatever its exit status (even after a SIGKILL).
inline void announce_sweep(const std::string& filter) {
  if (const char* file = std::getenv("MAF_BENCH_SWEEP_FILE"); file && *file) std::ofstream(file, std::ios::app) << filter << "\n";
}

/// Removes every container and network `filter` selects, through the docker CLI
/// ($MAF_SANDBOX_DOCKER, else `docker`). Filters are label/name selectors the benchmark
/// made itself (no shell metacharacters).
inline void sweep_engine(const std::string& filter) {
  const char* client = std::getenv("MAF_SANDBOX_DOCKER");
  const std::string docker = client && *client ? client : "docker";
  const std::string f = "'" + filter + "'";
  const std::string cmd = docker + " ps -aq --filter " + f + " | xargs -r " + docker + " rm -f >/dev/null 2>&1; " +
                          docker + " network ls -q --filter " + f + " | xargs -r " + docker +
                          " network rm >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "sweeping %s failed\n", filter.c_str());
}

/// On SIGINT, SIGTERM or SIGHUP runs `cleanup` once (on its own thread: the handler only
/// writes the signal to a pipe) and exits with 128 + the signal, so an interrupted or
/// timed-out benchmark removes what it made instead of leaking it. Install it first thing in
/// main, before anything is created; `cleanup` must not need the interrupted thread.
inline void on_interrupt(std::function<void()> cleanup) {
  static int fds[2] = {-1, -1};
  static std::function<void()> stored;
  stored = std::move(cleanup);
  if (fds[0] >= 0) return;
  require(::pipe2(fds, O_CLOEXEC) == 0, "pipe2");
  struct sigaction sa {};
  sa.sa_handler = [](int sig) {
    const unsigned char b = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(fds[1], &b, 1);
  };
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  std::thread([] {
    unsigned char sig = 0;
    while (::read(fds[0], &sig, 1) < 0 && errno == EINTR) {
    }
    std::fprintf(stderr, "\ninterrupted (signal %d): cleaning up\n", sig);
    try {
      if (stored) stored();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cleanup failed: %s\n", e.what());
    }
    ::_exit(128 + sig);
  }).detach();
}

/// For a benchmark whose every engine resource `filter` selects: announces it to scripts/bench
/// and, when interrupted, sweeps it — twice, 2 s apart, as a call in flight when the signal
/// came may still make one.
inline void sweep_on_interrupt(const std::string& filter) {
  announce_sweep(filter);
  on_interrupt([filter] {
    sweep_engine(filter);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    sweep_engine(filter);
  });
}

// ---- memory -----------------------------------------------------------------------------

inline long status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return std::strtol(line.c_str() + prefix.size(), nullptr, 10);
  return -1;
}

/// Returns the idle resident set after resetting the high-water mark (VmHWM) to it; -1 when
/// the kernel refuses the reset (then VmHWM would mean the whole run's peak).
inline long reset_peak() {
  ::malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.close();
  if (!clear) return -1;
  return status_kib("VmRSS");
}

struct MemoryRow {
  std::string phase;
  long payload_kib;
  long idle_kib;
  long peak_kib;
};

/// Runs `phase` between a reset of the high-water mark and a reading of it.
inline MemoryRow memory_phase(const std::string& name, std::size_t payload_bytes, const std::function<void()>& phase) {
  const long idle = reset_peak();
  phase();
  return {name, static_cast<long>(payload_bytes >> 10), idle, status_kib("VmHWM")};
}

inline void print_memory(const std::vector<MemoryRow>& rows) {
  std::printf("\nPeak resident set above the idle baseline (VmHWM reset per phase; target ≤ 2× payload):\n\n");
  std::printf("| phase | payload (MiB) | idle RSS (MiB) | peak above idle (MiB) | × payload |\n|---|---:|---:|---:|---:|\n");
  for (const auto& m : rows) {
    if (m.idle_kib < 0) {
      std::printf("| %s | %.0f | n/a | n/a (clear_refs refused) | n/a |\n", m.phase.c_str(), m.payload_kib / 1024.0);
      continue;
    }
    const double above = (m.peak_kib - m.idle_kib) / 1024.0;
    std::printf("| %s | %.0f | %.1f | %.1f | %.2f |\n", m.phase.c_str(), m.payload_kib / 1024.0, m.idle_kib / 1024.0,
                above, above / (m.payload_kib / 1024.0));
  }
}

}  // namespace maf_bench
