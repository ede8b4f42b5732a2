// What the default path skips (issue 24; docker.md "What the default path skips"): where
// the freeze is taken — the warm check, the collection batch —, a stat's 404, the per-image
// probe cache, the work directory of a known image uploaded before the start, and
// dispose_scope's overlapping teardowns, against scripted engines that count their calls.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "maf/sandbox/docker/backend.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/support/labels.hpp"
#include "maf/sandbox/support/sleep.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "maf/sandbox/sync.hpp"
#include "recording_transport.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::docker;

namespace {

constexpr std::uint32_t kGoDir = 1u << 31, kGoSymlink = 1u << 27;

/// An engine with one running container, a guest tree of directories and files answered by
/// the body-less stat (a 404 for anything else) and by the tar plane, and counters.
class ScriptedEngine final : public docker_test::RecordingTransport {
public:
  std::string container_id = std::string(64, 'a');
  std::string image_id = "sha256:" + std::string(64, 'b');
  std::set<std::string> dirs{"/maf-sandbox", "/maf-sandbox/work"};
  std::map<std::string, std::string> files;
  std::set<std::string> links;
  bool running = true;
  int pauses = 0, unpauses = 0, puts = 0, gets = 0, execs = 0, creates = 0;
  bool fail_pause = false;
  std::function<void()> on_pause;  ///< what a guest does the moment the freeze is asked for
  // The Engine API's split create and start (issue 24), when `split`: a created container
  // holds `image_dirs` and runs nothing until start_created, which answers AlreadyRunning
  // when `started_by_another` (a 304).
  bool split = false, started_by_another = false;
  std::set<std::string> image_dirs;
  int puts_before_start = 0;

  bool creates_unstarted() const noexcept override { return split; }
  boost::asio::awaitable<CreateResult> create_unstarted(CreateRequest q) override {
    ++creates;
    add(q.name, container_id, {});
    dirs = image_dirs;
    running = false;
    co_return CreateResult{CreateOutcome::Created, {}};
  }
  boost::asio::awaitable<StartOutcome> start_created(std::string, std::string&) override {
    running = true;
    co_return started_by_another ? StartOutcome::AlreadyRunning : StartOutcome::Started;
  }

  boost::asio::awaitable<std::string> endpoint() override { co_return "tcp://freeze-scope.test:2375"; }
  boost::asio::awaitable<std::optional<ContainerState>> container_state(std::string c) override {
    calls.push_back("state " + c);
    if (!present(c)) co_return std::nullopt;
    co_return ContainerState{container_id, running ? "running" : "exited", running, false, image_id};
  }
  boost::asio::awaitable<CreateResult> create_and_start(CreateRequest q) override {
    ++creates;
    add(q.name, container_id, {});
    running = true;
    co_return CreateResult{CreateOutcome::Created, {}};
  }
  boost::asio::awaitable<bool> start(std::string, std::string&) override {
    running = true;
    co_return true;
  }
  boost::asio::awaitable<void> pause(std::string c) override {
    ++pauses;
    if (on_pause) on_pause();
    if (fail_pause) throw OSError("docker API pause " + c + " failed (HTTP 500): cgroup gone");
    co_return;
  }
  boost::asio::awaitable<void> unpause(std::string) override {
    ++unpauses;
    co_return;
  }
  boost::asio::awaitable<ExecOutcome> exec(ExecCall) override {
    ++execs;
    co_return ExecOutcome{};
  }
  boost::asio::awaitable<PathStat> path_stat(std::string, std::string path) override {
    if (dirs.contains(path)) co_return PathStat{PathStatStatus::Ok, kGoDir, 4096};
    if (links.contains(path)) co_return PathStat{PathStatStatus::Ok, kGoSymlink | 0777, 1};
    if (auto it = files.find(path); it != files.end())
      co_return PathStat{PathStatStatus::Ok, 0644, static_cast<std::int64_t>(it->second.size())};
    co_return PathStat{PathStatStatus::NotFound};
  }
  boost::asio::awaitable<ArchiveGet> archive_get(std::string, std::string path, std::size_t limit) override {
    ++gets;
    support::TarWriter tar;
    const std::string base = path.substr(path.rfind('/') + 1);
    if (dirs.contains(path))
      tar.add_directory(base, {.mode = 0755});
    else if (auto it = files.find(path); it != files.end())
      tar.add_file(base, it->second, {.mode = 0644});
    else
      co_return ArchiveGet{ArchiveStatus::Absent, {}, false};
    std::string bytes = std::move(tar).finish();
    const bool cut = bytes.size() > limit;
    if (cut) bytes.resize(limit);
    co_return ArchiveGet{ArchiveStatus::Ok, std::move(bytes), cut};
  }
  boost::asio::awaitable<void> archive_put(std::string, std::string, std::string) override {
    ++puts;
    if (!running) ++puts_before_start;
    dirs.insert("/maf-sandbox");
    dirs.insert("/maf-sandbox/work");
    co_return;
  }
  boost::asio::awaitable<void> archive_put_upload(std::string, std::string, TarUpload) override {
    ++puts;
    co_return;
  }
};

class KeepingSink final : public OutputSink {
public:
  boost::asio::awaitable<LandedArtifact> deliver(Artifact artifact) override {
    co_return LandedArtifact{artifact.name, artifact.name, std::nullopt};
  }
};

SandboxSpec spec_with_outputs(int outputs) {
  SandboxSpec::Fields f;
  f.kind = "shell";
  f.image = "img:1";
  f.requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut};
  for (int i = 1; i <= outputs; ++i)
    f.declared_outputs.push_back(DeclaredOutput{.path = "out-" + std::to_string(i) + ".txt", .media_type = "text/plain"});
  return SandboxSpec(std::move(f));
}

struct Rig {
  BlockingRunner run;
  std::shared_ptr<ScriptedEngine> engine = std::make_shared<ScriptedEngine>();
  std::shared_ptr<DockerSandboxBackend> backend = std::make_shared<DockerSandboxBackend>(DockerConfig{}, engine);
  SandboxKey key{"freeze-scope", "t", "a", ""};

  std::shared_ptr<Sandbox> acquire(const SandboxSpec& spec) {
    return run([&] { return backend->acquire(key, spec); });
  }
  /// The container was removed elsewhere: the next acquire creates one, with this ID.
  void gone_then_recreated_as(char id) {
    engine->containers.clear();
    engine->container_id = std::string(64, id);
  }
  void hold_container(const SandboxSpec& spec) {
    engine->add(DockerSandboxBackend::container_name(key, spec.kind()), engine->container_id, {});
  }
  /// A running container whose work directory is whole, acquired, with `outputs` 3-byte
  /// output files in it.
  std::shared_ptr<Sandbox> held(const SandboxSpec& spec, int outputs = 0) {
    hold_container(spec);
    auto sandbox = acquire(spec);
    for (int i = 1; i <= outputs; ++i) engine->files["/maf-sandbox/work/out-" + std::to_string(i) + ".txt"] = "abc";
    return sandbox;
  }
};

}  // namespace

TEST_CASE("issue 24 D-21 [port decision]: a warm acquire whose work directory is whole takes no freeze") {
  Rig r;
  const SandboxSpec spec = spec_with_outputs(0);
  r.hold_container(spec);
  r.acquire(spec);
  CHECK(r.engine->pauses == 0);
  CHECK(r.engine->puts == 0);
  CHECK(r.engine->gets == 0);  // the body-less stat answered every component
}

TEST_CASE("issue 24 D-21: an acquire that must create the work directory decides and writes it under one freeze") {
  Rig r;
  const SandboxSpec spec = spec_with_outputs(0);
  r.hold_container(spec);
  r.engine->dirs.erase("/maf-sandbox/work");
  r.acquire(spec);
  CHECK(r.engine->pauses == 1);
  CHECK(r.engine->unpauses == 1);
  CHECK(r.engine->puts == 1);
}

TEST_CASE("issue 24 D-16, ACQ-4: a work-directory component seen as a link or a file refuses the acquire, writing nothing") {
  // The core's walk (unfrozen: a refusal licenses no write) refuses before Docker's hook runs.
  using Catch::Matchers::Contains;
  Rig r;
  const SandboxSpec spec = spec_with_outputs(0);
  r.hold_container(spec);
  r.engine->dirs = {};
  SECTION("a link") {
    r.engine->links.insert("/maf-sandbox");
    CHECK_THROWS_AS(r.acquire(spec), ValueError);
    CHECK_THROWS_WITH(r.acquire(spec), Contains("backend 'docker': storage base component '/maf-sandbox' of "
                                                "'/maf-sandbox/work' (workload kind 'shell', instance ") &&
                                           Contains(") is a symbolic link, not a real directory; the base is not confined"));
  }
  SECTION("a regular file") {
    r.engine->files["/maf-sandbox"] = "";
    CHECK_THROWS_AS(r.acquire(spec), NotADirectoryError);
    CHECK_THROWS_WITH(r.acquire(spec), Contains("backend 'docker': storage base component '/maf-sandbox' of "
                                                "'/maf-sandbox/work' (workload kind 'shell', instance ") &&
                                           Contains(") is not a directory"));
  }
  CHECK(r.engine->pauses == 0);  // the refusal came from the core's walk: nothing to guard
  CHECK(r.engine->puts == 0);
}

TEST_CASE("issue 24 D-16, D-21: a component a guest swaps in after the unfrozen walk is decided under the freeze, and refused") {
  using Catch::Matchers::Contains;
  Rig r;
  const SandboxSpec spec = spec_with_outputs(0);
  r.hold_container(spec);
  r.engine->dirs = {"/maf-sandbox"};  // the walk finds the base missing: the hook must make it
  SECTION("a link") {
    r.engine->on_pause = [&] {
      r.engine->dirs.erase("/maf-sandbox");
      r.engine->links.insert("/maf-sandbox");
    };
    CHECK_THROWS_WITH(r.acquire(spec), Contains("backend 'docker': storage base component '/maf-sandbox' of "
                                                "'/maf-sandbox/work' (workload kind 'shell', instance " +
                                                r.engine->container_id +
                                                ") is a symbolic link, not a real directory; the base is not confined"));
  }
  SECTION("a regular file") {
    r.engine->on_pause = [&] {
      r.engine->dirs.erase("/maf-sandbox");
      r.engine->files["/maf-sandbox"] = "";
    };
    CHECK_THROWS_AS(r.acquire(spec), NotADirectoryError);
  }
  CHECK(r.engine->pauses == 1);  // the refusal came from the frozen re-walk
  CHECK(r.engine->unpauses == 1);
  CHECK(r.engine->puts == 0);
}

TEST_CASE("issue 24 D-20: a stat's 404 is an absent path only while the same container is there; else the tar plane decides") {
  Rig r;
  auto sandbox = r.held(spec_with_outputs(0));
  r.engine->gets = 0;
  CHECK_FALSE(r.run([&] { return sandbox->stat_file("missing.txt"); }).has_value());
  CHECK(r.engine->gets == 0);  // settled by the container's ID, no tar stream
  r.engine->container_id = std::string(64, 'c');  // replaced under the same name
  CHECK_FALSE(r.run([&] { return sandbox->stat_file("missing.txt"); }).has_value());
  CHECK(r.engine->gets == 1);  // not the container it acquired: the tar plane answered
}

TEST_CASE("issue 24 D-21 [port decision]: collect_outputs takes one freeze for all its stats and reads") {
  Rig r;
  const SandboxSpec spec = spec_with_outputs(3);
  auto sandbox = r.held(spec, 3);
  auto sink = std::make_shared<KeepingSink>();
  auto landed = r.run([&] { return collect_outputs(*sandbox, spec, sink); });
  CHECK(landed.size() == 3);
  CHECK(r.engine->pauses == 1);
  CHECK(r.engine->unpauses == 1);
  // Outside a collection every call still has a freeze of its own.
  const std::string path = "out-1.txt";
  r.run([&] { return sandbox->read_file(path); });
  r.run([&] { return sandbox->stat_file(path); });
  CHECK(r.engine->pauses == 3);
  CHECK(r.engine->unpauses == 3);
}

TEST_CASE("issue 24 D-21: a collection with nothing declared takes no freeze at all") {
  Rig r;
  const SandboxSpec spec = spec_with_outputs(0);
  auto sandbox = r.held(spec);
  auto sink = std::make_shared<KeepingSink>();
  CHECK(r.run([&] { return collect_outputs(*sandbox, spec, sink); }).empty());
  CHECK(r.engine->pauses == 0);
}

TEST_CASE("issue 24 C-88: a collection whose freeze cannot be taken is SandboxOutputUnreachable naming an output") {
  Rig r;
  const SandboxSpec spec = spec_with_outputs(1);
  auto sandbox = r.held(spec, 1);
  r.engine->fail_pause = true;
  auto sink = std::make_shared<KeepingSink>();
  CHECK_THROWS_AS(r.run([&] { return collect_outputs(*sandbox, spec, sink); }), SandboxOutputUnreachable);
  CHECK_THROWS_WITH(r.run([&] { return collect_outputs(*sandbox, spec, sink); }),
                    Catch::Contains("out-1.txt") && Catch::Contains("cgroup gone"));
}

TEST_CASE("issue 24 D-24 [port decision]: what a fresh container of an image passed, the next fresh one of it is spared") {
  Rig r;
  const SandboxSpec spec = spec_with_outputs(0);
  r.acquire(spec);  // created: the sh probe runs
  CHECK(r.engine->creates == 1);
  CHECK(r.engine->execs == 1);
  r.engine->containers.clear();  // disposed elsewhere; the next acquire creates again
  r.engine->container_id = std::string(64, 'd');
  r.acquire(spec);
  CHECK(r.engine->creates == 2);
  CHECK(r.engine->execs == 1);  // same image ID, fresh container: no probe
  // A container this acquire did not create (restarted) is probed by its own ID.
  r.engine->container_id = std::string(64, 'e');
  r.engine->running = false;
  r.acquire(spec);
  CHECK(r.engine->creates == 2);
  CHECK(r.engine->execs == 2);
}

TEST_CASE("issue 24 §5.4 [port decision]: a fresh container of a known image gets its work directory before its start, unfrozen") {
  Rig r;
  r.engine->split = true;  // the image has neither /maf-sandbox nor its work directory
  const SandboxSpec spec = spec_with_outputs(0);
  // The first fresh container of the image: created, started, then probed and its work
  // directory decided and written under one freeze — what the image lacks is learnt there.
  r.acquire(spec);
  CHECK(r.engine->creates == 1);
  CHECK(r.engine->pauses == 1);
  CHECK(r.engine->puts == 1);
  CHECK(r.engine->puts_before_start == 0);
  // The next fresh one of the same image ID: the same directories, uploaded while it is
  // created and runs nothing; no freeze, no probe; after the start the chain is checked.
  r.gone_then_recreated_as('d');
  r.acquire(spec);
  CHECK(r.engine->creates == 2);
  CHECK(r.engine->puts == 2);
  CHECK(r.engine->puts_before_start == 1);
  CHECK(r.engine->pauses == 1);
  CHECK(r.engine->execs == 1);
  CHECK(r.engine->dirs.contains("/maf-sandbox/work"));
  // Started by someone else between our create and start (a 304): commands may have run in
  // it, so it is not fresh — probed by its own ID like any container it did not start.
  r.gone_then_recreated_as('e');
  r.engine->started_by_another = true;
  r.acquire(spec);
  CHECK(r.engine->creates == 3);
  CHECK(r.engine->execs == 2);
}

TEST_CASE("issue 24 §5.4: a base the image is not known to lack is not uploaded before the start") {
  Rig r;
  r.engine->split = true;
  const SandboxSpec spec = spec_with_outputs(0);
  r.acquire(spec);
  // Another image ID: nothing is known of it, so its work directory is decided under the
  // freeze after the start, as for the first container of any image.
  r.gone_then_recreated_as('f');
  r.engine->image_id = "sha256:" + std::string(64, '9');
  r.acquire(spec);
  CHECK(r.engine->puts_before_start == 0);
  CHECK(r.engine->pauses == 2);
  CHECK(r.engine->puts == 2);
}

namespace {

/// Workload removals that each wait (a bounded poll, not a timing assertion) until all
/// `expected` are in flight at once, recording the most seen together.
class OverlapEngine final : public docker_test::RecordingTransport {
public:
  int in_flight = 0, most = 0, expected = 3;
  boost::asio::awaitable<RemoveResult> remove_container(std::string c) override {
    calls.push_back("rm " + c);
    most = std::max(most, ++in_flight);
    for (int i = 0; i < 100 && most < expected; ++i) co_await support::sleep_for(std::chrono::milliseconds(20));
    --in_flight;
    co_return RemoveResult{RemoveOutcome::Removed, {}};
  }
};

}  // namespace

TEST_CASE("issue 24 D-26 D-27 [port decision]: dispose_scope tears its sandboxes down at once, each in D-27's order") {
  BlockingRunner run;
  auto engine = std::make_shared<OverlapEngine>();
  std::vector<std::string> workloads;
  for (const char* agent : {"a", "b", "c"}) {
    const SandboxKey key{"overlap", "t", agent, ""};
    workloads.push_back(DockerSandboxBackend::container_name(key, "shell"));
    engine->add(workloads.back(), std::string(64, agent[0]), support::sandbox_labels(key, "shell"));
  }
  auto backend = std::make_shared<DockerSandboxBackend>(DockerConfig{}, engine);
  const ScopePurge purge = run([&] { return backend->dispose_scope("overlap", "t"); });
  CHECK(purge.disposed == 3);
  CHECK_FALSE(purge.undisposed);
  CHECK(engine->most == 3);
  for (const auto& w : workloads) {
    // Per sandbox: the proxy looked for first, then the workload, then its network.
    const auto& c = engine->calls;
    const auto proxy = std::find(c.begin(), c.end(), "inspect " + w + "-proxy");
    const auto removed = std::find(c.begin(), c.end(), "rm " + w);
    const auto network = std::find(c.begin(), c.end(), "network rm " + w + "-net");
    REQUIRE(network != c.end());
    CHECK(proxy < removed);
    CHECK(removed < network);
  }
}
