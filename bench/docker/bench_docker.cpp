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
// Memory (issue 14): the peak resident set above the idle baseline while 32 MiB goes into a
// sandbox and back, and while an exec returns 8 MiB of stdout, once per transport.
#include <unistd.h>

#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../common/harness.hpp"
#include "docker_http.hpp"
#include "maf/sandbox.hpp"
#include "maf/sandbox/docker/backend.hpp"
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
  double cli, api, raw_cli, raw_api;  // medians, ms
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
    for (const auto& name : raw_names_) try {
        cli({"rm", "-f", name});
      } catch (...) {
      }
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

    const Command true_argv(std::vector<std::string>{"true"});
    row("warm exec `true`", [&] { run_([&] { return sc->exec(true_argv); }); },
        [&] { run_([&] { return sa->exec(true_argv); }); }, [&] { cli({"exec", raw, "true"}); },
        [&] { raw_api_exec(raw); });
    row("write 1 KiB (incl. freeze)", [&] { run_([&] { return sc->write_file("bench.txt", kib); }); },
        [&] { run_([&] { return sa->write_file("bench.txt", kib); }); },
        [&] { cli({"cp", "-", raw + ":/"}, tar_of("tmp/bench.txt", kib)); },
        [&] { raw_api_write(raw, "/", kib); });
    row("stat 1 KiB file (incl. freeze)", [&] { require(run_([&] { return sc->stat_file("bench.txt"); }).has_value(), "stat"); },
        [&] { require(run_([&] { return sa->stat_file("bench.txt"); }).has_value(), "stat"); },
        [&] { cli({"cp", raw + ":/tmp/bench.txt", "-"}); },
        [&] { require(api("HEAD", prefix_ + "/containers/" + raw + "/archive?path=/tmp/bench.txt").status == 200, "head"); });
    row("read 1 KiB (incl. freeze)", [&] { run_([&] { return sc->read_file("bench.txt", ".", 1 << 20); }); },
        [&] { run_([&] { return sa->read_file("bench.txt", ".", 1 << 20); }); },
        [&] { cli({"cp", raw + ":/tmp/bench.txt", "-"}); },
        [&] { require(api("GET", prefix_ + "/containers/" + raw + "/archive?path=/tmp/bench.txt").status == 200, "get"); });
    auto sink = std::make_shared<DiscardingSink>();
    row("collect 3 outputs of 1 KiB", [&] { run_([&] { return collect_outputs(*sc, spec, sink); }); },
        [&] { run_([&] { return collect_outputs(*sa, spec, sink); }); },
        [&] {
          for (int i = 0; i < 3; ++i) cli({"cp", raw + ":/tmp/bench.txt", "-"});
        },
        [&] {
          for (int i = 0; i < 3; ++i) api("GET", prefix_ + "/containers/" + raw + "/archive?path=/tmp/bench.txt");
        });
  }

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
    std::printf("Median of %d runs (cold rows: %d), milliseconds, one engine, one process. Raw floors: "
                "`docker exec|cp|run|rm` spawned bare, and the same Engine-API exchanges through the "
                "backend's HTTP client — no freeze, no ancestor walk, no probes.\n\n",
                runs_, std::max(3, runs_ / 2));
    std::printf("| operation | CLI transport | API transport | raw CLI | raw API | API ÷ CLI transport | "
                "API ÷ raw CLI |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& r : rows_)
      std::printf("| %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |\n", r.operation.c_str(), r.cli, r.api, r.raw_cli,
                  r.raw_api, r.api / r.cli, r.api / r.raw_cli);
    if (!memory_.empty()) maf_bench::print_memory(memory_);
  }

private:
  void add(const std::string& op, std::vector<double> (&v)[4]) {
    rows_.push_back({op, median(v[0]), median(v[1]), median(v[2]), median(v[3])});
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

  std::string raw_name(const std::string& what, int i) {
    raw_names_.push_back(scope_ + "-raw-" + what + "-" + std::to_string(i));
    return raw_names_.back();
  }

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

  void raw_api_exec(const std::string& name) {
    const nlohmann::json body = {{"AttachStdout", true}, {"AttachStderr", true}, {"Cmd", nlohmann::json::array({"true"})}};
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
  std::vector<std::string> raw_names_;
  std::vector<Row> rows_;
  std::vector<maf_bench::MemoryRow> memory_;
};

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 10;
  try {
    Bench bench(runs);
    std::fprintf(stderr, "docker backend, %d runs per warm operation\n", runs);
    bench.all();
    bench.memory();
    bench.print();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_docker: %s\n", e.what());
    return 1;
  }
  return 0;
}
