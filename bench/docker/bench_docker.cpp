// The Docker backend over its two transports, side by side with the raw docker CLI and a
// raw Engine-API floor, in one run on one engine (issue 9).
// Usage: bench_docker [runs]  (default 10; cold rows use half). Prints markdown for
// bench/RESULTS.md on stdout, progress on stderr. Needs an engine and the test images
// (scripts/docker-test-images); leaves no container behind.
//
// Every variant of a row runs alternately within each round, so engine drift hits all four
// alike. The raw floors do the bare transfer with no freeze, no ancestor walk and no
// classification: `docker exec|cp|run|rm` spawned directly, and the same HTTP exchanges
// through the backend's own HTTP client (docker_http.hpp).
//
// Issue 14's rows besides: warm acquire, write/stat/read of 1 MiB, dispose_scope of 3 (a list
// by name and three removals for the floors) and throughput of 8 and 32 concurrent
// conversations (per transport on one io_context, beside N threads of bare CLI calls).
//
// Memory (issue 14): the peak resident set above the idle baseline while 32 MiB goes into a
// sandbox and back, and while an exec returns 8 MiB of stdout, once per transport.
//
// MAF_BENCH_PROFILE_COLD=N (issue 24): N cold acquires on the Engine API with every engine
// call timed (timing_transport.hpp), beside the raw create + start; nothing else runs.
//
// Streaming (issue 31): the first byte of a streamed `echo` beside the same `echo` run to
// completion by exec, per transport, and with a 300 ms tail after the line; the engine calls
// of each streamed exec timed by timing_transport.hpp (its first chunk at the transport).
// MAF_BENCH_STREAM_ONLY=1: these rows alone.
#include <unistd.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/harness.hpp"
#include "docker_http.hpp"
#include "timing_transport.hpp"
#include "maf/sandbox/async.hpp"
#include "maf/sandbox/docker/api_transport.hpp"
#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/docker/cli_transport.hpp"
#include "maf/sandbox/support/subprocess.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "maf/sandbox/sync.hpp"

namespace {

using namespace maf::sandbox;
namespace dk = maf::sandbox::docker;
using Clock = std::chrono::steady_clock;

const std::string kImage = "maf-sandbox-test/busybox:1";

using maf_bench::median;
using maf_bench::timed;  // milliseconds

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("bench_docker: " + what);
}

class DiscardingSink final : public OutputSink {
public:
  boost::asio::awaitable<LandedArtifact> deliver(Artifact artifact) override {
    co_return LandedArtifact{artifact.name, artifact.name, std::nullopt};
  }
};

struct Row {
  std::string operation;
  double cli, api, raw_cli, raw_api;  // medians, ms (raw_api NaN: not measured)
  int conversations = 0;              // throughput rows: conversations per batch
};

/// A streaming row (issue 31), as the process backend's: ours beside a reference operation.
struct StreamRow {
  std::string operation, transport, beside_is;
  double ours, beside, at_transport;  // medians, ms; at_transport: the first chunk at the transport
};

class Bench {
public:
  explicit Bench(int runs) : runs_(runs), scope_("bench-" + std::to_string(::getpid())) {
    const char* client = std::getenv("MAF_SANDBOX_DOCKER");
    docker_ = client && *client ? client : "docker";
    const char* host = std::getenv("DOCKER_HOST");
    http_ = std::make_unique<dk::detail::HttpClient>(
        dk::detail::parse_docker_host(host && *host ? host : "unix:///var/run/docker.sock", false));
    auto version = api("GET", "/version");
    require(version.status == 200, "the engine does not answer /version");
    const std::string v = nlohmann::json::parse(version.body).value("ApiVersion", "1.41");
    prefix_ = "/v" + (v < std::string("1.41") ? v : std::string("1.41"));
    dk::DockerConfig cli_config;
    cli_config.docker_path = docker_;
    cli_config.transport = dk::DockerTransportKind::Cli;
    dk::DockerConfig api_config = cli_config;
    api_config.transport = dk::DockerTransportKind::Api;
    cli_ = run_([&] { return dk::DockerSandboxBackend::create(cli_config); });
    api_ = run_([&] { return dk::DockerSandboxBackend::create(api_config); });
  }

  ~Bench() {
    for (auto* b : {&cli_, &api_})
      if (*b) try {
          run_([&] { return (*b)->dispose_scope(scope_, "t"); });
        } catch (...) {
        }
    // Whatever is left, raw containers included: all carry the scope label.
    maf_bench::sweep_engine("label=maf-sandbox.scope=" + scope_);
  }

  void all() {
    SandboxSpec::Fields f;
    f.kind = "shell";
    f.image = kImage;
    f.requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut};
    f.declared_outputs = {DeclaredOutput{.path = "out-1.txt", .media_type = "text/plain"},
                          DeclaredOutput{.path = "out-2.txt", .media_type = "text/plain"},
                          DeclaredOutput{.path = "out-3.txt", .media_type = "text/plain"}};
    const SandboxSpec spec(std::move(f));
    const std::string kib(1024, 'x');

    // Cold acquire and dispose: a fresh key (container) per round and variant.
    const int cold = std::max(3, runs_ / 2);
    std::vector<double> a[4], d[4];
    for (int i = 0; i < cold; ++i) {
      const SandboxKey kc{scope_, "t", "cold-cli-" + std::to_string(i), ""};
      const SandboxKey ka{scope_, "t", "cold-api-" + std::to_string(i), ""};
      a[0].push_back(timed([&] { run_([&] { return cli_->acquire(kc, spec); }); }));
      a[1].push_back(timed([&] { run_([&] { return api_->acquire(ka, spec); }); }));
      const std::string n1 = raw_name("cold-cli", i), n2 = raw_name("cold-api", i);
      a[2].push_back(timed([&] { raw_cli_run(n1); }));
      a[3].push_back(timed([&] { raw_api_run(n2); }));
      d[0].push_back(timed([&] { run_([&] { return cli_->dispose(kc, std::string("shell"), std::nullopt); }); }));
      d[1].push_back(timed([&] { run_([&] { return api_->dispose(ka, std::string("shell"), std::nullopt); }); }));
      d[2].push_back(timed([&] { cli({"rm", "-f", n1}); }));
      d[3].push_back(timed([&] { require(api("DELETE", prefix_ + "/containers/" + n2 + "?force=1").status == 204, "rm"); }));
    }
    add("cold acquire (create + start + probes)", a);
    add("dispose (remove one workload)", d);

    // Warm rows: one sandbox per transport and one raw container, kept for the rest.
    const SandboxKey wc{scope_, "t", "warm-cli", ""}, wa{scope_, "t", "warm-api", ""};
    auto sc = run_([&] { return cli_->acquire(wc, spec); });
    auto sa = run_([&] { return api_->acquire(wa, spec); });
    const std::string raw = raw_name("warm", 0);
    raw_cli_run(raw);
    for (auto* sb : {&sc, &sa})
      for (const char* name : {"bench.txt", "out-1.txt", "out-2.txt", "out-3.txt"})
        run_([&] { return (*sb)->write_file(name, kib); });
    raw_api_write(raw, "/", kib);

    // A warm acquire is a lookup plus the work-directory check: state, then a stat per
    // work-directory component (/maf-sandbox, /maf-sandbox/work) — unfrozen when every one is
    // a directory, since such a check writes nothing (docker.md, issue 24). The floors do the
    // same lookup and two stats of directories of the raw container.
    row("warm acquire (held sandbox)", [&] { run_([&] { return cli_->acquire(wc, spec); }); },
        [&] { run_([&] { return api_->acquire(wa, spec); }); },
        [&] {
          cli({"inspect", raw});
          for (const char* dir : {"/etc", "/tmp"}) cli({"cp", raw + ":" + dir, "-"});
        },
        [&] {
          require(api("GET", prefix_ + "/containers/" + raw + "/json").status == 200, "inspect");
          for (const char* dir : {"/etc", "/tmp"})
            require(api("HEAD", prefix_ + "/containers/" + raw + "/archive?path=" + dir).status == 200, "head");
        });
    const Command true_argv(std::vector<std::string>{"true"});
    row("warm exec `true`", [&] { run_([&] { return sc->exec(true_argv); }); },
        [&] { run_([&] { return sa->exec(true_argv); }); }, [&] { cli({"exec", raw, "true"}); },
        [&] { raw_api_exec(raw); });
    for (const std::size_t size : {std::size_t{1024}, std::size_t{1} << 20}) {
      const std::string payload(size, 'x'), of = size == 1024 ? "1 KiB" : "1 MiB";
      const std::int64_t cap = std::int64_t{4} << 20;
      row("write " + of + " (incl. freeze)", [&] { run_([&] { return sc->write_file("bench.txt", payload); }); },
          [&] { run_([&] { return sa->write_file("bench.txt", payload); }); },
          [&] { cli({"cp", "-", raw + ":/"}, tar_of("tmp/bench.txt", payload)); },
          [&] { raw_api_write(raw, "/", payload); });
      row("stat " + of + " file (incl. freeze)",
          [&] { require(run_([&] { return sc->stat_file("bench.txt"); }).has_value(), "stat"); },
          [&] { require(run_([&] { return sa->stat_file("bench.txt"); }).has_value(), "stat"); },
          [&] { cli({"cp", raw + ":/tmp/bench.txt", "-"}); },
          [&] { require(api("HEAD", prefix_ + "/containers/" + raw + "/archive?path=/tmp/bench.txt").status == 200, "head"); });
      row("read " + of + " (incl. freeze)", [&] { run_([&] { return sc->read_file("bench.txt", ".", cap); }); },
          [&] { run_([&] { return sa->read_file("bench.txt", ".", cap); }); },
          [&] { cli({"cp", raw + ":/tmp/bench.txt", "-"}); },
          [&] { require(api("GET", prefix_ + "/containers/" + raw + "/archive?path=/tmp/bench.txt").status == 200, "get"); });
    }
    raw_api_write(raw, "/", kib);  // the raw collect floor reads 1 KiB, as ours
    auto sink = std::make_shared<DiscardingSink>();
    row("collect 3 outputs of 1 KiB", [&] { run_([&] { return collect_outputs(*sc, spec, sink); }); },
        [&] { run_([&] { return collect_outputs(*sa, spec, sink); }); },
        [&] {
          for (int i = 0; i < 3; ++i) cli({"cp", raw + ":/tmp/bench.txt", "-"});
        },
        [&] {
          for (int i = 0; i < 3; ++i) api("GET", prefix_ + "/containers/" + raw + "/archive?path=/tmp/bench.txt");
        });
    sc.reset();
    sa.reset();
    dispose_scope_of_3(spec, cold);
  }

  // dispose_scope of 3: three sandboxes per transport under their own thread (both backends
  // share the engine and purge by label), beside listing three raw containers by name and
  // removing them.
  void dispose_scope_of_3(const SandboxSpec& spec, int runs) {
    std::vector<double> v[4];
    for (int i = 0; i < runs; ++i) {
      const std::string n = std::to_string(i);
      for (auto* b : {&cli_, &api_})
        for (const char* agent : {"a", "b", "c"}) {
          const SandboxKey k{scope_, (b == &cli_ ? "scope-cli-" : "scope-api-") + n, agent, ""};
          run_([&] { return (*b)->acquire(k, spec); });
        }
      for (int j = 0; j < 3; ++j) {
        raw_cli_run(raw_name("scope-cli-" + n + "-", j));
        raw_api_run(raw_name("scope-api-" + n + "-", j));
      }
      for (auto* b : {&cli_, &api_}) {
        const std::string thread = (b == &cli_ ? "scope-cli-" : "scope-api-") + n;
        v[b == &cli_ ? 0 : 1].push_back(timed([&] {
          const auto purge = run_([&] { return (*b)->dispose_scope(scope_, thread); });
          require(purge.disposed == 3 && !purge.undisposed, "dispose_scope missed a sandbox");
        }));
      }
      v[2].push_back(timed([&] {
        const std::string ids = cli({"ps", "-aq", "--filter", "name=" + scope_ + "-raw-scope-cli-" + n + "-"});
        std::vector<std::string> rm{"rm", "-f"};
        for (std::size_t at = 0, nl; at < ids.size(); at = nl + 1) {
          nl = ids.find('\n', at);
          if (nl == std::string::npos) nl = ids.size();
          if (nl > at) rm.push_back(ids.substr(at, nl - at));
        }
        require(rm.size() == 5, "raw list found " + std::to_string(rm.size() - 2) + " containers, not 3");
        cli(rm);
      }));
      v[3].push_back(timed([&] {
        const std::string filters = R"({"name":[")" + scope_ + "-raw-scope-api-" + n + R"(-"]})";
        auto listed = api("GET", prefix_ + "/containers/json?all=1&filters=" + docker::detail::url_escape(filters));
        require(listed.status == 200, "list");
        const auto items = nlohmann::json::parse(listed.body);
        require(items.size() == 3, "raw API list found " + std::to_string(items.size()) + " containers, not 3");
        for (const auto& c : items)
          require(api("DELETE", prefix_ + "/containers/" + c.at("Id").get<std::string>() + "?force=1").status == 204,
                  "rm");
      }));
    }
    add("dispose_scope of 3", v);
  }

public:
  /// MAF_BENCH_PROFILE_COLD=N (issue 24): where a cold acquire's time goes on the Engine API.
  /// N cold acquires (and disposes) of the rows' spec through a backend whose API transport
  /// is wrapped by TimingTransport; prints each acquire's engine calls in order with their
  /// times, then per call the median over the acquires after the first (the first learns the
  /// image: probes, image user, work-directory facts). Beside it, the raw create + start.
  void profile_cold(int n) {
    SandboxSpec::Fields f;
    f.kind = "shell";
    f.image = kImage;
    f.requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut};
    const SandboxSpec spec(std::move(f));
    dk::DockerConfig config;
    config.docker_path = docker_;
    config.transport = dk::DockerTransportKind::Api;
    auto timing = std::make_shared<maf_bench::TimingTransport>(dk::make_api_transport(config));
    auto backend = run_([&] { return dk::DockerSandboxBackend::create(config, timing); });
    timing->take();
    std::vector<std::pair<std::string, std::vector<double>>> per_call;  // in first-seen order
    std::vector<double> totals, raw;
    for (int i = 0; i < n; ++i) {
      const SandboxKey k{scope_, "t", "profile-" + std::to_string(i), ""};
      const double total = timed([&] { run_([&] { return backend->acquire(k, spec); }); });
      const auto calls = timing->take();
      std::printf("acquire %d: %.1f ms, %zu engine calls:", i, total, calls.size());
      double sum = 0;
      for (const auto& c : calls) {
        std::printf(" %s %.1f;", c.op.c_str(), c.ms);
        sum += c.ms;
      }
      std::printf(" (calls %.1f ms, backend %.1f ms)\n", sum, total - sum);
      if (i > 0) {
        totals.push_back(total);
        for (std::size_t j = 0; j < calls.size(); ++j) {
          const std::string key = std::to_string(j) + " " + calls[j].op;
          auto it = std::find_if(per_call.begin(), per_call.end(), [&](const auto& p) { return p.first == key; });
          if (it == per_call.end()) it = per_call.emplace(per_call.end(), key, std::vector<double>{});
          it->second.push_back(calls[j].ms);
        }
      }
      const std::string rn = raw_name("profile", i);
      raw.push_back(timed([&] { raw_api_run(rn); }));
      run_([&] { return backend->dispose(k, std::string("shell"), std::nullopt); });
      timing->take();  // the dispose's calls are not the next acquire's
      require(api("DELETE", prefix_ + "/containers/" + rn + "?force=1").status == 204, "rm");
    }
    if (totals.empty()) return;
    std::printf("\nmedian of acquires 1..%d: %.1f ms; raw create + start %.1f ms (%.2fx)\n", n - 1,
                median(totals), median(raw), median(totals) / median(raw));
    for (auto& [op, ms] : per_call) std::printf("  %-32s %8.1f ms (%zu)\n", op.c_str(), median(ms), ms.size());
  }

  /// Per-call RECLAIM (issue 26): a call directory of 10 small files, made untimed by an exec,
  /// then removed — by Sandbox::reclaim on each transport (the NVI's checks, then the core's
  /// `rm -rf --` as the guest, from `/`), beside a bare `docker exec <c> rm -rf -- <dir>` and
  /// the same exec over the raw Engine API. Target: within 1.2x of the floor.
  void reclaim_rows() {
    SandboxSpec::Fields f;
    f.kind = "reclaim";
    f.image = kImage;
    f.requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::Reclaim};
    const SandboxSpec spec(std::move(f));
    const SandboxKey kc{scope_, "t", "reclaim-cli", ""}, ka{scope_, "t", "reclaim-api", ""};
    auto sc = run_([&] { return cli_->acquire(kc, spec); });
    auto sa = run_([&] { return api_->acquire(ka, spec); });
    const std::string raw = raw_name("reclaim", 0);
    raw_cli_run(raw);
    int serial = 0;
    auto make = [&](const std::string& dir) {
      return "mkdir -p " + dir + " && for i in 1 2 3 4 5 6 7 8 9 10; do echo x > " + dir + "/f$i; done";
    };
    std::vector<double> v[4];
    for (int i = -1; i < runs_; ++i) {  // i = -1: warm-up, not recorded
      const std::string dir = "/tmp/call-" + std::to_string(serial++);
      run_([&] { return sc->exec(make(dir)); });
      run_([&] { return sa->exec(make(dir)); });
      cli({"exec", raw, "sh", "-c", make(dir)});
      const double t[4] = {
          timed([&] { run_([&] { return sc->reclaim(dir, "/", std::chrono::seconds(60)); }); }),
          timed([&] { run_([&] { return sa->reclaim(dir, "/", std::chrono::seconds(60)); }); }),
          timed([&] { cli({"exec", raw, "rm", "-rf", "--", dir}); }), 0.0};
      cli({"exec", raw, "sh", "-c", make(dir)});
      const double raw_api_ms = timed([&] { raw_api_exec(raw, {"rm", "-rf", "--", dir}); });
      const std::string gone = cli({"exec", raw, "sh", "-c", "test ! -e " + dir + " && echo gone"});
      require(gone.rfind("gone", 0) == 0, "the raw API removal left " + dir);
      if (i < 0) continue;
      for (int k = 0; k < 3; ++k) v[k].push_back(t[k]);
      v[3].push_back(raw_api_ms);
    }
    add("reclaim a call directory (10 files)", v);
    sc.reset();
    sa.reset();
  }

  /// Issue 31: time to first byte of a streamed `echo` beside exec-to-completion of the same
  /// `echo`, per transport — alone, where the two should cost about the same, and with a
  /// 300 ms tail after the line, where the stream hands the line over before the end. One
  /// warm sandbox per transport, its backend's transport wrapped by TimingTransport, so each
  /// streamed exec's engine calls and its first chunk at the transport are recorded too (the
  /// difference to the first byte at the handler is the backend's own work before the exec
  /// and the guest wrapper's header). Ours and beside alternate within each round; one
  /// warm-up round is discarded.
  void stream_rows() {
    SandboxSpec::Fields f;
    f.kind = "stream";
    f.image = kImage;
    f.requires_capabilities = {Capability::Exec, Capability::ExecStream};
    const SandboxSpec spec(std::move(f));
    for (const auto kind : {dk::DockerTransportKind::Cli, dk::DockerTransportKind::Api}) {
      const std::string transport = kind == dk::DockerTransportKind::Cli ? "CLI" : "API";
      dk::DockerConfig config;
      config.docker_path = docker_;
      config.transport = kind;
      auto timing = std::make_shared<maf_bench::TimingTransport>(
          kind == dk::DockerTransportKind::Cli ? dk::make_cli_transport(config) : dk::make_api_transport(config));
      auto backend = run_([&] { return dk::DockerSandboxBackend::create(config, timing); });
      const SandboxKey k{scope_, "t", "stream-" + transport, ""};
      auto sb = run_([&] { return backend->acquire(k, spec); });
      for (const std::string shell : {"echo hi", "echo hi; sleep 0.3"}) {
        std::vector<double> ours, beside, at_transport;
        for (int i = -1; i < runs_; ++i) {  // i = -1: warm-up, not recorded
          timing->take();
          double first = -1;
          std::string got;
          const Command command(shell);
          const auto start = Clock::now();
          const auto ended = run_([&] {
            return sb->exec_stream(command, [&](OutputStream, std::string_view bytes) {
              if (first < 0) first = maf_bench::millis(Clock::now() - start);
              got.append(bytes);
            });
          });
          require(first >= 0 && ended.exit_code == 0 && got == "hi\n", "the streamed `" + shell + "` lost its line");
          const auto calls = timing->take();
          const auto chunk = std::find_if(calls.begin(), calls.end(), [](const auto& c) {
            return c.op.find(": first chunk") != std::string::npos;
          });
          require(chunk != calls.end(), "the transport saw no chunk of the streamed `" + shell + "`");
          const double done = timed([&] {
            const Command again(shell);
            require(run_([&] { return sb->exec(again); }).stdout_bytes == "hi\n", "the exec of `" + shell + "` lost its line");
          });
          if (i == 0) {  // what the transport saw of one streamed exec and one exec, for the reading
            std::fprintf(stderr, "  `%s` (%s) streamed:", shell.c_str(), transport.c_str());
            for (const auto& c : calls) std::fprintf(stderr, " %s %.1f;", c.op.c_str(), c.ms);
            std::fprintf(stderr, " exec:");
            for (const auto& c : timing->take()) std::fprintf(stderr, " %s %.1f;", c.op.c_str(), c.ms);
            std::fprintf(stderr, " (ms)\n");
          }
          if (i < 0) continue;
          ours.push_back(first);
          at_transport.push_back(chunk->ms);
          beside.push_back(done);
        }
        const std::string label = shell == "echo hi" ? "`echo`" : "`echo; sleep 0.3`";
        stream_rows_.push_back({"exec_stream " + label + ": first byte", transport,
                                shell == "echo hi" ? "exec of the same `echo` to completion"
                                                   : "exec of the same command to completion",
                                median(ours), median(beside), median(at_transport)});
        const StreamRow& r = stream_rows_.back();
        std::fprintf(stderr, "  %-36s %s first byte %8.1f (at the transport %8.1f)  exec %8.1f ms\n",
                     r.operation.c_str(), transport.c_str(), r.ours, r.at_transport, r.beside);
      }
      sb.reset();
      run_([&] { return backend->dispose(k, std::string("stream"), std::nullopt); });
    }
  }

  /// N conversations at once — acquire, exec `true`, write 1 KiB, collect it, dispose — per
  /// transport on one io_context, beside N threads each running the same steps as bare docker
  /// CLI calls (run, exec, cp in, cp out, rm). No raw-API column: the raw HTTP client is one
  /// connection, not N.
  void throughput(int conversations, int batches) {
    SandboxSpec::Fields f;
    f.kind = "conversation";
    f.image = kImage;
    f.requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut};
    f.declared_outputs = {DeclaredOutput{.path = "out-1.txt", .media_type = "text/plain"}};
    const SandboxSpec spec(std::move(f));
    const std::string content(1024, 'c');
    const std::string tar = tar_of("tmp/out-1.txt", content);
    std::vector<double> v[4];
    for (int b = 0; b < batches; ++b) {
      for (auto* backend : {&cli_, &api_}) {
        const std::string thread = "tp-" + std::to_string(conversations) + "-" + std::to_string(b) +
                                   (backend == &cli_ ? "-cli" : "-api");
        v[backend == &cli_ ? 0 : 1].push_back(timed([&] {
          boost::asio::io_context io;
          int finished = 0;
          for (int i = 0; i < conversations; ++i) {
            std::string agent(1, 'c');
            agent += std::to_string(i);
            boost::asio::co_spawn(io, conversation(**backend, SandboxKey{scope_, thread, agent, ""}, spec, content, finished),
                                  [](std::exception_ptr e) {
                                    if (e) std::rethrow_exception(e);
                                  });
          }
          io.run();
          require(finished == conversations, "a conversation did not finish");
        }));
      }
      std::vector<std::string> names;
      for (int i = 0; i < conversations; ++i)
        names.push_back(raw_name("tp-" + std::to_string(conversations) + "-" + std::to_string(b) + "-", i));
      v[2].push_back(timed([&] {
        std::vector<std::thread> threads;
        for (const auto& n : names)
          threads.emplace_back([&, n] {
            spawn_docker({"run", "-d", "--name", n, "--network", "none", "--security-opt", "no-new-privileges",
                          "--pids-limit", "512", "--label", "maf-sandbox.scope=" + scope_, kImage, "sleep", "infinity"});
            spawn_docker({"exec", n, "true"});
            spawn_docker({"cp", "-", n + ":/"}, tar);
            spawn_docker({"cp", n + ":/tmp/out-1.txt", "-"});
            spawn_docker({"rm", "-f", n});
          });
        for (auto& t : threads) t.join();
      }));
      v[3].push_back(std::nan(""));
    }
    add("throughput, " + std::to_string(conversations) + " conversations (" + std::to_string(batches) + " batch" +
            (batches == 1 ? "" : "es") + ")",
        v, conversations);
  }

private:
  static boost::asio::awaitable<void> conversation(dk::DockerSandboxBackend& backend, SandboxKey k, SandboxSpec spec,
                                                   std::string content, int& finished) {
    auto sb = co_await backend.acquire(k, spec);
    std::vector<std::string> argv{"true"};
    auto r = co_await sb->exec(std::move(argv));
    require(r.exit_code == 0, "exec failed");
    const std::string path = "out-1.txt";  // named locals, not temporaries, inside co_await (GCC 12)
    co_await sb->write_file(path, std::move(content));
    auto sink = std::make_shared<DiscardingSink>();
    auto landed = co_await collect_outputs(*sb, spec, sink);
    require(landed.size() == 1, "collect failed");
    sb.reset();
    const std::optional<std::string> any_kind, any_instance;
    auto failure = co_await backend.dispose(k, any_kind, any_instance);
    require(!failure, "dispose failed");
    ++finished;
  }

  /// The docker CLI spawned bare and waited for (thread-safe, unlike the runner). Throws on a
  /// non-zero exit.
  void spawn_docker(const std::vector<std::string>& args, const std::string& stdin_bytes = {}) const {
    require(maf_bench::spawn_and_wait(docker_, args, stdin_bytes) == 0, "docker " + args[0] + " failed");
  }

public:

  // Peak RSS per phase and transport, as bench_process measures it (harness.hpp).
  void memory() {
    SandboxSpec::Fields f;
    f.kind = "memory";
    f.image = kImage;
    f.requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut};
    const SandboxSpec spec(std::move(f));
    const std::size_t big = std::size_t{32} << 20, out = std::size_t{8} << 20;
    const std::string print8 = "head -c " + std::to_string(out) + " /dev/zero";
    for (auto* backend : {&cli_, &api_}) {
      const std::string transport = backend == &cli_ ? "CLI" : "API";
      const SandboxKey k{scope_, "t", "memory-" + transport, ""};
      auto sb = run_([&] { return (*backend)->acquire(k, spec); });
      memory_.push_back(maf_bench::memory_phase("write 32 MiB into the sandbox (" + transport + ")", big, [&] {
        run_.run_void([&]() -> boost::asio::awaitable<void> {
          std::string payload(big, 'm');
          co_await sb->write_file("big.bin", std::move(payload));
        });
      }));
      memory_.push_back(maf_bench::memory_phase("read 32 MiB out of the sandbox (" + transport + ")", big, [&] {
        run_.run_void([&]() -> boost::asio::awaitable<void> {
          auto back = co_await sb->read_file("big.bin", ".", std::int64_t{64} << 20);
          require(back.size() == big, "32 MiB read lost bytes");
        });
      }));
      memory_.push_back(maf_bench::memory_phase("exec printing 8 MiB to stdout (" + transport + ")", out, [&] {
        run_.run_void([&]() -> boost::asio::awaitable<void> {
          const Command print(print8);  // a named local inside co_await (GCC 12)
          auto r = co_await sb->exec(print);
          require(r.exit_code == 0 && r.stdout_bytes.size() == out, "8 MiB exec lost bytes");
        });
      }));
      sb.reset();
      run_([&] { return (*backend)->dispose(k, std::string("memory"), std::nullopt); });
    }
  }

  void print() const {
    if (!rows_.empty()) {  // MAF_BENCH_STREAM_ONLY has none
      std::printf("Median of %d runs (cold and dispose_scope rows: %d; throughput rows: the batches they name), "
                  "milliseconds, one engine, one process. Raw floors: `docker exec|cp|run|rm|ps` spawned bare, and "
                  "the same Engine-API exchanges through the backend's HTTP client — no freeze, no ancestor walk, "
                  "no probes (warm acquire's floors: a lookup and a stat of two directories, the work-directory "
                  "check a warm acquire is).\n\n",
                  runs_, std::max(3, runs_ / 2));
      std::printf("| operation | CLI transport | API transport | raw CLI | raw API | API ÷ CLI transport | "
                  "API ÷ raw CLI |\n|---|---:|---:|---:|---:|---:|---:|\n");
      auto ms = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", v);
        return std::isnan(v) ? std::string("—") : std::string(buf);
      };
      for (const auto& r : rows_)
        std::printf("| %s | %.1f | %.1f | %.1f | %s | %.2f | %.2f |\n", r.operation.c_str(), r.cli, r.api, r.raw_cli,
                    ms(r.raw_api).c_str(), r.api / r.cli, r.api / r.raw_cli);
      for (const auto& r : rows_)
        if (r.conversations > 0)
          std::printf("\n%s: %.2f conversations/s over the CLI transport, %.2f over the API transport, %.2f raw CLI.",
                      r.operation.c_str(), r.conversations / r.cli * 1e3, r.conversations / r.api * 1e3,
                      r.conversations / r.raw_cli * 1e3);
      std::printf("\n");
    }
    if (!stream_rows_.empty()) {
      std::printf("\nStreaming exec (issue 31): median of %d runs after one warm-up, milliseconds; ours and beside "
                  "alternate within each run, on one warm sandbox per transport. *At the transport*: the first "
                  "chunk reaching the backend from its transport (timing_transport.hpp), the rest of the first "
                  "byte being the backend's own work before the exec and the guest wrapper's header.\n\n",
                  runs_);
      std::printf("| operation | transport | ours (ms) | at the transport (ms) | beside (ms) | ratio | beside is |\n"
                  "|---|---|---:|---:|---:|---:|---|\n");
      for (const auto& r : stream_rows_)
        std::printf("| %s | %s | %.1f | %.1f | %.1f | %.2f | %s |\n", r.operation.c_str(), r.transport.c_str(),
                    r.ours, r.at_transport, r.beside, r.ours / r.beside, r.beside_is.c_str());
    }
    if (!memory_.empty()) maf_bench::print_memory(memory_);
  }

private:
  void add(const std::string& op, std::vector<double> (&v)[4], int conversations = 0) {
    rows_.push_back({op, median(v[0]), median(v[1]), median(v[2]), median(v[3]), conversations});
    const Row& r = rows_.back();
    std::fprintf(stderr, "  %-36s cli %8.1f  api %8.1f  raw-cli %8.1f  raw-api %8.1f ms\n", op.c_str(), r.cli, r.api,
                 r.raw_cli, r.raw_api);
  }

  void row(const std::string& op, const std::function<void()>& c, const std::function<void()>& a,
           const std::function<void()>& rc, const std::function<void()>& ra) {
    c(), a(), rc(), ra();  // warm-up: first-use costs (binding, pools) stay out of the medians
    std::vector<double> v[4];
    for (int i = 0; i < runs_; ++i) {
      v[0].push_back(timed(c));
      v[1].push_back(timed(a));
      v[2].push_back(timed(rc));
      v[3].push_back(timed(ra));
    }
    add(op, v);
  }

  std::string raw_name(const std::string& what, int i) const { return scope_ + "-raw-" + what + "-" + std::to_string(i); }

  static std::string tar_of(const std::string& path, const std::string& content) {
    support::TarWriter tar;
    tar.add_file(path, content, {.mode = 0644});
    return std::move(tar).finish();
  }

  std::string cli(std::vector<std::string> args, std::string stdin_bytes = {}) {
    support::SubprocessOptions o;
    o.argv = {docker_};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    if (!stdin_bytes.empty()) o.stdin_bytes = std::move(stdin_bytes);
    o.timeout = std::chrono::seconds(60);
    auto r = run_([&] { return support::run_subprocess(o); });
    require(r.exit_code == 0, "docker " + args[0] + " failed: " + r.stderr_bytes);
    return r.stdout_bytes;
  }

  dk::detail::HttpResponse api(const std::string& method, const std::string& target, std::string body = {},
                               std::string content_type = {}, std::function<bool(std::string_view)> sink = {}) {
    dk::detail::HttpRequest q;
    q.method = method;
    q.target = target;
    q.body = std::move(body);
    q.content_type = std::move(content_type);
    q.deadline = Clock::now() + std::chrono::seconds(60);
    return run_([&] { return http_->request(q, sink); });
  }

  void raw_cli_run(const std::string& name) {
    cli({"run", "-d", "--name", name, "--network", "none", "--security-opt", "no-new-privileges", "--pids-limit",
         "512", "--label", "maf-sandbox.scope=" + scope_, kImage, "sleep", "infinity"});
  }

  void raw_api_run(const std::string& name) {
    nlohmann::json body = {{"Image", kImage},
                           {"Cmd", nlohmann::json::array({"sleep", "infinity"})},
                           {"Labels", {{"maf-sandbox.scope", scope_}}},
                           {"HostConfig",
                            {{"NetworkMode", "none"}, {"PidsLimit", 512}, {"SecurityOpt", nlohmann::json::array({"no-new-privileges"})}}}};
    require(api("POST", prefix_ + "/containers/create?name=" + name, body.dump(), "application/json").status == 201,
            "create");
    require(api("POST", prefix_ + "/containers/" + name + "/start", "", "application/json").status == 204, "start");
  }

  void raw_api_exec(const std::string& name, const std::vector<std::string>& cmd = {"true"}) {
    const nlohmann::json body = {{"AttachStdout", true}, {"AttachStderr", true}, {"Cmd", cmd}};
    auto created = api("POST", prefix_ + "/containers/" + name + "/exec", body.dump(), "application/json");
    require(created.status == 201, "exec create");
    const std::string id = nlohmann::json::parse(created.body).at("Id").get<std::string>();
    api("POST", prefix_ + "/exec/" + id + "/start", R"({"Detach":false,"Tty":false})", "application/json",
        [](std::string_view) { return true; });
    require(api("GET", prefix_ + "/exec/" + id + "/json").status == 200, "exec inspect");
  }

  void raw_api_write(const std::string& name, const std::string& dest, const std::string& content) {
    require(api("PUT", prefix_ + "/containers/" + name + "/archive?path=" + dest, tar_of("tmp/bench.txt", content),
                "application/x-tar")
                    .status == 200,
            "archive put");
  }

  int runs_;
  std::string scope_;
  std::string docker_;
  std::string prefix_;
  BlockingRunner run_;
  std::unique_ptr<dk::detail::HttpClient> http_;
  std::shared_ptr<dk::DockerSandboxBackend> cli_, api_;
  std::vector<Row> rows_;
  std::vector<StreamRow> stream_rows_;
  std::vector<maf_bench::MemoryRow> memory_;
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 10;
  // Interrupted or killed: every container of ours and of the raw floors carries the scope
  // label (Bench's scope).
  maf_bench::sweep_on_interrupt("label=maf-sandbox.scope=bench-" + std::to_string(::getpid()));
  try {
    Bench bench(runs);
    std::fprintf(stderr, "docker backend, %d runs per warm operation\n", runs);
    // MAF_BENCH_MEMORY_ONLY=1: the memory phases alone (minutes less, for checking a fix).
    const char* memory_only = std::getenv("MAF_BENCH_MEMORY_ONLY");
    // MAF_BENCH_RECLAIM_ONLY=1: the per-call RECLAIM row alone (issue 26).
    const char* reclaim_only = std::getenv("MAF_BENCH_RECLAIM_ONLY");
    // MAF_BENCH_STREAM_ONLY=1: the streaming rows alone (issue 31).
    const char* stream_only = std::getenv("MAF_BENCH_STREAM_ONLY");
    const char* profile_cold = std::getenv("MAF_BENCH_PROFILE_COLD");
    if (profile_cold && std::atoi(profile_cold) > 0) {
      bench.profile_cold(std::max(2, std::atoi(profile_cold)));
      return 0;
    }
    if (reclaim_only && std::string(reclaim_only) == "1") {
      bench.reclaim_rows();
    } else if (stream_only && std::string(stream_only) == "1") {
      bench.stream_rows();
    } else {
      if (!memory_only || std::string(memory_only) != "1") {
        bench.all();
        bench.reclaim_rows();
        bench.stream_rows();
        for (const int n : {8, 32}) bench.throughput(n, maf_bench::throughput_batches(n));
      }
      bench.memory();
    }
    bench.print();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_docker: %s\n", e.what());
    return 1;
  }
  return 0;
}
