// Issue 49 (item 7): what a warm pool and a snapshot buy against a cold acquire, on the
// process backend and on Docker, in one run on one machine (ratios within the run).
// Usage: bench_snapshots [runs] (default 7). Markdown on stdout, progress on stderr.
//   - first command: acquire (a new key) + exec `true` + dispose, cold and from a pool
//     (process; Docker has no pool yet), p50 and p99;
//   - snapshot, restore, fork of a work tree of 1 MiB and 100 MiB, each beside the cold
//     acquire measured in the same run (the ratio the issue sets: restore, fork ≤ 0.3×);
//   - pause + resume round trip;
//   - claims per second sustained for ~5 s with a pool of 4 refilling (process).
// The environment variable MAF_BENCH_SNAPSHOTS_DOCKER=0 skips Docker.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/pool.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sandbox.hpp"
#include "maf/sandbox/sync.hpp"

namespace {

using namespace maf::sandbox;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

struct Subject {
  std::string name;
  std::shared_ptr<SandboxBackend> backend;
  SandboxSpec spec;
  std::string scope;
  BlockingRunner& run;
  int serial = 0;

  SandboxKey key(const std::string& agent) const { return SandboxKey{scope, "bench", agent, ""}; }
  std::shared_ptr<Sandbox> acquire(const SandboxKey& k) { return run([&] { return backend->acquire(k, spec); }); }
  void dispose(const SandboxKey& k) { run([&] { return backend->dispose(k, std::nullopt, std::nullopt); }); }
  void sh(Sandbox& sb, const std::string& line) {
    auto r = run([&] { return sb.exec(Command(line)); });
    if (r.exit_code != 0) throw std::runtime_error(name + ": '" + line + "' failed: " + r.stderr_text());
  }
};

void row(const std::string& backend, const std::string& op, const std::vector<double>& v, double cold_p50) {
  const double p50 = pct(v, 0.5);
  std::printf("| %s | %s | %.1f | %.1f | %s |\n", backend.c_str(), op.c_str(), p50, pct(v, 0.99),
              cold_p50 > 0 ? (std::to_string(p50 / cold_p50).substr(0, 4) + "×").c_str() : "—");
  std::fflush(stdout);
}

/// acquire (new key) + exec true + dispose, `runs` times.
std::vector<double> first_command(Subject& s, int runs, const std::string& tag) {
  std::vector<double> out;
  for (int i = 0; i < runs; ++i) {
    const auto k = s.key(tag + std::to_string(s.serial++));
    const auto t = Clock::now();
    auto sb = s.acquire(k);
    s.sh(*sb, "true");
    s.dispose(k);
    out.push_back(ms_since(t));
  }
  return out;
}

std::vector<double> cold_acquire(Subject& s, int runs) {
  std::vector<double> out;
  for (int i = 0; i < runs; ++i) {
    const auto k = s.key("cold" + std::to_string(s.serial++));
    const auto t = Clock::now();
    s.acquire(k);
    out.push_back(ms_since(t));
    s.dispose(k);
  }
  return out;
}

void snapshot_rows(Subject& s, int runs, int mib, double cold_p50) {
  const auto k = s.key("tree" + std::to_string(mib));
  auto sb = s.acquire(k);
  s.sh(*sb, "mkdir -p tree && i=0; while [ $i -lt " + std::to_string(mib) +
                " ]; do dd if=/dev/urandom of=tree/f$i bs=1048576 count=1 2>/dev/null || exit 1; i=$((i+1)); done");
  std::vector<double> snap, restore, fork;
  for (int i = 0; i < runs; ++i) {
    auto t = Clock::now();
    const SnapshotInfo info = s.run([&] { return sb->snapshot(); });
    snap.push_back(ms_since(t));
    s.sh(*sb, "echo later > tree/later");
    t = Clock::now();
    s.run([&] { return sb->restore(info.id); });
    restore.push_back(ms_since(t));
    const auto fk = s.key("fork" + std::to_string(s.serial++));
    t = Clock::now();
    s.run([&] { return s.backend->fork(sb, info.id, fk, s.spec); });
    fork.push_back(ms_since(t));
    s.dispose(fk);
    s.run([&] { return sb->release_snapshot(info.id); });
  }
  s.dispose(k);
  const std::string size = std::to_string(mib) + " MiB";
  row(s.name, "snapshot, " + size, snap, cold_p50);
  row(s.name, "restore, " + size, restore, cold_p50);
  row(s.name, "fork, " + size, fork, cold_p50);
}

void pause_rows(Subject& s, int runs) {
  const auto k = s.key("pause");
  auto sb = s.acquire(k);
  std::vector<double> v;
  for (int i = 0; i < runs; ++i) {
    const auto t = Clock::now();
    s.run([&] { return sb->pause(); });
    s.run([&] { return sb->resume(); });
    v.push_back(ms_since(t));
  }
  s.dispose(k);
  row(s.name, "pause + resume", v, 0);
}

void run_subject(Subject& s, int runs, std::vector<int> sizes) {
  std::fprintf(stderr, "%s: cold acquire\n", s.name.c_str());
  const auto cold = cold_acquire(s, runs);
  const double cold_p50 = pct(cold, 0.5);
  row(s.name, "acquire (cold) — the ratio's base", cold, cold_p50);
  std::fprintf(stderr, "%s: first command cold\n", s.name.c_str());
  row(s.name, "first command, cold (acquire + `true` + dispose)", first_command(s, runs, "first"), cold_p50);
  for (int mib : sizes) {
    std::fprintf(stderr, "%s: snapshots at %d MiB\n", s.name.c_str(), mib);
    snapshot_rows(s, runs, mib, cold_p50);
  }
  pause_rows(s, runs);
  s.run([&] { return s.backend->dispose_scope(s.scope, "bench"); });
}

SandboxSpec shell_spec(std::optional<std::string> image) {
  SandboxSpec::Fields f;
  f.kind = "shell";
  f.image = std::move(image);
  f.requires_capabilities = {Capability::Exec, Capability::Snapshot};
  return SandboxSpec(std::move(f));
}

void pooled_rows(BlockingRunner& run, const fs::path& root, int runs) {
  process::ProcessBackendConfig config;
  config.root = root / "pooled";
  const SandboxSpec spec = shell_spec(std::nullopt);
  config.pools.push_back(PoolConfig{spec, 4, true, std::chrono::minutes(10)});
  Subject s{"process", process::make_process_backend(config), spec, "bench-pool-" + std::to_string(::getpid()), run};
  std::vector<double> claims, first;
  for (int i = 0; i < runs; ++i) {
    usleep(300'000);  // let the refill catch up: a claim, not a cold acquire, is timed
    const auto k = s.key("claim" + std::to_string(s.serial++));
    auto t = Clock::now();
    auto sb = s.acquire(k);
    claims.push_back(ms_since(t));
    s.dispose(k);
    usleep(300'000);
    first.push_back(first_command(s, 1, "pfirst").front());
  }
  row("process", "pool claim (acquire of a pooled spec)", claims, 0);
  row("process", "first command, from a pool", first, 0);
  // Sustained: claim + dispose back to back for ~5 s, the pool refilling behind.
  int n = 0;
  const auto start = Clock::now();
  while (ms_since(start) < 5000) {
    const auto k = s.key("rate" + std::to_string(s.serial++));
    s.acquire(k);
    s.dispose(k);
    ++n;
  }
  std::printf("| process | claims/s sustained, pool of 4 refilling (claim + dispose, %d in %.1f s) | %.1f/s | | |\n", n,
              ms_since(start) / 1000, n * 1000.0 / ms_since(start));
  s.run([&] { return s.backend->dispose_scope(s.scope, "bench"); });
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(2, std::atoi(argv[1])) : 7;
  const char* docker_env = std::getenv("MAF_BENCH_SNAPSHOTS_DOCKER");
  const bool with_docker = !(docker_env && std::string(docker_env) == "0");
  BlockingRunner run;
  const fs::path root = fs::temp_directory_path() / ("maf-bench-snapshots-" + std::to_string(::getpid()));
  fs::create_directories(root);
  std::printf("| backend | operation | p50 (ms) | p99 (ms) | p50 / cold acquire |\n|---|---|---:|---:|---:|\n");
  try {
    process::ProcessBackendConfig config;
    config.root = root / "cold";
    Subject p{"process", process::make_process_backend(config), shell_spec(std::nullopt),
              "bench-snap-" + std::to_string(::getpid()), run};
    const char* only_docker = std::getenv("MAF_BENCH_SNAPSHOTS_ONLY_DOCKER");
    if (!(only_docker && std::string(only_docker) == "1")) {
      run_subject(p, runs, {1, 100});
      pooled_rows(run, root, runs);
    }
    if (with_docker) {
      docker::DockerConfig dc;
      const char* transport = std::getenv("MAF_BENCH_SNAPSHOTS_TRANSPORT");
      const bool cli = transport && std::string(transport) == "cli";
      dc.transport = cli ? docker::DockerTransportKind::Cli : docker::DockerTransportKind::Api;
      dc.snapshots = true;
      auto backend = run([&] { return docker::DockerSandboxBackend::create(dc); });
      Subject d{cli ? "docker (cli)" : "docker (api)", backend, shell_spec("maf-sandbox-test/busybox:1"),
                "bench-snap-" + std::to_string(::getpid()), run};
      run_subject(d, runs, {1, 100});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_snapshots: %s\n", e.what());
    fs::remove_all(root);
    return 1;
  }
  fs::remove_all(root);
  return 0;
}
