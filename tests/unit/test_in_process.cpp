// The in-process double (C-108…C-117) and, through it, the Sandbox base class's
// public contract (C-35…C-50, C-103): gates, confinement, the ancestor walk and read caps.
#include <catch2/catch.hpp>

#include <thread>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* W = "/maf-sandbox/work";

std::shared_ptr<InProcessSandbox> make(InProcessSandboxOptions o = {}) {
  return std::make_shared<InProcessSandbox>(std::move(o));
}

SandboxSpec spec_of(std::string kind) { return SandboxSpec({.kind = std::move(kind)}); }

}  // namespace

// --- exec and run_code ---

TEST_CASE("C-110/C-37: an argv is POSIX-joined before it is recorded and matched") {
  auto sb = make({.outputs = {{"'a b'", "matched\n"}}});
  BlockingRunner run;
  const auto r = run([&] { return sb->exec(std::vector<std::string>{"echo", "a b", "$(x)", ";", ""}); });
  CHECK(r.stdout_bytes == "matched\n");
  CHECK(r.stderr_bytes.empty());
  CHECK(r.exit_code == 0);
  REQUIRE(sb->commands().size() == 1);
  CHECK(sb->commands()[0].command == "echo 'a b' '$(x)' ';' ''");
}

TEST_CASE("C-110: markers are scanned in insertion order; no match gives default_stdout") {
  auto sb = make({.outputs = {{"python", "first"}, {"python -V", "second"}}, .default_stdout = "nothing"});
  BlockingRunner run;
  CHECK(run([&] { return sb->exec("python -V"); }).stdout_bytes == "first");
  CHECK(run([&] { return sb->exec("ls"); }).stdout_bytes == "nothing");
  sb->set_outputs({{"ls", "listed"}});
  CHECK(run([&] { return sb->exec("ls -l"); }).stdout_bytes == "listed");
}

TEST_CASE("C-110: the command is recorded before `raises` is raised") {
  auto sb = make({.raises = std::make_exception_ptr(TimeoutError("too slow"))});
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sb->exec("sleep 9", ".", 1500ms); }), TimeoutError);
  REQUIRE(sb->commands().size() == 1);
  CHECK(sb->commands()[0] == RecordedCommand{"sleep 9", W, 1500ms});
  sb->set_raises(nullptr);
  int made = 0;
  sb->set_raises_factory([&] {
    ++made;
    return std::make_exception_ptr(OSError("fresh " + std::to_string(made)));
  });
  CHECK_THROWS_WITH(run([&] { return sb->exec("x"); }), "fresh 1");
  CHECK_THROWS_WITH(run([&] { return sb->exec("x"); }), "fresh 2");
}

TEST_CASE("C-38/C-99: the recorded working directory is resolved under the storage base") {
  auto sb = make();
  BlockingRunner run;
  run([&] { return sb->exec("pwd", "sub/dir"); });
  run([&] { return sb->exec("pwd", "/abs//x/"); });
  CHECK(sb->commands()[0].working_directory == std::string(W) + "/sub/dir");
  CHECK(sb->commands()[1].working_directory == "/abs/x");
  CHECK_THROWS_AS(run([&] { return sb->exec("pwd", "../escape"); }), ValueError);
}

TEST_CASE("C-111: run_code records into programs, never commands, and matches the code text") {
  auto sb = make({.outputs = {{"print", "hello\n"}}});
  BlockingRunner run;
  CHECK(run([&] { return sb->run_code("print('hello')", 2s); }).stdout_bytes == "hello\n");
  CHECK(sb->programs() == std::vector<RecordedProgram>{{"print('hello')", 2s}});
  CHECK(sb->commands().empty());
  sb->set_raises(std::make_exception_ptr(SandboxQueuedTimeout("queued")));
  CHECK_THROWS_AS(run([&] { return sb->run_code("1", 1s); }), SandboxQueuedTimeout);
  CHECK(sb->programs().size() == 2);
}

TEST_CASE("C-40/C-41: a non-positive timeout is refused before anything is recorded") {
  auto sb = make();
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sb->exec("true", ".", 0ms); }), ValueError);
  CHECK_THROWS_AS(run([&] { return sb->run_code("1", -1ms); }), ValueError);
  CHECK(sb->commands().empty());
  CHECK(sb->programs().empty());
}

// --- C-35: the gate runs before any work ---

TEST_CASE("C-35: an undeclared method raises NotImplementedError before doing any work") {
  auto sb = make({.capabilities = {Capability::Exec, Capability::FilesIn}});
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sb->run_code("1"); }), NotImplementedError);
  CHECK_THROWS_AS(run([&] { return sb->stat_file("a"); }), NotImplementedError);
  CHECK_THROWS_AS(run([&] { return sb->read_file("a", ".", 10); }), NotImplementedError);
  CHECK_THROWS_AS(run([&] { return sb->list_dir("."); }), NotImplementedError);
  CHECK_THROWS_WITH(run([&] { return sb->remove("a"); }), Catch::Contains("files_delete") && Catch::Contains("in-process"));
  const auto counts = sb->hook_counts();
  CHECK(counts.lstat == 0);
  CHECK(counts.run_code == 0);
  CHECK(sb->programs().empty());
  auto no_exec = make({.capabilities = {Capability::FilesIn}});
  CHECK_THROWS_AS(run([&] { return no_exec->exec("true"); }), NotImplementedError);
  CHECK(no_exec->commands().empty());
}

// --- state and seeding ---

TEST_CASE("C-108/C-109: seed_files fill the four stores by value kind") {
  auto sb = make({.seed_files = {{"text.txt", std::string("héllo")},
                                 {"/abs/bytes.bin", std::string("\xff\x00", 2)},
                                 {"link", EntryKind::Symlink},
                                 {"dir", EntryKind::Directory},
                                 {"fifo", EntryKind::Other}}});
  const std::string w = W;
  CHECK(sb->contents() == std::map<std::string, std::string>{{w + "/text.txt", "héllo"},
                                                             {"/abs/bytes.bin", std::string("\xff\x00", 2)}});
  CHECK(sb->symlinks() == std::set<std::string>{w + "/link"});
  CHECK(sb->non_regular() == std::set<std::string>{w + "/fifo"});
  CHECK(sb->directories() == std::set<std::string>{w, w + "/dir"});  // the storage base exists (C-53)
  // files is a UTF-8 view that fails on non-UTF-8 content.
  CHECK_THROWS_AS(sb->files(), ValueError);
  sb->erase("/abs");
  CHECK(sb->files() == std::map<std::string, std::string>{{w + "/text.txt", "héllo"}});
}

TEST_CASE("C-112: implicit directories and the kind lookup order") {
  auto sb = make({.seed_files = {{"/a/b/c.txt", std::string("12345")}, {"/s/l", EntryKind::Symlink}}});
  CHECK(sb->lstat_now("/a")->kind == EntryKind::Directory);
  CHECK(sb->lstat_now("/a/b")->kind == EntryKind::Directory);
  CHECK(sb->lstat_now("/s")->kind == EntryKind::Directory);
  CHECK(sb->lstat_now("/")->kind == EntryKind::Directory);
  const auto file = sb->lstat_now("/a/b/c.txt");
  CHECK(file->kind == EntryKind::File);
  CHECK(file->size_bytes == 5);
  CHECK(sb->lstat_now("/a/b/c.txt/x") == std::nullopt);
  CHECK(sb->lstat_now("/a/bb") == std::nullopt);  // a string prefix is not a parent
  const auto link = sb->lstat_now("/s/l");
  CHECK(link->kind == EntryKind::Symlink);
  CHECK(link->size_bytes == std::nullopt);
}

TEST_CASE("C-113: the unconfined stat follows nothing: a path under a link is absent") {
  auto sb = make({.seed_files = {{"link", EntryKind::Symlink}}});
  CHECK(sb->lstat_now(std::string(W) + "/link/anything") == std::nullopt);
  CHECK(sb->lstat_now("/etc/passwd") == std::nullopt);
}

// --- write_file (C-42, C-43) ---

TEST_CASE("C-42: write stores bytes as given, replaces, and creates parents") {
  auto sb = make();
  BlockingRunner run;
  run([&] { return sb->write_file("deep/er/f.bin", std::string("\x00\r\n\xff", 4)); });
  CHECK(sb->contents().at(std::string(W) + "/deep/er/f.bin") == std::string("\x00\r\n\xff", 4));
  run([&] { return sb->write_file("deep/er/f.bin", "second"); });
  CHECK(sb->contents().at(std::string(W) + "/deep/er/f.bin") == "second");
  CHECK(sb->lstat_now(std::string(W) + "/deep")->kind == EntryKind::Directory);
  run([&] { return sb->write_file(std::string(W) + "/abs.txt", "ok"); });  // absolute inside
  CHECK(sb->contents().contains(std::string(W) + "/abs.txt"));
}

TEST_CASE("C-43: write refusals") {
  auto sb = make({.seed_files = {{"link", EntryKind::Symlink}, {"file", std::string("x")}}});
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sb->write_file("a\\b", "x"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return sb->write_file("../out", "x"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return sb->write_file("/etc/passwd", "x"); }), ValueError);
  for (const char* wd_itself : {".", "", "a/.."}) {
    INFO(wd_itself);
    CHECK_THROWS_AS(run([&] { return sb->write_file(wd_itself, "x"); }), ValueError);
  }
  CHECK_THROWS_AS(run([&] { return sb->write_file("link", "x"); }), ValueError);         // leaf link
  CHECK_THROWS_AS(run([&] { return sb->write_file("link/inner", "x"); }), ValueError);   // ancestor link
  CHECK_THROWS_AS(run([&] { return sb->write_file("file/inner", "x"); }), NotADirectoryError);
  CHECK(sb->contents().size() == 1);
}

TEST_CASE("C-43: a link above the working directory refuses the write") {
  auto sb = make({.seed_files = {{"/maf-sandbox", EntryKind::Symlink}}});
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sb->write_file("x", "y"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return sb->stat_file("x"); }), ValueError);
}

// --- stat, read, list (C-45…C-48) ---

TEST_CASE("C-45: stat describes without following; absent when missing") {
  auto sb = make({.seed_files = {{"f.txt", std::string("abc")}, {"link", EntryKind::Symlink},
                                 {"fifo", EntryKind::Other}, {"d/x", std::string()}}});
  BlockingRunner run;
  CHECK(run([&] { return sb->stat_file("f.txt"); }) == SandboxEntry{"f.txt", EntryKind::File, 3});
  CHECK(run([&] { return sb->stat_file("link"); }) == SandboxEntry{"link", EntryKind::Symlink, std::nullopt});
  CHECK(run([&] { return sb->stat_file("fifo"); }) == SandboxEntry{"fifo", EntryKind::Other, std::nullopt});
  CHECK(run([&] { return sb->stat_file("d"); })->kind == EntryKind::Directory);
  CHECK(run([&] { return sb->stat_file("."); }) == SandboxEntry{"", EntryKind::Directory, std::nullopt});
  CHECK(run([&] { return sb->stat_file("missing"); }) == std::nullopt);
  CHECK_THROWS_AS(run([&] { return sb->stat_file("link/x"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return sb->stat_file("../x"); }), ValueError);
}

TEST_CASE("C-46: read serves only regular files") {
  auto sb = make({.seed_files = {{"f.txt", std::string("abc")}, {"link", EntryKind::Symlink},
                                 {"fifo", EntryKind::Other}, {"d/x", std::string()}}});
  BlockingRunner run;
  CHECK(run([&] { return sb->read_file("f.txt", ".", 3); }) == "abc");
  CHECK_THROWS_AS(run([&] { return sb->read_file("missing", ".", 9); }), FileNotFoundError);
  CHECK_THROWS_AS(run([&] { return sb->read_file("d", ".", 9); }), IsADirectoryError);
  CHECK_THROWS_AS(run([&] { return sb->read_file("link", ".", 9); }), OSError);
  CHECK_THROWS_AS(run([&] { return sb->read_file("fifo", ".", 9); }), OSError);
  CHECK_THROWS_AS(run([&] { return sb->read_file("link/f", ".", 9); }), ValueError);
  CHECK(sb->hook_counts().read_file == 1);
}

TEST_CASE("C-47: read over max_bytes is refused from the stat, never truncated") {
  auto sb = make({.seed_files = {{"big", std::string(100, 'x')}}});
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sb->read_file("big", ".", 99); }), SandboxTransferCapExceeded);
  CHECK(sb->hook_counts().bytes_read == 0);
  CHECK(run([&] { return sb->read_file("big", ".", 100); }).size() == 100);
}

TEST_CASE("C-48: list_dir is one level, sorted, links listed as links, and walks the directory itself") {
  auto sb = make({.seed_files = {{"b.txt", std::string("12")}, {"a/deep/x", std::string("1")},
                                 {"link", EntryKind::Symlink}, {"fifo", EntryKind::Other},
                                 {"empty", EntryKind::Directory}, {"a/y", std::string("")}}});
  BlockingRunner run;
  const auto top = run([&] { return sb->list_dir("."); });
  CHECK(top == std::vector<SandboxEntry>{{"a", EntryKind::Directory, std::nullopt},
                                         {"b.txt", EntryKind::File, 2},
                                         {"empty", EntryKind::Directory, std::nullopt},
                                         {"fifo", EntryKind::Other, std::nullopt},
                                         {"link", EntryKind::Symlink, std::nullopt}});
  const auto sub = run([&] { return sb->list_dir("a"); });
  CHECK(sub == std::vector<SandboxEntry>{{"a/deep", EntryKind::Directory, std::nullopt}, {"a/y", EntryKind::File, 0}});
  CHECK(run([&] { return sb->list_dir("empty"); }).empty());
  CHECK_THROWS_AS(run([&] { return sb->list_dir("link"); }), ValueError);  // C-103: self is walked
  CHECK_THROWS_AS(run([&] { return sb->list_dir("b.txt"); }), NotADirectoryError);
  CHECK_THROWS_AS(run([&] { return sb->list_dir("missing"); }), FileNotFoundError);
  CHECK_THROWS_AS(run([&] { return sb->list_dir(".."); }), ValueError);
}

// --- remove (C-49, C-50) ---

TEST_CASE("C-49: remove of a missing path succeeds; the working directory and escapes are refused") {
  auto sb = make({.seed_files = {{"link", EntryKind::Symlink}, {"file", std::string("x")}}});
  BlockingRunner run;
  run([&] { return sb->remove("missing"); });
  for (const char* wd_itself : {".", "", "a/.."}) {
    INFO(wd_itself);
    CHECK_THROWS_AS(run([&] { return sb->remove(wd_itself, ".", true); }), ValueError);
  }
  CHECK_THROWS_AS(run([&] { return sb->remove("../x"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return sb->remove("link/x"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return sb->remove("file/x"); }), NotADirectoryError);
  CHECK(sb->hook_counts().remove == 0);
}

TEST_CASE("C-50: a link is unlinked for both recursive values; a directory needs recursive") {
  auto sb = make({.seed_files = {{"l1", EntryKind::Symlink}, {"l2", EntryKind::Symlink},
                                 {"empty", EntryKind::Directory}, {"tree/a/b.txt", std::string("b")},
                                 {"tree/link", EntryKind::Symlink}, {"tree/fifo", EntryKind::Other},
                                 {"treex", std::string("sibling")}}});
  BlockingRunner run;
  run([&] { return sb->remove("l1", ".", false); });
  run([&] { return sb->remove("l2", ".", true); });
  CHECK(sb->symlinks() == std::set<std::string>{std::string(W) + "/tree/link"});
  CHECK_THROWS_AS(run([&] { return sb->remove("empty"); }), OSError);
  CHECK_THROWS_AS(run([&] { return sb->remove("tree"); }), OSError);
  run([&] { return sb->remove("tree", ".", true); });
  CHECK(sb->symlinks().empty());
  CHECK(sb->non_regular().empty());
  CHECK(sb->contents() == std::map<std::string, std::string>{{std::string(W) + "/treex", "sibling"}});
  run([&] { return sb->remove("empty", ".", true); });
  CHECK(sb->directories() == std::set<std::string>{W});
}

// --- thread safety ---

TEST_CASE("C-108: the double is safe to share across threads") {
  auto sb = make();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      BlockingRunner run;
      for (int i = 0; i < 50; ++i) {
        const std::string name = "t" + std::to_string(t) + "/f" + std::to_string(i);
        run([&] { return sb->write_file(name, "x"); });
        run([&] { return sb->exec(std::vector<std::string>{"touch", name}); });
        (void)run([&] { return sb->stat_file(name); });
      }
    });
  for (auto& th : threads) th.join();
  CHECK(sb->contents().size() == 200);
  CHECK(sb->commands().size() == 200);
}

// --- backend (C-115, C-116) and store (C-117) ---

TEST_CASE("C-115: fake declarations are the defaults except egress {allowlist, closed}") {
  InProcessSandboxBackend backend;
  CHECK(backend.name() == "in-process");
  CHECK(backend.isolation() == "none");
  const auto& d = backend.declarations();
  CHECK(d.egress_modes == EgressSet{Egress::Allowlist, Egress::Closed});
  CHECK(d.capabilities == kDefaultCapabilities);
  CHECK(d.limits == kDefaultSandboxLimits);
  CHECK(d.os_families.empty());
  CHECK(d.isolation_scopes.empty());
}

TEST_CASE("C-116: acquire records key and spec and returns the one shared sandbox") {
  InProcessSandboxBackend backend;
  BlockingRunner run;
  const SandboxKey k1{"s", "t", "a", ""}, k2{"s", "t2", "b", "call"};
  auto a = run([&] { return backend.acquire(k1, spec_of("one")); });
  auto b = run([&] { return backend.acquire(k2, spec_of("two")); });
  CHECK(a == b);
  CHECK(a.get() == backend.sandbox().get());
  CHECK(backend.keys() == std::vector<SandboxKey>{k1, k2});
  REQUIRE(backend.specs().size() == 2);
  CHECK(backend.specs()[1].kind() == "two");
}

TEST_CASE("C-116: acquire_error is raised and nothing is recorded") {
  InProcessSandboxBackend backend;
  backend.set_acquire_error(std::make_exception_ptr(SandboxCapabilityNotSupported("no sh")));
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return backend.acquire({"s", "t", "a", ""}, spec_of("k")); }),
                  SandboxCapabilityNotSupported);
  CHECK(backend.keys().empty());
  CHECK(backend.specs().empty());
}

TEST_CASE("C-116: dispose records then raises dispose_error or returns dispose_failure") {
  InProcessSandboxBackend backend;
  BlockingRunner run;
  const SandboxKey k{"s", "t", "a", ""};
  CHECK(run([&] { return backend.dispose(k, std::nullopt, std::nullopt); }) == std::nullopt);
  backend.set_dispose_failure(DisposalFailure{kDisposalRefused, "still there"});
  CHECK(run([&] { return backend.dispose(k, "kind", std::nullopt); }) ==
        std::optional<DisposalFailure>(DisposalFailure{kDisposalRefused, "still there"}));
  backend.set_dispose_error(std::make_exception_ptr(RuntimeError("boom")));
  CHECK_THROWS_AS(run([&] { return backend.dispose(k, std::nullopt, "inst-1"); }), RuntimeError);
  CHECK(backend.disposed() == std::vector<SandboxKey>{k, k, k});
  CHECK(backend.dispose_requests()[1].kind == "kind");
  CHECK(backend.dispose_requests()[2].instance_id == "inst-1");
}

TEST_CASE("C-116: dispose_scope records (scope, thread) and returns purge_count and purge_failure") {
  InProcessSandboxBackend backend;
  BlockingRunner run;
  CHECK(run([&] { return backend.dispose_scope("s", "t"); }) == ScopePurge{1, std::nullopt});
  backend.set_purge_count(3);
  backend.set_purge_failure(DisposalFailure{kDisposalUnlisted, "partial"});
  CHECK(run([&] { return backend.dispose_scope("s", "t2"); }) ==
        ScopePurge{3, DisposalFailure{kDisposalUnlisted, "partial"}});
  CHECK(backend.purged() == std::vector<std::pair<std::string, std::string>>{{"s", "t"}, {"s", "t2"}});
}

TEST_CASE("C-115: a backend can share a configured sandbox and override declarations by copying") {
  auto sb = make({.default_stdout = "shared"});
  BackendDeclarations d = kFakeBackendDeclarations;
  d.capabilities = kInProcessCapabilities;
  InProcessSandboxBackend backend({.sandbox = sb, .name = "other", .isolation = "container", .declarations = d});
  CHECK(backend.sandbox() == sb);
  CHECK(backend.name() == "other");
  CHECK(backend.isolation() == "container");
  CHECK(backend.declarations().egress_modes == EgressSet{Egress::Allowlist, Egress::Closed});
  CHECK(backend.declarations().capabilities == kInProcessCapabilities);
}

TEST_CASE("C-117: InMemoryStore copies, reads absent on a miss, lists every name") {
  std::map<std::string, std::string> files{{"b", "2"}, {"a", "1"}};
  InMemoryStore store(files);
  files["c"] = "3";  // the store holds a copy
  CHECK(store.read("a") == std::optional<std::string>("1"));
  CHECK(store.read("c") == std::nullopt);
  CHECK(store.list() == std::vector<std::string>{"a", "b"});
  auto list_files = store.list_files();
  BlockingRunner run;
  CHECK(run([&] { return list_files("any-store"); }) == std::vector<std::string>{"a", "b"});
}
