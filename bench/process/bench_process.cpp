// The process backend's operations beside their raw floors (issue 14), and its memory peak.
// Usage: bench_process [runs]  (default 25). Prints markdown for bench/RESULTS.md.
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
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/harness.hpp"
#include "bwrap.hpp"       // the backend's own command line, so the floor runs the same one
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

void spawn_and_wait_all(const std::vector<std::unique_ptr<process::Launch>>& launches) {
  std::vector<pid_t> pids;
  for (const auto& launch : launches) {
    // The seccomp program's descriptor must reach bwrap: clear close-on-exec on it (the
    // Launch still owns and closes it).
    for (const int fd : launch->keep_fds) require(::fcntl(fd, F_SETFD, 0) == 0, "fcntl keep fd");
    std::vector<char*> raw;
    for (const auto& a : launch->argv) raw.push_back(const_cast<char*>(a.c_str()));
    raw.push_back(nullptr);
    pid_t pid = -1;
    require(::posix_spawnp(&pid, raw[0], nullptr, nullptr, raw.data(), environ) == 0, "posix_spawnp failed");
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
    fs::create_directories(root_ / "floor");
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
  void throughput(int conversations, int runs);
  // One conversation of the throughput run; owns its arguments (coroutines start lazily).
  boost::asio::awaitable<void> conversation(std::string thread, int& finished);
  void memory();

private:
  fs::path root_;
  process::ProcessBackendConfig config_;
  process::Boundary boundary_;
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

  measure("exec `true`", "posix_spawn of the same bwrap argv", runs,
          [&] {
            return timed([&] {
              auto r = run_([&] { return warm->exec(std::vector<std::string>{"true"}); });
              require(r.exit_code == 0, "exec true failed");
            });
          },
          [&] {
            std::vector<std::unique_ptr<process::Launch>> one;
            one.push_back(floor_exec(tree, {"true"}));
            return timed([&] { spawn_and_wait_all(one); });
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
              for (int i = 0; i < conversations; ++i) {
                trees.push_back(floor_tree());
                launches.push_back(floor_exec(trees.back(), {"true"}));
              }
              spawn_and_wait_all(launches);
              for (const auto& t : trees) {
                write_host_file(work_of(t) / "out.txt", std::string(1024, 'c'));
                (void)read_host_file(work_of(t) / "out.txt");
                fs::remove_all(t);
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
  const int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 25;
  const fs::path root = fs::temp_directory_path() / ("maf-bench-process-" + std::to_string(::getpid()));
  maf_bench::on_interrupt([root] {  // interrupted: the guest trees go (the sandboxes are only those)
    std::error_code ec;
    fs::remove_all(root, ec);
  });
  int status = 0;
  try {
    Bench bench(root);
    std::fprintf(stderr, "process backend, %d runs per operation\n", runs);
    bench.operations(runs);
    bench.throughput(8, std::max(3, runs / 5));
    bench.throughput(32, std::max(3, runs / 5));
    bench.memory();
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
  return 0;
}
