// Core microbenchmarks (issue 14). Every operation runs beside its floor — the irreducible
// work done by hand — in the same process, so scripts/bench can report a ratio that holds
// on a noisy shared machine. Names pair up: `core/<op>` and `floor/<op>`.
//
// The binary replaces the global operator new, so each benchmark also reports `allocs`,
// heap allocations per iteration (the shared core resolves operator new to this one too).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/sandboxed_tool.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// Not inlined: GCC would otherwise pair the inlined malloc/free against new/delete and warn
// (-Wmismatched-new-delete) about a mismatch that the replacement itself makes correct.
[[gnu::noinline]] void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new[](std::size_t size) { return ::operator new(size); }
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace maf::sandbox;
using testing::InProcessSandbox;
using testing::InProcessSandboxBackend;
using testing::InProcessSandboxBackendOptions;
using testing::InProcessSandboxOptions;

// Counts allocations over the timed loop only; set-up outside it is not charged.
class AllocationMeter {
public:
  explicit AllocationMeter(benchmark::State& state) : state_(state), start_(g_allocations.load()) {}
  ~AllocationMeter() {
    state_.counters["allocs"] =
        benchmark::Counter(static_cast<double>(g_allocations.load() - start_), benchmark::Counter::kAvgIterations);
  }

private:
  benchmark::State& state_;
  long start_;
};

// ---- ensure_can_serve ------------------------------------------------------------------

SandboxSpec serving_spec() {
  return SandboxSpec({.kind = "python",
                      .requires_capabilities = {Capability::Exec, Capability::FilesOut},
                      .requires_os_family = OsFamily::Posix});
}

BackendDeclarations serving_declarations() {
  BackendDeclarations d = testing::kFakeBackendDeclarations;
  d.capabilities = testing::kInProcessCapabilities;
  d.os_families = {OsFamily::Posix};
  return d;
}

// `count` backends; all but the last refuse (below the floor), so PER_SPEC walks them all.
std::vector<std::shared_ptr<SandboxBackend>> backends_passing_last(int count) {
  std::vector<std::shared_ptr<SandboxBackend>> out;
  for (int i = 0; i < count; ++i) {
    const bool last = i + 1 == count;
    out.push_back(std::make_shared<InProcessSandboxBackend>(InProcessSandboxBackendOptions{
        .name = "backend-" + std::to_string(i),
        .isolation = last ? "container" : "os_process",
        .declarations = serving_declarations()}));
  }
  return out;
}

SandboxRouter router_of(int count) {
  RouterOptions options = RouterOptions::lowered_floor(Isolation::Container, LowerIsolationFloor{});
  if (count > 1) options.selection = Selection::PerSpec;
  return SandboxRouter(backends_passing_last(count), options);
}

void core_ensure_can_serve(benchmark::State& state, int backends) {
  const auto router = router_of(backends);
  const SandboxSpec spec = serving_spec();
  AllocationMeter meter(state);
  for (auto _ : state) router.ensure_can_serve(spec);
}

// The floor: the same decision with everything known in advance — rung parsed, no ordering
// of checks, no messages — one virtual declarations() call and bit tests per backend.
bool hand_check(const SandboxBackend& backend, Isolation rung, const SandboxSpec& spec) {
  const BackendDeclarations& d = backend.declarations();
  return meets_floor(rung, Isolation::Container) && spec.requires_capabilities().subset_of(d.capabilities) &&
         d.os_families.contains(OsFamily::Posix) && d.egress_modes.contains(spec.egress()) &&
         spec.files_out().within(d.limits.files_out) && spec.files_in().within(d.limits.files_in);
}

void floor_ensure_can_serve(benchmark::State& state, int count) {
  const auto backends = backends_passing_last(count);
  std::vector<Isolation> rungs;
  for (const auto& b : backends) rungs.push_back(*try_parse_enum<Isolation>(b->isolation()));
  const SandboxSpec spec = serving_spec();
  AllocationMeter meter(state);
  for (auto _ : state) {
    for (std::size_t i = 0; i < backends.size(); ++i)
      if (hand_check(*backends[i], rungs[i], spec)) {
        benchmark::DoNotOptimize(i);
        break;
      }
  }
}

BENCHMARK_CAPTURE(core_ensure_can_serve, one, 1)->Name("core/ensure_can_serve/backends:1");
BENCHMARK_CAPTURE(floor_ensure_can_serve, one, 1)->Name("floor/ensure_can_serve/backends:1");
BENCHMARK_CAPTURE(core_ensure_can_serve, sixteen, 16)->Name("core/ensure_can_serve/backends:16");
BENCHMARK_CAPTURE(floor_ensure_can_serve, sixteen, 16)->Name("floor/ensure_can_serve/backends:16");

// ---- SandboxSpec construction ------------------------------------------------------------

// Both sides copy the same raw Fields (the constructor takes them by value); ours then
// validates and canonicalises, the floor only hands the copy on.
SandboxSpec::Fields minimal_fields() { return {.kind = "python"}; }

SandboxSpec::Fields egress_fields() {
  // Eight entries: mixed-case duplicates to collapse, an all-methods rule to fold into a bare
  // host, and a method-scoped rule.
  return {.kind = "python",
          .egress_allow = {std::string("api.example.com"), std::string("API.Example.com"),
                           std::string("pypi.org"), EgressRule("files.pythonhosted.org"),
                           std::string("github.com"), EgressRule("uploads.example.com", {{"PUT", "POST"}}),
                           std::string("objects.githubusercontent.com"), std::string("PyPI.org")},
          .egress = Egress::Allowlist};
}

void core_spec(benchmark::State& state, SandboxSpec::Fields (*make)()) {
  const SandboxSpec::Fields fields = make();
  AllocationMeter meter(state);
  for (auto _ : state) {
    SandboxSpec spec(fields);
    benchmark::DoNotOptimize(spec);
  }
}

void floor_spec(benchmark::State& state, SandboxSpec::Fields (*make)()) {
  const SandboxSpec::Fields fields = make();
  AllocationMeter meter(state);
  for (auto _ : state) {
    SandboxSpec::Fields copy(fields);
    benchmark::DoNotOptimize(copy);
  }
}

BENCHMARK_CAPTURE(core_spec, minimal, &minimal_fields)->Name("core/spec_construct/minimal");
BENCHMARK_CAPTURE(floor_spec, minimal, &minimal_fields)->Name("floor/spec_construct/minimal");
BENCHMARK_CAPTURE(core_spec, egress, &egress_fields)->Name("core/spec_construct/egress_allow:8");
BENCHMARK_CAPTURE(floor_spec, egress, &egress_fields)->Name("floor/spec_construct/egress_allow:8");

// ---- validate_artifact_name ----------------------------------------------------------------

const std::string kShortName = "reports/2026/summary-final.csv";
const std::string kLongName = [] {
  std::string n;
  while (n.size() < 200) n += "segment-ünïcødé/";
  return n + "data.parquet";
}();

void core_validate_name(benchmark::State& state, const std::string* name) {
  AllocationMeter meter(state);
  for (auto _ : state) validate_artifact_name(*name);
}

// The floor: one pass over the bytes looking for anything a name may not contain.
void floor_validate_name(benchmark::State& state, const std::string* name) {
  AllocationMeter meter(state);
  for (auto _ : state) {
    const bool bad = std::any_of(name->begin(), name->end(), [](char c) {
      return c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    benchmark::DoNotOptimize(bad);
  }
}

BENCHMARK_CAPTURE(core_validate_name, short, &kShortName)->Name("core/validate_artifact_name/bytes:30");
BENCHMARK_CAPTURE(floor_validate_name, short, &kShortName)->Name("floor/validate_artifact_name/bytes:30");
BENCHMARK_CAPTURE(core_validate_name, long, &kLongName)->Name("core/validate_artifact_name/bytes:220");
BENCHMARK_CAPTURE(floor_validate_name, long, &kLongName)->Name("floor/validate_artifact_name/bytes:220");

// ---- collect_outputs -----------------------------------------------------------------------

constexpr int kOutputs = 64;

class DiscardingSink final : public OutputSink {
public:
  boost::asio::awaitable<LandedArtifact> deliver(Artifact artifact) override {
    co_return LandedArtifact{artifact.name, artifact.name, std::nullopt};
  }
};

std::shared_ptr<InProcessSandbox> seeded_sandbox() {
  InProcessSandboxOptions options;
  for (int i = 0; i < kOutputs; ++i)
    options.seed_files.emplace("out/file-" + std::to_string(i) + ".txt", std::string(1024, 'x'));
  return std::make_shared<InProcessSandbox>(std::move(options));
}

void core_collect_outputs(benchmark::State& state) {
  auto sandbox = seeded_sandbox();
  SandboxSpec::Fields fields{.kind = "python"};
  for (int i = 0; i < kOutputs; ++i) fields.declared_outputs.push_back({.path = "out/file-" + std::to_string(i) + ".txt"});
  const SandboxSpec spec(std::move(fields));
  auto sink = std::make_shared<DiscardingSink>();
  BlockingRunner run;
  AllocationMeter meter(state);
  for (auto _ : state) {
    auto landed = run([&] { return collect_outputs(*sandbox, spec, sink); });
    if (landed.size() != kOutputs) state.SkipWithError("collect_outputs landed the wrong count");
  }
}

// The floor: the same 64 files read once each through the same sandbox and runner (read_file
// stats before it reads), with none of the declaration checks, caps, tallies or deliveries.
void floor_collect_outputs(benchmark::State& state) {
  auto sandbox = seeded_sandbox();
  BlockingRunner run;
  std::vector<std::string> paths;
  for (int i = 0; i < kOutputs; ++i) paths.push_back("out/file-" + std::to_string(i) + ".txt");
  AllocationMeter meter(state);
  for (auto _ : state) {
    run.run_void([&]() -> boost::asio::awaitable<void> {
      for (const auto& p : paths) {
        auto bytes = co_await sandbox->read_file(p, ".", kDefaultTransferLimits.max_bytes_per_file());
        benchmark::DoNotOptimize(bytes);
      }
    });
  }
}

BENCHMARK(core_collect_outputs)->Name("core/collect_outputs/outputs:64")->Unit(benchmark::kMicrosecond);
BENCHMARK(floor_collect_outputs)->Name("floor/collect_outputs/outputs:64")->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

// ---- tool invoke (issue 26) ----------------------------------------------------------------
// `invoke` beside the backend work it wraps, on the in-process double: the floor acquires
// through the router, runs the one exec and reclaims a directory — what the body and the
// RECLAIM rung do — so the difference is the tool layer itself (name and schema check,
// admission, the call record, guest_call_path, release, label stamping).

struct ToolBench {
  std::shared_ptr<InProcessSandboxBackend> backend;
  std::shared_ptr<SandboxRouter> router;
  SandboxSpec spec{SandboxSpec::Fields{.kind = "shell"}};
  SandboxKey key{"tenant", "conv", "agent", ""};
  ToolBench() {
    CapabilitySet caps = testing::kInProcessCapabilities;
    caps.insert(Capability::Reclaim);
    BackendDeclarations d = testing::kFakeBackendDeclarations;
    d.capabilities = caps;
    auto sandbox = std::make_shared<InProcessSandbox>(InProcessSandboxOptions{.capabilities = caps});
    backend = std::make_shared<InProcessSandboxBackend>(InProcessSandboxBackendOptions{.sandbox = sandbox, .declarations = d});
    router = std::make_shared<SandboxRouter>(std::vector<std::shared_ptr<SandboxBackend>>{backend},
                                             RouterOptions::lowered_floor(Isolation::None, LowerIsolationFloor{}));
  }
};

void core_tool_invoke(benchmark::State& state) {
  ToolBench b;
  CallerContext context{.current_scope = [] { return std::string("tenant"); },
                        .current_thread_id = [] { return std::optional<std::string>("conv"); },
                        .list_files = {}};
  SandboxedToolOptions options;
  options.cleanup.rung = Cleanup::Reclaim;
  options.input_schema = {{"type", "object"},
                          {"properties", {{"command", {{"type", "string"}}}}},
                          {"required", {"command"}}};
  const SandboxedTool tool = sandboxed_tool(
      [](SandboxToolSession session, nlohmann::json) -> boost::asio::awaitable<ToolResult> {
        auto sandbox = co_await session.acquire();
        const std::string dir = session.guest_call_path();
        co_await (*sandbox)->exec("true", ".");
        co_return ToolResult::text(dir);
      },
      b.router, context, "agent", b.spec, "shell", options);
  const ToolCall call{"call-1", "shell", nlohmann::json{{"command", "true"}}};
  BlockingRunner run;
  AllocationMeter meter(state);
  for (auto _ : state) {
    ToolResult r = run([&] { return tool.invoke(call); });
    benchmark::DoNotOptimize(r);
  }
}

void floor_tool_invoke(benchmark::State& state) {
  ToolBench b;
  BlockingRunner run;
  AllocationMeter meter(state);
  for (auto _ : state) {
    run([&]() -> boost::asio::awaitable<void> {
      auto sandbox = co_await b.router->acquire(b.key, b.spec);
      co_await sandbox->exec("true", ".");
      co_await sandbox->reclaim("/maf-sandbox/work/0123456789ab", ".");
    });
  }
}

BENCHMARK(core_tool_invoke)->Name("core/tool_invoke/reclaim");
BENCHMARK(floor_tool_invoke)->Name("floor/tool_invoke/reclaim");
