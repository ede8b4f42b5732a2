// How an acquire runs (docs/writing-a-backend.md ACQ-1…ACQ-5): SandboxBackend::acquire is
// the core's, a backend writes only do_acquire — here a recording backend over the in-process
// double, so each rule is seen from the hook's side.
#include <catch2/catch.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"
#include "message_of.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;
using maf::sandbox::test::message_of;

namespace {

const CapabilitySet kFiles{Capability::Exec, Capability::FilesIn, Capability::FilesOut};

/// Records every do_acquire; hands out one in-process sandbox per storage base.
class RecordingBackend : public SandboxBackend {
public:
  explicit RecordingBackend(BackendDeclarations d = kFakeBackendDeclarations, std::string base = kDefaultWorkDir)
      : declarations_(std::move(d)) {
    sandbox = std::make_shared<InProcessSandbox>(
        InProcessSandboxOptions{.capabilities = kFiles, .backend_name = "recording", .storage_base = std::move(base)});
  }
  std::string name() const override { return "recording"; }
  std::string isolation() const override { return "container"; }
  const BackendDeclarations& declarations() const override { return declarations_; }
  boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey, std::optional<std::string>,
                                                                 std::optional<std::string>) override {
    co_return std::nullopt;
  }
  boost::asio::awaitable<ScopePurge> dispose_scope(std::string, std::string) override { co_return ScopePurge{}; }

  std::shared_ptr<InProcessSandbox> sandbox;
  std::vector<AcquirePlan> plans;
  /// ACQ-3's evidence: how many do_acquire of each identity ran at once, at most.
  std::map<std::string, int> inside, most_inside;
  int most_inside_overall = 0, inside_overall = 0;
  int yields = 0;  ///< times each do_acquire hands the thread to others while inside

protected:
  boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec, AcquirePlan plan) override {
    plans.push_back(plan);
    const std::string id = key.thread_id;
    most_inside[id] = std::max(most_inside[id], ++inside[id]);
    most_inside_overall = std::max(most_inside_overall, ++inside_overall);
    auto executor = co_await boost::asio::this_coro::executor;
    for (int i = 0; i < yields; ++i) co_await boost::asio::post(executor, boost::asio::use_awaitable);
    --inside[id];
    --inside_overall;
    co_return sandbox;
  }

private:
  BackendDeclarations declarations_;
};

BackendDeclarations serving(CapabilitySet capabilities) {
  BackendDeclarations d = kFakeBackendDeclarations;
  d.capabilities = capabilities;
  return d;
}

const SandboxKey kKey{"tenant", "t1", "agent", ""};

}  // namespace

TEST_CASE("ACQ-1: a direct acquire of a capability the backend does not declare is refused before do_acquire, "
          "with the router's own message") {
  auto backend = std::make_shared<RecordingBackend>(serving({Capability::Exec}));
  BlockingRunner run;
  SandboxSpec spec({.kind = "k", .requires_capabilities = {Capability::Exec, Capability::FilesOut}});
  const std::string direct =
      message_of<SandboxCapabilityNotSupported>([&] { run([&] { return backend->acquire(kKey, spec); }); });
  CHECK_THAT(direct, Catch::Contains("files_out") && Catch::Contains("'recording'") && Catch::Contains("'k'"));
  CHECK(backend->plans.empty());
  SandboxRouter router({backend}, RouterOptions{.min_isolation = Isolation::Container});
  CHECK(message_of<SandboxCapabilityNotSupported>([&] { router.ensure_can_serve(spec); }) == direct);
}

TEST_CASE("ACQ-1: egress and resource bounds the backend does not declare are refused on a direct acquire") {
  BackendDeclarations closed_only = kFakeBackendDeclarations;
  closed_only.egress_modes = EgressSet{Egress::Closed};
  auto backend = std::make_shared<RecordingBackend>(closed_only);
  BlockingRunner run;
  SandboxSpec unrestricted({.kind = "k", .egress = Egress::Unrestricted});
  CHECK_THAT(message_of<SandboxEgressNotEnforced>([&] { run([&] { return backend->acquire(kKey, unrestricted); }); }),
             Catch::Contains("'unrestricted'"));
  SandboxSpec bounded({.kind = "k", .resources = ResourceLimits(ResourceLimits::Fields{.memory_bytes = 64 << 20})});
  CHECK_THAT(message_of<SandboxResourceBoundNotEnforced>([&] { run([&] { return backend->acquire(kKey, bounded); }); }),
             Catch::Contains("memory"));
  CHECK(backend->plans.empty());
}

TEST_CASE("ACQ-2: the storage base is the spec's work_dir or the default; one that is relative, not normalised or "
          "holds a backslash is a ValueError naming it, before do_acquire") {
  auto backend = std::make_shared<RecordingBackend>();
  BlockingRunner run;
  run([&] { return backend->acquire(kKey, SandboxSpec({.kind = "k", .requires_capabilities = {}})); });
  REQUIRE(backend->plans.size() == 1);
  CHECK(backend->plans[0].storage_base == kDefaultWorkDir);
  CHECK_FALSE(backend->plans[0].uses_storage_base);  // asks nothing that touches the guest tree
  run([&] { return backend->acquire(kKey, SandboxSpec({.kind = "k", .work_dir = "/job/one", .requires_capabilities = {Capability::FilesIn}})); });
  REQUIRE(backend->plans.size() == 2);
  CHECK(backend->plans[1].storage_base == "/job/one");
  CHECK(backend->plans[1].uses_storage_base);
  for (const char* bad : {"job", "./job", "/job/./one", "/job//one", "/job/one/", "/job\\one"}) {
    INFO(bad);
    CHECK_THAT(message_of<ValueError>(
                   [&] { run([&] { return backend->acquire(kKey, SandboxSpec({.kind = "k", .work_dir = bad})); }); }),
               Catch::Contains(std::string("'") + bad + "'") && Catch::Contains("'k'"));
  }
  CHECK(backend->plans.size() == 2);
}

TEST_CASE("ACQ-2: '/' is no storage base on any backend — refused naming it and the kind, before do_acquire") {
  auto backend = std::make_shared<RecordingBackend>();
  BlockingRunner run;
  CHECK_THAT(message_of<ValueError>([&] {
               run([&] { return backend->acquire(kKey, SandboxSpec({.kind = "k", .work_dir = "/"})); });
             }),
             Catch::Contains("work_dir '/'") && Catch::Contains("'k'") && Catch::Contains("guest's root"));
  CHECK(backend->plans.empty());
}

TEST_CASE("ACQ-3: acquires of one identity run do_acquire one at a time; other identities are not held up") {
  auto backend = std::make_shared<RecordingBackend>();
  backend->yields = 5;
  boost::asio::io_context io;
  std::atomic<int> done = 0;
  for (const char* thread : {"same", "same", "same", "other", "third"})
    boost::asio::co_spawn(
        io,
        [&, thread]() -> boost::asio::awaitable<void> {
          // Named, not temporaries inside the co_await: GCC 12 destroys those twice.
          SandboxKey key{"tenant", thread, "agent", ""};
          SandboxSpec spec({.kind = "k"});
          auto acquiring = backend->acquire(std::move(key), std::move(spec));
          co_await std::move(acquiring);
          ++done;
        },
        boost::asio::detached);
  io.run();
  CHECK(done == 5);
  CHECK(backend->most_inside["same"] == 1);
  // Each do_acquire yields while inside, so different identities overlap on one thread.
  CHECK(backend->most_inside_overall >= 2);
}

TEST_CASE("ACQ-4: a complete base costs one no-follow stat per component and is handed to the hook as complete") {
  auto backend = std::make_shared<RecordingBackend>(kFakeBackendDeclarations, "/job/one/two");
  BlockingRunner run;
  SandboxSpec spec({.kind = "k", .work_dir = "/job/one/two", .requires_capabilities = {Capability::Exec}});
  run([&] { return backend->acquire(kKey, spec); });
  CHECK(backend->sandbox->hook_counts().lstat == 3);
  // Nothing asked that touches the guest tree: no walk at all.
  run([&] {
    return backend->acquire(kKey, SandboxSpec({.kind = "k", .work_dir = "/job/one/two", .requires_capabilities = {}}));
  });
  CHECK(backend->sandbox->hook_counts().lstat == 3);
}

TEST_CASE("ACQ-4: a missing base is made by the sandbox's hook from the first missing component; existing ones stay") {
  auto backend = std::make_shared<RecordingBackend>(kFakeBackendDeclarations, "/job/one/two");
  backend->sandbox->erase("/job/one");
  backend->sandbox->seed("/job/keep.txt", std::string("kept"));
  BlockingRunner run;
  run([&] { return backend->acquire(kKey, SandboxSpec({.kind = "k", .work_dir = "/job/one/two", .requires_capabilities = {Capability::FilesIn}})); });
  CHECK(backend->sandbox->directories().count("/job/one") == 1);
  CHECK(backend->sandbox->directories().count("/job/one/two") == 1);
  CHECK(backend->sandbox->files().at("/job/keep.txt") == "kept");
  CHECK(backend->sandbox->hook_counts().lstat == 2);  // "/job" found, "/job/one" missing: the walk stops
}

TEST_CASE("ACQ-4: a linked or non-directory component of the base refuses the acquire, naming it") {
  auto backend = std::make_shared<RecordingBackend>(kFakeBackendDeclarations, "/job/one");
  BlockingRunner run;
  SandboxSpec spec({.kind = "k", .work_dir = "/job/one", .requires_capabilities = {Capability::Exec}});
  backend->sandbox->erase("/job");
  backend->sandbox->seed("/job", EntryKind::Symlink);
  CHECK_THAT(message_of<ValueError>([&] { run([&] { return backend->acquire(kKey, spec); }); }),
             Catch::Contains("'/job'") && Catch::Contains("symbolic link") && Catch::Contains("'/job/one'"));
  backend->sandbox->erase("/job");
  backend->sandbox->seed("/job", std::string("a file"));
  CHECK_THAT(message_of<NotADirectoryError>([&] { run([&] { return backend->acquire(kKey, spec); }); }),
             Catch::Contains("'/job'") && Catch::Contains("not a directory"));
}

TEST_CASE("ACQ-4: a sandbox that cannot make its base says so (the default hook) rather than hand out a missing one") {
  class NoHook : public Sandbox {
  public:
    NoHook() : Sandbox(Descriptor{.backend_name = "nohook", .kind = "k", .capabilities = kFiles, .storage_base = "/job/one", .instance_id = "i-1"}) {}

  protected:
    boost::asio::awaitable<ExecReport> do_exec(const ExecRequest&) override { co_return ExecResult{}; }
    boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string&) override { co_return std::nullopt; }
    boost::asio::awaitable<void> do_write_file(const std::string&, const std::string&) override { co_return; }
  };
  BlockingRunner run;
  class Returning : public RecordingBackend {
  protected:
    boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey, SandboxSpec, AcquirePlan) override {
      co_return std::make_shared<NoHook>();
    }
  };
  auto returning = std::make_shared<Returning>();
  CHECK_THAT(message_of<NotImplementedError>([&] {
               run([&] {
                 return returning->acquire(kKey, SandboxSpec({.kind = "k", .work_dir = "/job/one",
                                                              .requires_capabilities = {Capability::Exec}}));
               });
             }),
             Catch::Contains("'/job/one'") && Catch::Contains("'/job'"));
}

TEST_CASE("ACQ-5: a wrapper that forwards to another backend's acquire checks, locks and walks nothing twice") {
  auto inner = std::make_shared<RecordingBackend>(kFakeBackendDeclarations, "/job/one");
  class Forwarder : public SandboxBackend {
  public:
    explicit Forwarder(std::shared_ptr<SandboxBackend> inner) : inner_(std::move(inner)) {}
    std::string name() const override { return inner_->name(); }
    std::string isolation() const override { return inner_->isolation(); }
    const BackendDeclarations& declarations() const override { return inner_->declarations(); }
    boost::asio::awaitable<std::optional<DisposalFailure>> dispose(SandboxKey, std::optional<std::string>,
                                                                   std::optional<std::string>) override {
      co_return std::nullopt;
    }
    boost::asio::awaitable<ScopePurge> dispose_scope(std::string, std::string) override { co_return ScopePurge{}; }

  protected:
    bool forwards_acquire() const noexcept override { return true; }
    boost::asio::awaitable<std::shared_ptr<Sandbox>> do_acquire(SandboxKey key, SandboxSpec spec, AcquirePlan) override {
      co_return co_await inner_->acquire(std::move(key), std::move(spec));
    }

  private:
    std::shared_ptr<SandboxBackend> inner_;
  };
  Forwarder outer(inner);
  BlockingRunner run;
  run([&] { return outer.acquire(kKey, SandboxSpec({.kind = "k", .work_dir = "/job/one", .requires_capabilities = {Capability::Exec}})); });
  CHECK(inner->sandbox->hook_counts().lstat == 2);  // "/job", "/job/one": once, by the inner acquire
  CHECK_THROWS_AS(run([&] { return outer.acquire(kKey, SandboxSpec({.kind = "k", .work_dir = "rel"})); }), ValueError);
}
