// The process backend's operations beside their raw floors (issue 14), and its memory peak.
// Usage: bench_process [runs]  (default 25). Prints markdown for bench/RESULTS.md.
//        bench_process profile <exec|warm|cold|dispose|scope> [n] [held]
//          runs one operation n times (default 50) with `held` other sandboxes held (default
//          0) and prints its wall time and this process's own CPU time per operation (the
//          bookkeeping above bwrap; valgrind cannot run the backend: it does not support the
//          seccomp() call libseccomp probes); each iteration is marked by an access() of
//          /maf-bench-mark/<op> so `strace -f` can count its system calls.
//        MAF_BENCH_SCALE="10 100 1000"  sandboxes held at each level of the scale section.
//
// Each operation and its floor run alternately in the same process, so machine drift hits
// both alike; the table reports their medians and the ratio. The floors do the same work
// with bare calls: the identical bwrap command line spawned with posix_spawn; open/write/
// read/stat on the host path; mkdir of the same guest tree and remove_all of it.
//
// Memory: the peak resident set (VmHWM, reset through /proc/self/clear_refs before each
// phase) above the idle resident set while 32 MiB goes into a sandbox and back, and while an
// exec returns 8 MiB of stdout.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/harness.hpp"
#include "bwrap.hpp"       // the backend's own command line, so the floor runs the same one
#include "cgroup_limits.hpp"  // the backend's own cgroup bounds, so the floor is bounded alike
#include "guest_tree.hpp"  // the backend's guest-root shape, so the floors build the same tree
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sync.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace maf::sandbox;
using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

using maf_bench::median;

template <class F>
double timed(F&& f) {
  const auto start = Clock::now();
  f();
  return micros(Clock::now() - start);
}

void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("bench_process: ") + what);
}

struct Row {
  std::string operation;
  double ours_us;
  double floor_us;
  std::string floor_is;
  int conversations = 0;  // throughput rows: conversations per batch
};

std::vector<Row> g_rows;

// Runs `ours` and `floor` alternately `runs` times; each returns the microseconds of its
// timed part (set-up and tear-down stay outside).
void measure(const std::string& operation, const std::string& floor_is, int runs, const std::function<double()>& ours,
             const std::function<double()>& floor) {
  std::vector<double> a, b;
  for (int i = 0; i < runs; ++i) {
    a.push_back(ours());
    b.push_back(floor());
  }
  g_rows.push_back({operation, median(a), median(b), floor_is});
  std::fprintf(stderr, "  %-34s ours %10.1f us   floor %10.1f us\n", operation.c_str(), g_rows.back().ours_us,
               g_rows.back().floor_us);
}

class DiscardingSink final : public OutputSink {
public:
  boost::asio::awaitable<LandedArtifact> deliver(Artifact artifact) override {
    co_return LandedArtifact{artifact.name, artifact.name, std::nullopt};
  }
};

// ---- floors ---------------------------------------------------------------------------------

// vfork; the child writes `0` (itself) into each cgroup.procs file, then execs argv.
[[gnu::noinline]] pid_t spawn_joined(char* const* argv, const char* const* procs) {
  const pid_t pid = ::vfork();
  if (pid == 0) {
    for (const char* const* f = procs; *f; ++f) {
      const int fd = ::open(*f, O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(125);
      ::close(fd);
    }
    ::execvp(argv[0], argv);
    ::_exit(127);
  }
  return pid;
}

// Spawns each launch bare. With `procs` (the cgroup.procs files of the floor's own cgroups,
// bounded as a sandbox is) the child joins them itself between vfork and exec — the
// cheapest honest way to start bwrap inside the bound — before exec'ing the same argv.
void spawn_and_wait_all(const std::vector<std::unique_ptr<process::Launch>>& launches,
                        const std::vector<std::vector<std::string>>& procs_of_each) {
  std::vector<pid_t> pids;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const auto& launch = launches[i];
    static const std::vector<std::string> none;
    const auto& procs = i < procs_of_each.size() ? procs_of_each[i] : none;
    // The seccomp program's descriptor must reach bwrap: clear close-on-exec on it (the
    // Launch still owns and closes it).
    for (const int fd : launch->keep_fds) require(::fcntl(fd, F_SETFD, 0) == 0, "fcntl keep fd");
    std::vector<char*> raw;
    for (const auto& a : launch->argv) raw.push_back(const_cast<char*>(a.c_str()));
    raw.push_back(nullptr);
    pid_t pid = -1;
    if (procs.empty()) {
      require(::posix_spawnp(&pid, raw[0], nullptr, nullptr, raw.data(), environ) == 0, "posix_spawnp failed");
    } else {
      std::vector<const char*> files;
      for (const auto& f : procs) files.push_back(f.c_str());
      files.push_back(nullptr);
      pid = spawn_joined(raw.data(), files.data());
      require(pid > 0, "vfork failed");
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    require(WIFEXITED(status) && WEXITSTATUS(status) == 0, "bare bwrap child failed");
  }
}

void write_host_file(const fs::path& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  require(fd >= 0, "open for write");
  require(::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()), "write");
  ::close(fd);
}

std::string read_host_file(const fs::path& path) {
  struct stat st {};
  require(::stat(path.c_str(), &st) == 0, "stat");
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  require(fd >= 0, "open for read");
  require(::read(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size()), "read");
  ::close(fd);
  return out;
}

class Bench {
public:
  explicit Bench(fs::path root) : root_(std::move(root)) {
    config_.root = root_ / "sandboxes";
    backend_ = process::make_process_backend(config_);
    boundary_ = process::establish_boundary(config_);  // what the backend's own runs are made of
    cgroups_ = process::CgroupLimits::detect(config_.cgroup_root, config_.pids_limit, config_.memory_limit_bytes);
    fs::create_directories(root_ / "floor");
  }
  ~Bench() {
    for (const auto& left : process::remove_cgroups(floor_cgroups_))
      std::fprintf(stderr, "bench_process: floor cgroup left: %s\n", left.c_str());
  }
  /// The floor's own cgroups, bounded as a sandbox is by default (none where the backend
  /// can bound nothing): made once, removed at exit; returns their cgroup.procs files.
  std::vector<std::string> floor_procs() {
    if (floor_cgroups_.empty())
      floor_cgroups_ = cgroups_.prepare("maf-bench-floor-" + std::to_string(::getpid()), ResourceLimits{});
    return process::cgroup_procs_files(floor_cgroups_);
  }
  /// A fresh cgroup set for one "first command" floor (made and removed by the caller's timing).
  std::vector<std::string> floor_cgroup_set(int serial) {
    return cgroups_.prepare("maf-bench-first-" + std::to_string(::getpid()) + "-" + std::to_string(serial),
                            ResourceLimits{});
  }

  SandboxKey key(const std::string& thread, const std::string& agent = "agent") {
    return SandboxKey{"bench", thread, agent, ""};
  }
  SandboxSpec spec(std::vector<DeclaredOutput> outputs = {}) {
    return SandboxSpec({.kind = "shell",
                        .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut},
                        .declared_outputs = std::move(outputs)});
  }
  std::shared_ptr<Sandbox> acquire(const SandboxKey& k, SandboxSpec s) {
    return run_([&] { return backend_->acquire(k, s); });
  }
  void dispose(const SandboxKey& k) {
    auto failure = run_([&] { return backend_->dispose(k, std::nullopt, std::nullopt); });
    require(!failure, "dispose failed");
  }

  // The guest tree a sandbox gets, built with the backend's own shape but none of its
  // bookkeeping (no naming, staging, rename, meta record, live map).
  fs::path floor_tree() {
    const fs::path dir = root_ / "floor" / ("t" + std::to_string(next_++));
    fs::create_directories(dir / "root");
    process::GuestTree tree((dir / "root").string(), process::guest_read_only_views(config_),
                            process::guest_virtual_dirs(), boundary_.run_as);
    process::prepare_guest_root(tree, config_);
    fs::create_directories(dir / "root" / "maf-sandbox" / "work");
    return dir;
  }
  // The backend's own bubblewrap invocation (identity drop, /proc closure, seccomp), without
  // its cgroup step: the floor is the confinement, not the bookkeeping.
  std::unique_ptr<process::Launch> floor_exec(const fs::path& tree, std::vector<std::string> command) {
    return std::make_unique<process::Launch>(config_, boundary_, (tree / "root").string(), kDefaultWorkDir,
                                             kDefaultWorkDir, command);
  }
  static fs::path work_of(const fs::path& tree) { return tree / "root" / "maf-sandbox" / "work"; }

  void operations(int runs);
  void first_command(int runs);
  void scale(const std::vector<int>& levels);
  void profile(const std::string& op, int n, int held);
  void throughput(int conversations, int runs);
  // One conversation of the throughput run; owns its arguments (coroutines start lazily).
  boost::asio::awaitable<void> conversation(std::string thread, int& finished);
  void memory();

private:
  fs::path root_;
  process::ProcessBackendConfig config_;
  process::Boundary boundary_;
  process::CgroupLimits cgroups_;
  std::vector<std::string> floor_cgroups_;
  std::shared_ptr<SandboxBackend> backend_;
  BlockingRunner run_;
  int next_ = 0;
};

void Bench::operations(int runs) {
  int serial = 0;
  // Cold acquire: a key never seen; disposed untimed.
  measure("acquire (cold)", "mkdir of the same guest tree + meta file", runs,
          [&] {
            const auto k = key("cold-" + std::to_string(serial++));
            const double t = timed([&] { acquire(k, spec()); });
            dispose(k);
            return t;
          },
          [&] {
            double t = timed([&] {
              const fs::path dir = floor_tree();
              std::ofstream(dir / "meta.json") << "{\"kind\":\"shell\"}";
            });
            fs::remove_all(root_ / "floor");
            return t;
          });

  const auto warm_key = key("warm");
  auto warm = acquire(warm_key, spec());
  const fs::path tree = floor_tree();
  std::ofstream(tree / "meta.json") << "{\"kind\":\"shell\"}";
  measure("acquire (warm)", "read of the sandbox's meta file", runs,
          [&] { return timed([&] { acquire(warm_key, spec()); }); },
          [&] { return timed([&] { (void)read_host_file(tree / "meta.json"); }); });

  measure("exec `true`", "the same bwrap argv, spawned bare into cgroups bounded alike", runs,
          [&] {
            return timed([&] {
              auto r = run_([&] { return warm->exec(std::vector<std::string>{"true"}); });
              require(r.exit_code == 0, "exec true failed");
            });
          },
          [&] {
            std::vector<std::unique_ptr<process::Launch>> one;
            one.push_back(floor_exec(tree, {"true"}));
            const auto procs = floor_procs();
            return timed([&] { spawn_and_wait_all(one, {procs}); });
          });

  // Streaming (issue 31): the first byte of a streamed `echo` beside the same command run to
  // completion by exec — alone, where the two should cost the same, and with a 300 ms tail
  // after the line, where the stream shows what it buys (docs/streaming.md).
  auto first_byte = [&](const std::string& shell) {
    double first = -1;
    const auto start = Clock::now();
    run_([&] {
      return warm->exec_stream(shell, [&](OutputStream, std::string_view) {
        if (first < 0) first = micros(Clock::now() - start);
      });
    });
    require(first >= 0, "no chunk of the streamed echo arrived");
    return first;
  };
  auto to_completion = [&](const std::string& shell) {
    return timed([&] { require(run_([&] { return warm->exec(shell); }).stdout_bytes == "hi\n", "echo lost"); });
  };
  measure("exec_stream `echo`: first byte", "exec of the same `echo` to completion", runs,
          [&] { return first_byte("echo hi"); }, [&] { return to_completion("echo hi"); });
  measure("exec_stream `echo; sleep 0.3`: first byte", "exec of the same command to completion", runs,
          [&] { return first_byte("echo hi; sleep 0.3"); }, [&] { return to_completion("echo hi; sleep 0.3"); });

  // A sandbox's cgroups (made at its first command, one per usable controller, limits
  // written; removed at disposal) beside the cold acquire they add to.
  int cgroup_serial = 0;
  const auto cgroups = process::CgroupLimits::detect(config_.cgroup_root, config_.pids_limit, config_.memory_limit_bytes);
  measure("cgroup set-up + removal", "acquire (cold) of a sandbox", runs,
          [&] {
            const std::string name = "maf-bench-cgroup-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(cgroup_serial++);
            return timed([&] {
              const auto dirs = cgroups.prepare(name, ResourceLimits({.memory_bytes = 256 << 20,
                                                                                .processes = 128}));
              require(!dirs.empty(), "no usable cgroup controller here: nothing to measure");
              require(process::remove_cgroups(dirs).empty(), "a bench cgroup was left behind");
            });
          },
          [&] {
            const auto k = key("cold-cg-" + std::to_string(serial++));
            const double t = timed([&] { acquire(k, spec()); });
            dispose(k);
            return t;
          });

  for (const std::size_t size : {std::size_t{1024}, std::size_t{1} << 20}) {
    const std::string payload(size, 'p');
    const std::string label = size == 1024 ? "1 KiB" : "1 MiB";
    measure("write+stat+read " + label, "open/write/close, stat, open/read/close", runs,
            [&] {
              return timed([&] {
                run_.run_void([&]() -> boost::asio::awaitable<void> {
                  co_await warm->write_file("payload.bin", payload);
                  auto entry = co_await warm->stat_file("payload.bin");
                  auto back = co_await warm->read_file("payload.bin", ".", std::int64_t{64} << 20);
                  require(entry && back.size() == size, "round trip lost bytes");
                });
              });
            },
            [&] {
              return timed([&] {
                write_host_file(work_of(tree) / "payload.bin", payload);
                struct stat st {};
                require(::stat((work_of(tree) / "payload.bin").c_str(), &st) == 0, "stat");
                require(read_host_file(work_of(tree) / "payload.bin").size() == size, "floor lost bytes");
              });
            });
  }

  // Collect three declared 1 KiB outputs into a sink that keeps nothing.
  std::vector<DeclaredOutput> three{{.path = "o1.txt"}, {.path = "o2.txt"}, {.path = "o3.txt"}};
  const SandboxSpec collect_spec = spec(three);
  auto sink = std::make_shared<DiscardingSink>();
  for (const auto& o : three) {
    run_([&] { return warm->write_file(o.path, std::string(1024, 'o')); });
    write_host_file(work_of(tree) / o.path, std::string(1024, 'o'));
  }
  measure("collect 3 outputs (1 KiB)", "3 x stat + open/read/close", runs,
          [&] {
            return timed([&] {
              auto landed = run_([&] { return collect_outputs(*warm, collect_spec, sink); });
              require(landed.size() == 3, "collect landed the wrong count");
            });
          },
          [&] {
            return timed([&] {
              for (const auto& o : three) {
                struct stat st {};
                require(::stat((work_of(tree) / o.path).c_str(), &st) == 0, "stat");
                (void)read_host_file(work_of(tree) / o.path);
              }
            });
          });
  warm.reset();
  dispose(warm_key);
  fs::remove_all(root_ / "floor");

  // RESET (issue 26): the call wrote 100 small files into its work dir; reset puts the
  // creation-time snapshot back. The floor is the same restore with bare calls: a copy of
  // the same snapshot tree (std::filesystem::copy), two renames, remove_all of the used tree.
  // Ours also stops the guest's processes (a /proc scan) and keeps owners and modes.
  {
    const auto k = key("reset");
    auto sb = acquire(k, spec());
    measure("reset (call wrote 100 files)", "copy of the same snapshot tree + 2 renames + remove_all", runs,
            [&] {
              run_([&] { return sb->exec("for i in $(seq 1 100); do echo x > f$i; done"); });
              return timed([&] { run_([&] { return sb->reset(std::chrono::seconds(60)); }); });
            },
            [&] {
              const fs::path dir = floor_tree();
              fs::copy(dir / "root", dir / "snapshot", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
              for (int i = 1; i <= 100; ++i) {
                std::string name = "f";  // appended, not "f" + …: GCC 12's -Wrestrict false positive
                name += std::to_string(i);
                write_host_file(work_of(dir) / name, "x\n");
              }
              const double t = timed([&] {
                fs::copy(dir / "snapshot", dir / "staging", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
                fs::rename(dir / "root", dir / "old");
                fs::rename(dir / "staging", dir / "root");
                fs::remove_all(dir / "old");
              });
              fs::remove_all(dir);
              return t;
            });
    sb.reset();
    dispose(k);
  }

  measure("dispose", "remove_all of the same guest tree", runs,
          [&] {
            const auto k = key("dispose-" + std::to_string(serial++));
            acquire(k, spec());
            return timed([&] { dispose(k); });
          },
          [&] {
            const fs::path dir = floor_tree();
            return timed([&] { fs::remove_all(dir); });
          });

  measure("dispose_scope of 3", "remove_all of 3 guest trees", runs,
          [&] {
            const std::string thread = "scope-" + std::to_string(serial++);
            for (const char* agent : {"a", "b", "c"}) acquire(key(thread, agent), spec());
            return timed([&] {
              auto purge = run_([&] { return backend_->dispose_scope("bench", thread); });
              require(purge.disposed == 3 && !purge.undisposed, "dispose_scope missed a sandbox");
            });
          },
          [&] {
            std::vector<fs::path> dirs{floor_tree(), floor_tree(), floor_tree()};
            return timed([&] {
              for (const auto& d : dirs) fs::remove_all(d);
            });
          });
}

// A host's first command in a new conversation: cold acquire, exec `true`, dispose. The
// floor does the same steps bare: the same guest tree, cgroups made and bounded alike, the
// same bwrap argv spawned into them, then the cgroups and the tree removed.
void Bench::first_command(int runs) {
  int serial = 0;
  measure("first command (cold acquire + `true` + dispose)",
          "same steps bare: tree, cgroups, bwrap spawned into them, removal", runs,
          [&] {
            const auto k = key("first-" + std::to_string(serial++));
            return timed([&] {
              auto sb = acquire(k, spec());
              auto r = run_([&] { return sb->exec(std::vector<std::string>{"true"}); });
              require(r.exit_code == 0, "exec true failed");
              sb.reset();
              dispose(k);
            });
          },
          [&] {
            const int n = serial++;
            return timed([&] {
              const fs::path tree = floor_tree();
              const auto cgroups = floor_cgroup_set(n);
              std::vector<std::unique_ptr<process::Launch>> one;
              one.push_back(floor_exec(tree, {"true"}));
              spawn_and_wait_all(one, {process::cgroup_procs_files(cgroups)});
              require(process::remove_cgroups(cgroups).empty(), "a floor cgroup was left behind");
              fs::remove_all(tree);
            });
          });
}

/// CPU time this process has used (user + system, its children excluded): the host-side
/// bookkeeping, which a loaded machine stretches far less than wall time.
double cpu_micros() {
  rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

long rss_kib() { return maf_bench::status_kib("VmRSS"); }

struct ScaleRow {
  int held;
  double warm_exec_us;
  double dispose_us;
  double scope_us;
  double kib_per_held;
};
std::vector<ScaleRow> g_scale;

// Cost by what is touched (issue 55): `held` sandboxes, one per conversation, are held
// (acquired, handles kept, as a host serving that many conversations would); at each level
// the warm acquire + exec of one of them, the dispose of a fresh one, and the dispose_scope
// of a conversation that has nothing.
void Bench::scale(const std::vector<int>& levels) {
  std::vector<std::shared_ptr<Sandbox>> held;
  const long idle = rss_kib();
  int serial = 0;
  for (const int level : levels) {
    while (static_cast<int>(held.size()) < level)
      held.push_back(acquire(key("held-" + std::to_string(held.size())), spec()));
    const long with = rss_kib();
    std::vector<double> warm, disposes, scopes;
    for (int i = 0; i < 10; ++i) {
      const auto k = key("held-" + std::to_string(i % level));
      warm.push_back(timed([&] {
        auto sb = acquire(k, spec());
        require(run_([&] { return sb->exec(std::vector<std::string>{"true"}); }).exit_code == 0, "exec failed");
      }));
      scopes.push_back(timed([&] {
        auto purge = run_([&] { return backend_->dispose_scope("bench", "nobody-" + std::to_string(serial++)); });
        require(purge.disposed == 0 && !purge.undisposed, "dispose_scope of nothing disposed something");
      }));
    }
    for (int i = 0; i < 5; ++i) {
      const auto k = key("scale-dispose-" + std::to_string(serial++));
      acquire(k, spec());
      disposes.push_back(timed([&] { dispose(k); }));
    }
    g_scale.push_back({level, median(warm), median(disposes), median(scopes),
                       static_cast<double>(with - idle) / static_cast<double>(level)});
    std::fprintf(stderr, "  scale %5d held: warm+exec %8.1f us  dispose %8.1f us  dispose_scope(nothing) %8.1f us  %.1f KiB/held\n",
                 level, g_scale.back().warm_exec_us, g_scale.back().dispose_us, g_scale.back().scope_us,
                 g_scale.back().kib_per_held);
  }
  for (std::size_t i = 0; i < held.size(); ++i) {
    held[i].reset();
    dispose(key("held-" + std::to_string(i)));
  }
}

// One operation in a loop, timed (wall and own CPU), each iteration marked for strace by an
// access() of /maf-bench-mark/<op> (which fails).
void Bench::profile(const std::string& op, int n, int held_count) {
  std::vector<std::shared_ptr<Sandbox>> held;
  for (int i = 0; i < held_count; ++i) held.push_back(acquire(key("p-held-" + std::to_string(i)), spec()));
  const auto warm_key = key("p-warm");
  auto warm = acquire(warm_key, spec());
  require(run_([&] { return warm->exec(std::vector<std::string>{"true"}); }).exit_code == 0, "exec failed");
  std::vector<SandboxKey> fresh;
  if (op == "dispose")
    for (int i = 0; i < n; ++i) {
      fresh.push_back(key("p-dispose-" + std::to_string(i)));
      acquire(fresh.back(), spec());
    }
  const std::string mark = "/maf-bench-mark/" + op;
  const double cpu_before = cpu_micros();
  const auto wall_before = Clock::now();
  for (int i = 0; i < n; ++i) {
    (void)::access(mark.c_str(), F_OK);
    if (op == "exec") {
      require(run_([&] { return warm->exec(std::vector<std::string>{"true"}); }).exit_code == 0, "exec failed");
    } else if (op == "warm") {
      acquire(warm_key, spec());
    } else if (op == "cold") {
      acquire(key("p-cold-" + std::to_string(i)), spec());
    } else if (op == "dispose") {
      dispose(fresh[static_cast<std::size_t>(i)]);
    } else if (op == "scope") {
      require(run_([&] { return backend_->dispose_scope("bench", "nobody-" + std::to_string(i)); }).disposed == 0,
              "dispose_scope of nothing disposed something");
    } else {
      throw std::runtime_error("bench_process profile: unknown operation '" + op + "'");
    }
  }
  (void)::access((mark + "-end").c_str(), F_OK);
  const double wall = micros(Clock::now() - wall_before), cpu = cpu_micros() - cpu_before;
  std::printf("profile %s, %d iterations, %d other sandboxes held: wall %.1f us/op, this process's CPU "
              "(user+sys, children excluded) %.1f us/op\n",
              op.c_str(), n, held_count, wall / n, cpu / n);
  if (op == "cold")
    for (int i = 0; i < n; ++i) dispose(key("p-cold-" + std::to_string(i)));
  warm.reset();
  dispose(warm_key);
  for (int i = 0; i < held_count; ++i) {
    held[static_cast<std::size_t>(i)].reset();
    dispose(key("p-held-" + std::to_string(i)));
  }
}

boost::asio::awaitable<void> Bench::conversation(std::string thread, int& finished) {
  const auto k = key(thread);
  auto s = spec(std::vector<DeclaredOutput>{DeclaredOutput{.path = "out.txt"}});
  auto sb = co_await backend_->acquire(k, s);
  // The argv is built before the co_await: GCC 12 rejects a braced list of string literals
  // inside a co_await expression ("array used as initializer").
  std::vector<std::string> argv{"true"};
  auto r = co_await sb->exec(std::move(argv));
  require(r.exit_code == 0, "exec failed");
  co_await sb->write_file("out.txt", std::string(1024, 'c'));
  auto landed = co_await collect_outputs(*sb, s, std::make_shared<DiscardingSink>());
  require(landed.size() == 1, "collect failed");
  sb.reset();
  auto failure = co_await backend_->dispose(k, std::nullopt, std::nullopt);
  require(!failure, "dispose failed");
  ++finished;
}

// N conversations at once, each acquire -> exec `true` -> write 1 KiB -> collect it ->
// dispose, on one io_context (the children run in parallel; the host side is one thread,
// as a BlockingRunner host would be). The floor does the same per conversation with bare
// calls: build the tree, spawn all N bwraps then wait, write, read, remove.
void Bench::throughput(int conversations, int runs) {
  int serial = 0;
  const std::string label = "throughput, " + std::to_string(conversations) + " conversations";
  measure(label, "same steps, bare calls, N bwraps spawned together", runs,
          [&] {
            const int batch = serial++;
            boost::asio::io_context io;
            int finished = 0;
            const double t = timed([&] {
              for (int i = 0; i < conversations; ++i) {
                boost::asio::co_spawn(io, conversation("tp-" + std::to_string(batch) + "-" + std::to_string(i), finished),
                                      [](std::exception_ptr e) {
                                        if (e) std::rethrow_exception(e);
                                      });
              }
              io.run();
            });
            require(finished == conversations, "a conversation did not finish");
            return t;
          },
          [&] {
            return timed([&] {
              std::vector<fs::path> trees;
              std::vector<std::unique_ptr<process::Launch>> launches;
              std::vector<std::vector<std::string>> cgroup_sets;
              for (int i = 0; i < conversations; ++i) {
                trees.push_back(floor_tree());
                launches.push_back(floor_exec(trees.back(), {"true"}));
                cgroup_sets.push_back(floor_cgroup_set(serial * 1000 + i));
              }
              // Each conversation's bwrap in its own bounded cgroups, as each sandbox's is.
              std::vector<std::vector<std::string>> procs;
              for (const auto& set : cgroup_sets) procs.push_back(process::cgroup_procs_files(set));
              spawn_and_wait_all(launches, procs);
              for (std::size_t i = 0; i < trees.size(); ++i) {
                write_host_file(work_of(trees[i]) / "out.txt", std::string(1024, 'c'));
                (void)read_host_file(work_of(trees[i]) / "out.txt");
                fs::remove_all(trees[i]);
                require(process::remove_cgroups(cgroup_sets[i]).empty(), "a floor cgroup was left behind");
              }
            });
          });
  g_rows.back().conversations = conversations;
}

// ---- memory ---------------------------------------------------------------------------------

std::vector<maf_bench::MemoryRow> g_memory;

void Bench::memory() {
  const auto k = key("memory");
  auto sb = acquire(k, spec());
  const std::size_t big = std::size_t{32} << 20;

  // In: the host builds the payload and hands it over (moved, as a host that is done with it
  // would); the phase ends when the file is on disk and the payload freed.
  g_memory.push_back(maf_bench::memory_phase("write 32 MiB into the sandbox", big, [&] {
    run_.run_void([&]() -> boost::asio::awaitable<void> {
      std::string payload(big, 'm');
      co_await sb->write_file("big.bin", std::move(payload));
    });
  }));

  // Out: the bytes come back as one string the host holds.
  g_memory.push_back(maf_bench::memory_phase("read 32 MiB out of the sandbox", big, [&] {
    run_.run_void([&]() -> boost::asio::awaitable<void> {
      auto back = co_await sb->read_file("big.bin", ".", std::int64_t{64} << 20);
      require(back.size() == big, "32 MiB read lost bytes");
    });
  }));

  const std::size_t out = std::size_t{8} << 20;
  g_memory.push_back(maf_bench::memory_phase("exec printing 8 MiB to stdout", out, [&] {
    run_.run_void([&]() -> boost::asio::awaitable<void> {
      auto r = co_await sb->exec("head -c " + std::to_string(out) + " /dev/zero");
      require(r.exit_code == 0 && r.stdout_bytes.size() == out, "8 MiB exec lost bytes");
    });
  }));
  sb.reset();
  dispose(k);
}

std::string ratio(double ours, double floor) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", floor > 0 ? ours / floor : 0.0);
  return buf;
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.1f", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const bool profiling = argc > 2 && std::string(argv[1]) == "profile";
  const int runs = argc > 1 && !profiling ? std::max(3, std::atoi(argv[1])) : 25;
  std::vector<int> levels;
  {
    const char* env = std::getenv("MAF_BENCH_SCALE");
    std::istringstream in(env ? env : "10 100 1000");
    for (int level = 0; in >> level;)
      if (level > 0) levels.push_back(level);
  }
  const fs::path root = fs::temp_directory_path() / ("maf-bench-process-" + std::to_string(::getpid()));
  maf_bench::on_interrupt([root] {  // interrupted: the guest trees go (the sandboxes are only those)
    std::error_code ec;
    fs::remove_all(root, ec);
  });
  int status = 0;
  try {
    Bench bench(root);
    if (profiling) {
      bench.profile(argv[2], argc > 3 ? std::atoi(argv[3]) : 50, argc > 4 ? std::atoi(argv[4]) : 0);
      std::error_code ec;
      fs::remove_all(root, ec);
      return 0;
    }
    std::fprintf(stderr, "process backend, %d runs per operation\n", runs);
    bench.operations(runs);
    bench.first_command(runs);
    bench.throughput(8, std::max(3, runs / 5));
    bench.throughput(32, std::max(3, runs / 5));
    bench.memory();
    bench.scale(levels);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_process: %s\n", e.what());
    status = 1;
  }
  std::error_code ec;
  fs::remove_all(root, ec);
  if (status != 0) return status;

  std::printf("Median of %d runs (throughput: of %d batches), microseconds.\n\n", runs, std::max(3, runs / 5));
  std::printf("| operation | ours (µs) | floor (µs) | ratio | floor is |\n|---|---:|---:|---:|---|\n");
  for (const auto& r : g_rows)
    std::printf("| %s | %s | %s | %s | %s |\n", r.operation.c_str(), fixed(r.ours_us).c_str(),
                fixed(r.floor_us).c_str(), ratio(r.ours_us, r.floor_us).c_str(), r.floor_is.c_str());
  for (const auto& r : g_rows)
    if (r.conversations > 0)
      std::printf("\n%s: %.0f conversations/s (floor %.0f/s).", r.operation.c_str(),
                  r.conversations / r.ours_us * 1e6, r.conversations / r.floor_us * 1e6);
  std::printf("\n");
  maf_bench::print_memory(g_memory);
  if (!g_scale.empty()) {
    std::printf("\n### Scale: cost by what is touched (issue 55)\n\n"
                "One sandbox per conversation held (acquired, handles kept); at each level: warm acquire + exec "
                "`true` of a held one (median of 10), dispose of a fresh one (median of 5), dispose_scope of a "
                "conversation that has nothing (median of 10), and the resident set added per held sandbox.\n\n");
    std::printf("| sandboxes held | warm acquire + exec `true` (µs) | dispose (µs) | dispose_scope finding nothing (µs) | "
                "host memory per held sandbox (KiB) |\n|---:|---:|---:|---:|---:|\n");
    for (const auto& r : g_scale)
      std::printf("| %d | %s | %s | %s | %.1f |\n", r.held, fixed(r.warm_exec_us).c_str(), fixed(r.dispose_us).c_str(),
                  fixed(r.scope_us).c_str(), r.kib_per_held);
    const auto& lo = g_scale.front();
    const auto& hi = g_scale.back();
    std::printf("\nWith %d held against %d: dispose %s×, dispose_scope %s×, warm acquire + exec %s×.\n", hi.held,
                lo.held, ratio(hi.dispose_us, lo.dispose_us).c_str(), ratio(hi.scope_us, lo.scope_us).c_str(),
                ratio(hi.warm_exec_us, lo.warm_exec_us).c_str());
  }
  return 0;
}
