#pragma once
// The chrono harness the backend benchmarks share (bench/acas, bench/wslc, the memory phases
// of bench/process and bench/docker): each operation and its floor alternate within one
// process, so machine drift hits both alike, and the table reports medians and their ratio.
// Header-only and not a benchmark itself (no CMakeLists.txt here, so bench/CMakeLists.txt
// and scripts/test.d/70-bench-build do not take it for one).
#include <malloc.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "maf/sandbox.hpp"

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
  int conversations = 0;  // throughput rows: conversations per batch
};

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
    rows_.push_back({operation, median(a), median(b), floor_is});
    std::fprintf(stderr, "  %-34s ours %10.1f ms   floor %10.1f ms\n", operation.c_str(), rows_.back().ours_ms,
                 rows_.back().floor_ms);
    return rows_.back();
  }

  void print(int runs, int batches) const {
    std::printf("Median of %d runs (throughput: of %d batches), milliseconds.\n\n", runs, batches);
    std::printf("| operation | ours (ms) | floor (ms) | ratio | floor is |\n|---|---:|---:|---:|---|\n");
    for (const auto& r : rows_)
      std::printf("| %s | %s | %s | %s | %s |\n", r.operation.c_str(), fixed(r.ours_ms).c_str(),
                  fixed(r.floor_ms).c_str(), r.floor_ms > 0 ? fixed2(r.ours_ms / r.floor_ms).c_str() : "—",
                  r.floor_is.c_str());
    for (const auto& r : rows_)
      if (r.conversations > 0)
        std::printf("\n%s: %.1f conversations/s (floor %.1f/s).", r.operation.c_str(), r.conversations / r.ours_ms * 1e3,
                    r.conversations / r.floor_ms * 1e3);
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
