// What the subprocess runner costs over the bare syscalls, and how much memory a capped
// flood takes. Usage: bench_subprocess [spawns]  (default 1000)
//
//   spawn+wait of /bin/true through run_subprocess (pidfd, pipes, strand, coroutine)
//   beside a bare posix_spawn + waitpid loop in the same process, and their ratio;
//   peak RSS growth while a child writes 100 MiB against a 1 MiB stdout cap.

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "maf/sandbox/support/subprocess.hpp"
#include "maf/sandbox/sync.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double micros_per(Clock::duration d, int n) {
  return std::chrono::duration<double, std::micro>(d).count() / n;
}

long peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

double bare_spawn_loop(int n) {
  char arg0[] = "/bin/true";
  char* argv[] = {arg0, nullptr};
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    pid_t pid = -1;
    if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv, environ) != 0) std::abort();
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  return micros_per(Clock::now() - start, n);
}

double runner_loop(maf::sandbox::BlockingRunner& run, int n) {
  using maf::sandbox::support::run_subprocess;
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    auto r = run([] { return run_subprocess({.argv = {"/bin/true"}}); });
    if (!r.ok()) std::abort();
  }
  return micros_per(Clock::now() - start, n);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  maf::sandbox::BlockingRunner run;
  runner_loop(run, 20);  // warm-up: page in the library and the io_context
  bare_spawn_loop(20);

  // Interleave the two so machine noise hits both alike.
  double bare = 0, runner = 0;
  for (int round = 0; round < 4; ++round) {
    bare += bare_spawn_loop(n / 4);
    runner += runner_loop(run, n / 4);
  }
  bare /= 4;
  runner /= 4;

  const long rss_before = peak_rss_kib();
  auto flood = run([] {
    return maf::sandbox::support::run_subprocess(
        {.argv = {"head", "-c", "104857600", "/dev/zero"}, .max_stdout = std::size_t{1} << 20});
  });
  const long rss_after = peak_rss_kib();

  std::printf("| metric | value |\n|---|---|\n");
  std::printf("| spawns per loop | %d |\n", n);
  std::printf("| bare posix_spawn+waitpid of /bin/true | %.1f us |\n", bare);
  std::printf("| run_subprocess of /bin/true | %.1f us |\n", runner);
  std::printf("| ratio run_subprocess / bare | %.2f |\n", runner / bare);
  std::printf("| 100 MiB vs 1 MiB cap: kept bytes | %zu (overflowed: %s) |\n", flood.stdout_bytes.size(),
              flood.stdout_overflowed ? "yes" : "no");
  std::printf("| peak RSS before / after the capped flood | %ld KiB / %ld KiB (+%ld KiB) |\n", rss_before, rss_after,
              rss_after - rss_before);
  return 0;
}
