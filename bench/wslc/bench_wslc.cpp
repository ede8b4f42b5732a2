// The WSLC backend through its Linux shim (backends/wslc/shim, an executable named `wslc`
// driving the local Docker engine), beside a floor that spawns the very same shim calls bare
// (issue 14).
// Usage: bench_wslc [runs] [shim]  (default 10 runs; the shim this tree built). Needs a
// Docker engine and the image maf-sandbox-test/wslc-busybox:1
// (backends/wslc/tests/build-test-image.sh). Prints markdown for bench/RESULTS.md, progress
// on stderr; leaves no container behind.
//
// The floor is a replay: each operation of ours runs once untimed with the shim's
// invocation log on (WSLC_SHIM_LOG, S-11), and the argv it logged become that operation's
// floor — posix_spawn of the shim with the same arguments in order, the floor's own
// container names and scope label substituted, the same tar on stdin for `cp -` — without
// the backend's logic (no key lock, no list parsing, no classification, no path walk).
// WSLC declares exec and files_in only (W-2), so there are no read, stat or collect rows.
//
// After the time table, peak RSS per memory phase (harness.hpp): a write at the per-file cap
// and an exec whose stdout is exactly the output cap. MAF_BENCH_MEMORY_ONLY=1 runs only those
// (as bench_docker does), for checking a memory fix by hand.
#include <unistd.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/harness.hpp"
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/wslc/backend.hpp"

namespace {

using namespace maf::sandbox;
using namespace maf_bench;

const std::string kImage = "maf-sandbox-test/wslc-busybox:1";
const std::string kKind = "bench";

/// One logged shim call: its arguments, without argv[0].
using Call = std::vector<std::string>;

bool is_copy_in(const Call& c) { return c.size() >= 3 && c[0] == "container" && c[1] == "cp" && c[2] == "-"; }

/// Where the floor's shim calls run: `container cp C:path -` lands the file as `-` in the
/// caller's cwd, and the backend too runs that verb from a private directory.
class ScratchDir {
public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "maf-bench-wslc-XXXXXX").string();
    require(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

/// The shim spawned bare, from scratch_dir(): the same arguments, `stdin_bytes` on stdin for `cp -`. Returns the
/// exit status (the floor does not classify it).
int spawn_shim(const std::string& shim, const Call& args, const std::string& stdin_bytes) {
  return spawn_and_wait(shim, args, is_copy_in(args) ? stdin_bytes : std::string(), scratch_dir());
}

std::string replace_all(std::string s, const std::map<std::string, std::string>& subs) {
  for (const auto& [from, to] : subs)
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

class Bench {
public:
  Bench(std::string shim, int runs)
      : shim_(std::move(shim)),
        runs_(runs),
        scope_(session()),
        floor_scope_("wslc-floor-" + std::to_string(::getpid())),
        log_path_("/tmp/maf-bench-wslc-" + std::to_string(::getpid()) + ".log") {
    ::setenv("WSLC_SHIM_SESSION", scope_.c_str(), 1);
    wslc::WslcConfig c;
    c.wslc_path = shim_;
    backend_ = std::make_shared<wslc::WslcSandboxBackend>(c);
  }

  ~Bench() {
    try {
      for (const auto& t : threads_) run_([&] { return backend_->dispose_scope(scope_, t); });
    } catch (...) {
    }
    // Floor containers a failed run left (the replays remove their own on success): every
    // container of ours and of the floor carries the shim session label.
    sweep_engine(session_filter());
    std::remove(log_path_.c_str());
  }

  /// Selects every container and network the shim made for this process, ours and the floor's.
  static std::string session_filter() { return "label=wslc-shim.session=" + session(); }
  static std::string session() { return "wslc-bench-" + std::to_string(::getpid()); }

  void operations();
  void throughput(int conversations, int batches);
  void memory();
  void print() const {
    if (timed_) {
      table_.print(runs_);
      std::printf("\nNo read, stat or collect rows: WSLC declares exec and files_in only (W-2).\n");
    }
    if (memory_.empty()) return;
    print_memory(memory_);
    std::printf("\nNo read-out phase: WSLC declares exec and files_in only (W-2). The write is 8 MiB, not "
                "32 MiB: write_file refuses a body over 8 MiB before any engine call (W-6).\n");
  }

private:
  SandboxKey key(const std::string& agent, const std::string& thread = "t") {
    if (std::find(threads_.begin(), threads_.end(), thread) == threads_.end()) threads_.push_back(thread);
    return {scope_, thread, agent, ""};
  }
  static SandboxSpec spec() {
    return SandboxSpec({.kind = kKind, .image = kImage, .requires_capabilities = {Capability::Exec, Capability::FilesIn}});
  }
  static std::string name_of(const SandboxKey& k) {
    return wslc::WslcSandboxBackend::container_name(k, kKind, kDefaultWorkDir);
  }
  std::shared_ptr<Sandbox> acquire(const SandboxKey& k) {
    return run_([&] { return backend_->acquire(k, spec()); });
  }
  void dispose(const SandboxKey& k) {
    require(!run_([&] { return backend_->dispose(k, std::nullopt, std::nullopt); }), "dispose failed");
  }

  /// The shim calls `f` makes, from the invocation log.
  std::vector<Call> record(const std::function<void()>& f) {
    std::ofstream(log_path_, std::ios::trunc).close();
    ::setenv("WSLC_SHIM_LOG", log_path_.c_str(), 1);
    try {
      f();
    } catch (...) {
      ::unsetenv("WSLC_SHIM_LOG");
      throw;
    }
    ::unsetenv("WSLC_SHIM_LOG");  // ours is timed without the log's append
    std::vector<Call> calls;
    std::ifstream in(log_path_);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      auto argv = nlohmann::json::parse(line).at("argv").get<std::vector<std::string>>();
      calls.push_back(std::move(argv));  // the shim logs its arguments without argv[0]
    }
    return calls;
  }

  /// Spawns `calls` in order with `names` (ours -> the floor's) and the scope substituted.
  /// A `cp -` gets `file_tar` if it is the last one of a recording that wrote a file, else
  /// the work-directory tar acquire uploads.
  void replay(const std::vector<Call>& calls, std::map<std::string, std::string> names,
              const std::string& file_tar = {}) {
    names[support::label_value(scope_)] = support::label_value(floor_scope_);
    std::size_t copies = 0, seen = 0;
    for (const auto& c : calls) copies += is_copy_in(c) ? 1 : 0;
    for (const auto& c : calls) {
      Call args;
      for (const auto& a : c) args.push_back(replace_all(a, names));
      std::string in;
      if (is_copy_in(c)) in = (++seen == copies && !file_tar.empty()) ? file_tar : dir_tar_;
      spawn_shim(shim_, args, in);
    }
  }

  /// A floor container: the recorded cold acquire replayed under a new name.
  std::string floor_container() {
    const std::string name = "maf-bench-wslc-" + std::to_string(::getpid()) + "-floor-" + std::to_string(floors_++);
    replay(cold_, {{cold_name_, name}});
    return name;
  }
  void floor_remove(const std::string& name) { spawn_shim(shim_, {"container", "remove", "-f", name}, {}); }

  std::string shim_;
  int runs_;
  std::string scope_, floor_scope_, log_path_;
  BlockingRunner run_;
  std::shared_ptr<wslc::WslcSandboxBackend> backend_;
  std::vector<std::string> threads_;
  int floors_ = 0;
  std::vector<Call> cold_;
  std::string cold_name_;
  std::string dir_tar_ = [] {
    support::TarWriter tar;
    tar.add_directory(std::string(kDefaultWorkDir).substr(1), {.mode = 0755, .uid = 0, .gid = 0});
    return std::move(tar).finish();
  }();
  Table table_;
  bool timed_ = false;  // operations() or throughput() ran: the time table has rows
  std::vector<MemoryRow> memory_;
};

std::string file_tar(const std::string& guest_path, const std::string& content) {
  support::TarWriter tar;
  tar.add_file(guest_path.substr(1), content, {.mode = 0644, .uid = 0, .gid = 0});
  return std::move(tar).finish();
}

void Bench::operations() {
  timed_ = true;
  int serial = 0;
  // The first acquire also checks wslc's version (once per backend): out of the recording.
  const auto first = key("first");
  acquire(first);
  dispose(first);

  const auto rec = key("rec-cold");
  cold_name_ = name_of(rec);
  cold_ = record([&] { acquire(rec); });
  dispose(rec);
  table_.measure("acquire (cold)", "the same shim calls (" + std::to_string(cold_.size()) + ")", runs_,
                 [&] {
                   const auto k = key("cold-" + std::to_string(serial++));
                   const double t = timed([&] { acquire(k); });
                   dispose(k);
                   return t;
                 },
                 [&] {
                   std::string name;
                   const double t = timed([&] { name = floor_container(); });
                   floor_remove(name);
                   return t;
                 });

  const auto wk = key("warm");
  auto warm = acquire(wk);
  const std::string floor_warm = floor_container();
  const std::map<std::string, std::string> warm_names{{name_of(wk), floor_warm}};
  auto row = [&](const std::string& op, const std::function<void()>& ours, const std::string& tar = {}) {
    const auto calls = record(ours);
    table_.measure(op, "the same shim calls (" + std::to_string(calls.size()) + ")", runs_,
                   [&] { return timed(ours); }, [&] { return timed([&] { replay(calls, warm_names, tar); }); });
  };
  row("acquire (warm)", [&] { acquire(wk); });
  const Command true_argv(std::vector<std::string>{"true"});
  row("exec `true`", [&] { require(run_([&] { return warm->exec(true_argv); }).exit_code == 0, "exec true failed"); });
  for (const std::size_t size : {std::size_t{1024}, std::size_t{1} << 20}) {
    const std::string payload(size, 'p');
    row(std::string("write ") + (size == 1024 ? "1 KiB" : "1 MiB"),
        [&] { run_([&] { return warm->write_file("payload.bin", payload); }); },
        file_tar(std::string(kDefaultWorkDir) + "/payload.bin", payload));
  }
  warm.reset();
  dispose(wk);
  floor_remove(floor_warm);

  const auto rd = key("rec-dispose");
  acquire(rd);
  const auto dispose_calls = record([&] { dispose(rd); });
  table_.measure("dispose", "the same shim calls (" + std::to_string(dispose_calls.size()) + ")", runs_,
                 [&] {
                   const auto k = key("dispose-" + std::to_string(serial++));
                   acquire(k);
                   return timed([&] { dispose(k); });
                 },
                 [&] {
                   const std::string mine = floor_container();
                   return timed([&] { replay(dispose_calls, {{name_of(rd), mine}}); });
                 });

  std::vector<std::string> scope_names;
  for (const char* agent : {"a", "b", "c"}) {
    acquire(key(agent, "rec-scope"));
    scope_names.push_back(name_of(key(agent, "rec-scope")));
  }
  const auto scope_calls = record([&] {
    auto purge = run_([&] { return backend_->dispose_scope(scope_, "rec-scope"); });
    require(purge.disposed == 3 && !purge.undisposed, "dispose_scope missed a sandbox");
  });
  table_.measure("dispose_scope of 3", "the same shim calls (" + std::to_string(scope_calls.size()) + ")", runs_,
                 [&] {
                   const std::string thread = "scope-" + std::to_string(serial++);
                   for (const char* agent : {"a", "b", "c"}) acquire(key(agent, thread));
                   return timed([&] {
                     auto purge = run_([&] { return backend_->dispose_scope(scope_, thread); });
                     require(purge.disposed == 3 && !purge.undisposed, "dispose_scope missed a sandbox");
                   });
                 },
                 [&] {
                   std::map<std::string, std::string> mine;
                   for (const auto& n : scope_names) mine[n] = floor_container();
                   return timed([&] { replay(scope_calls, mine); });
                 });
}

// N conversations at once on one io_context, each acquire -> exec `true` -> write 1 KiB ->
// dispose, beside N threads each replaying one recorded conversation's shim calls.
void Bench::throughput(int conversations, int batches) {
  timed_ = true;
  const std::string payload(1024, 'c');
  auto conversation = [this](SandboxKey k, std::string content, int& finished) -> boost::asio::awaitable<void> {
    const SandboxSpec s = spec();
    auto sb = co_await backend_->acquire(k, s);
    std::vector<std::string> argv{"true"};
    auto r = co_await sb->exec(std::move(argv));
    require(r.exit_code == 0, "exec failed");
    const std::string path = "out.txt";  // named locals, not temporaries, inside co_await (GCC 12)
    co_await sb->write_file(path, std::move(content));
    sb.reset();
    const std::optional<std::string> any_kind, any_instance;
    auto failure = co_await backend_->dispose(k, any_kind, any_instance);
    require(!failure, "dispose failed");
    ++finished;
  };
  auto ours = [&](const std::string& thread, int n) {
    boost::asio::io_context io;
    int finished = 0;
    for (int i = 0; i < n; ++i) {
      // Appended, not `"c" + std::to_string(i)`: GCC 12 -O2 warns -Wrestrict (falsely) on
      // operator+(const char*, std::string&&).
      std::string agent(1, 'c');
      agent += std::to_string(i);
      boost::asio::co_spawn(io, conversation(key(agent, thread), payload, finished),
                            [](std::exception_ptr e) {
                              if (e) std::rethrow_exception(e);
                            });
    }
    io.run();
    require(finished == n, "a conversation did not finish");
  };
  const std::string rec_name = name_of(key("c0", "rec-tp"));
  const auto calls = record([&] { ours("rec-tp", 1); });
  const std::string tar = file_tar(std::string(kDefaultWorkDir) + "/out.txt", payload);
  int serial = 0;
  auto& r = table_.measure(
      "throughput, " + std::to_string(conversations) + " conversations",
      "N threads replaying one conversation's " + std::to_string(calls.size()) + " shim calls", batches,
      [&] { return timed([&] { ours("tp-" + std::to_string(serial++), conversations); }); },
      [&] {
        std::vector<std::string> names;
        for (int i = 0; i < conversations; ++i)
          names.push_back("maf-bench-wslc-" + std::to_string(::getpid()) + "-tp-" + std::to_string(serial) + "-" +
                          std::to_string(i));
        return timed([&] {
          std::vector<std::thread> threads;
          for (const auto& n : names) threads.emplace_back([&, n] { replay(calls, {{rec_name, n}}, tar); });
          for (auto& t : threads) t.join();
        });
      });
  r.conversations = conversations;
}

// Peak RSS per phase, as bench_process and bench_docker measure it (harness.hpp), each at the
// largest payload WSLC allows: W-6 caps a written file at 8 MiB, and W-7 keeps at most 8 MiB
// of stdout and stderr together — exactly 8 MiB passes (the backend refuses only more), so
// the exec prints 8 MiB to stdout and nothing to stderr.
void Bench::memory() {
  const std::size_t file = std::size_t{8} << 20, out = std::size_t{8} << 20;
  const auto k = key("memory");
  auto sb = acquire(k);
  memory_.push_back(memory_phase("write 8 MiB into the sandbox (the W-6 per-file cap)", file, [&] {
    run_.run_void([&]() -> boost::asio::awaitable<void> {
      std::string payload(file, 'm');
      const std::string path = "big.bin";  // named locals, not temporaries, inside co_await (GCC 12)
      co_await sb->write_file(path, std::move(payload));
    });
  }));
  const Command print8("head -c " + std::to_string(out) + " /dev/zero");
  memory_.push_back(memory_phase("exec printing 8 MiB to stdout (exactly the W-7 cap)", out, [&] {
    run_.run_void([&]() -> boost::asio::awaitable<void> {
      auto r = co_await sb->exec(print8);
      require(r.exit_code == 0 && r.stdout_bytes.size() == out && r.stderr_bytes.empty(), "8 MiB exec lost bytes");
    });
  }));
  sb.reset();
  dispose(k);
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 10;
  const std::string shim = argc > 2 ? argv[2] : MAF_WSLC_SHIM;
  // Interrupted or killed: every container and network the shim made for this process, ours
  // and the floor's, carries the session label.
  sweep_on_interrupt(Bench::session_filter());
  try {
    Bench bench(shim, runs);
    std::fprintf(stderr, "wslc backend through the shim %s, %d runs per operation\n", shim.c_str(), runs);
    // MAF_BENCH_MEMORY_ONLY=1: the memory phases alone (minutes less, for checking a fix).
    const char* memory_only = std::getenv("MAF_BENCH_MEMORY_ONLY");
    if (!memory_only || std::string(memory_only) != "1") {
      bench.operations();
      for (const int n : {8, 32}) bench.throughput(n, throughput_batches(n));
    }
    bench.memory();
    bench.print();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_wslc: %s\n", e.what());
    return 1;
  }
  return 0;
}
