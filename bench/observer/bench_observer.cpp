// bench_observer [events]: the calling thread's cost of one event, emitted the way the
// router and the NVI emit it (emit() over an ObserverSet), against
//   - a no-op observer (the fan-out's own cost: the floor),
//   - the OTLP exporter with room in its queue (the copy into the queue): a fresh exporter
//     taking every event into a queue that grows to hold them (past the slots made at
//     construction), the first 2048 events of fresh exporters (the slots made at
//     construction: what a new exporter's first events cost), and a warm one (slots filled
//     and flushed once before), the steady state of a long-lived exporter,
//   - the exporter with a full queue (the drop path a dead collector leaves us on),
// interleaved in rounds so load hits all alike; then the growth of peak RSS while 100 000
// events go to an exporter whose collector is down (the queue bound holds memory flat),
// measured first, while the process is small.
// Results: bench/RESULTS.md "observer". No assertion here: numbers are recorded, not judged.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "maf/sandbox/observer.hpp"
#include "maf/sandbox/otel.hpp"

using namespace maf::sandbox;
using clock_type = std::chrono::steady_clock;

namespace {

class NoOp final : public SandboxObserver {
public:
  void on_event(const SandboxEvent&) override {}
};

/// An exec event as the NVI builds it: key, backend, kind, instance, digest.
ExecEvent sample_event() {
  ExecEvent e;
  e.context.key = SandboxKey{"tenant-a", "conversation-42", "agent-1", ""};
  e.context.backend = "process";
  e.context.kind = "script";
  e.context.instance_id = "maf-sandbox-process-0123456789ab";
  e.context.time = std::chrono::system_clock::now();
  e.argv_digest = std::string(64, 'a');
  e.exit_code = 0;
  e.stdout_bytes = 120;
  e.duration = std::chrono::milliseconds(12);
  return e;
}

/// A collector that is not there: a loopback port nothing listens on.
otel::OtlpOptions down_collector(std::size_t queue) {
  otel::OtlpOptions o;
  o.endpoint = "http://127.0.0.1:9/v1/traces";
  o.timeout = std::chrono::milliseconds(200);
  o.max_queue = queue;
  return o;
}

double thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

/// Per event: wall-clock on the calling thread (what a call waits, including time the
/// exporter's thread takes from it on a loaded machine) and that thread's own CPU time (what
/// emitting itself costs).
struct Cost {
  double wall_ns = 0;
  double cpu_ns = 0;
};

Cost ns_per_event(const ObserverSet& set, int events) {
  const ExecEvent event = sample_event();
  const double cpu_start = thread_cpu_ns();
  const auto start = clock_type::now();
  for (int i = 0; i < events; ++i) emit(&set, event);  // emit copies, as the NVI's by-value hand-off does
  const double wall = std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
  return {wall / events, (thread_cpu_ns() - cpu_start) / events};
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double median_of(const std::vector<Cost>& costs, double Cost::*field) {
  std::vector<double> v;
  for (const auto& c : costs) v.push_back(c.*field);
  return median(std::move(v));
}

}  // namespace

int main(int argc, char** argv) {
  const int events = argc > 1 ? std::atoi(argv[1]) : 100000;
  if (events <= 0) {
    std::fprintf(stderr, "usage: bench_observer [events > 0]\n");
    return 2;
  }
  // RSS first, while the process is small: the default queue (2048) in front of a collector
  // that is down, 100 000 events.
  const long before = peak_rss_kib();
  otel::OtlpStats stats;
  {
    auto exporter = std::make_shared<otel::OtlpExporter>(down_collector(2048));
    ObserverSet set({exporter});
    const ExecEvent event = sample_event();
    for (int i = 0; i < 100000; ++i) emit(&set, event);
    stats = exporter->stats();
  }
  const long after = peak_rss_kib();

  constexpr int kRounds = 5;
  std::vector<Cost> noop, room, first, warm, full;
  for (int round = 0; round < kRounds; ++round) {
    ObserverSet noop_set({std::make_shared<NoOp>()});
    noop.push_back(ns_per_event(noop_set, events));
    {
      // Room for every event: each one is copied into the queue.
      auto exporter = std::make_shared<otel::OtlpExporter>(down_collector(static_cast<std::size_t>(events) + 1));
      ObserverSet set({std::make_shared<NoOp>(), exporter});
      room.push_back(ns_per_event(set, events));
    }
    {
      // A fresh exporter's first events: 2048 each (the default queue's worth) into exporters
      // with room for 4096, so none is dropped whatever the thread does; only the emits are
      // timed, never a construction or a destruction.
      constexpr int kFirst = 2048;
      Cost sum;
      int measured = 0;
      for (int n = 0; measured < events; ++n) {
        auto exporter = std::make_shared<otel::OtlpExporter>(down_collector(2 * kFirst));
        ObserverSet set({std::make_shared<NoOp>(), exporter});
        const int batch = std::min(kFirst, events - measured);
        const Cost c = ns_per_event(set, batch);
        sum.wall_ns += c.wall_ns * batch;
        sum.cpu_ns += c.cpu_ns * batch;
        measured += batch;
      }
      first.push_back({sum.wall_ns / events, sum.cpu_ns / events});
    }
    {
      // The same with warm slots: a first pass fills them and is flushed, so the measured
      // pass copies into slots whose strings already have their buffers — the steady state
      // of a long-lived exporter.
      auto exporter = std::make_shared<otel::OtlpExporter>(down_collector(static_cast<std::size_t>(events) + 1));
      ObserverSet set({std::make_shared<NoOp>(), exporter});
      (void)ns_per_event(set, events);
      exporter->flush(std::chrono::seconds(60));
      warm.push_back(ns_per_event(set, events));
    }
    {
      // A queue of one, held by a thread stuck on a dead collector: nearly all dropped.
      auto exporter = std::make_shared<otel::OtlpExporter>(down_collector(1));
      ObserverSet set({std::make_shared<NoOp>(), exporter});
      full.push_back(ns_per_event(set, events));
    }
  }
  std::printf("| metric | value |\n|---|---|\n");
  std::printf("| events per measurement | %d (median of %d rounds) |\n", events, kRounds);
  std::printf("| no-op observer, per event | %.1f ns (thread CPU %.1f ns) |\n", median_of(noop, &Cost::wall_ns),
              median_of(noop, &Cost::cpu_ns));
  std::printf("| exporter (queue has room, growing to hold every event) + no-op, per event | %.1f ns (thread CPU %.1f ns) |\n",
              median_of(room, &Cost::wall_ns), median_of(room, &Cost::cpu_ns));
  std::printf("| exporter (fresh: its first 2048 events) + no-op, per event | %.1f ns (thread CPU %.1f ns) |\n",
              median_of(first, &Cost::wall_ns), median_of(first, &Cost::cpu_ns));
  std::printf("| exporter (queue has room, warm slots) + no-op, per event | %.1f ns (thread CPU %.1f ns) |\n",
              median_of(warm, &Cost::wall_ns), median_of(warm, &Cost::cpu_ns));
  std::printf("| exporter (queue full: dropped) + no-op, per event | %.1f ns (thread CPU %.1f ns) |\n",
              median_of(full, &Cost::wall_ns), median_of(full, &Cost::cpu_ns));
  std::printf("| collector down, 100 000 events: accepted / dropped | %llu / %llu |\n",
              static_cast<unsigned long long>(stats.events_accepted),
              static_cast<unsigned long long>(stats.events_dropped));
  std::printf("| peak RSS before / after | %ld KiB / %ld KiB (+%ld KiB) |\n", before, after, after - before);

  return 0;
}
