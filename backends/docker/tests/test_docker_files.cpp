// The tar plane against a real engine: write/stat/read/remove, hostile layouts, ownership
// stamping and the freeze (D-14…D-25).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/this_coro.hpp>

#include "docker_sandbox.hpp"
#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;
using namespace docker_test;

namespace {
std::string all_bytes() {
  std::string bytes = "\x89PNG\r\n\x1a\n";
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  return bytes;
}
}  // namespace

TEST_CASE("DX-3: bytes round-trip exactly; stat reports FILE with the exact size") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const std::string bytes = all_bytes();
  s.run([&] { return sb->write_file("out/image.png", bytes); });
  auto st = s.run([&] { return sb->stat_file("out/image.png"); });
  REQUIRE(st.has_value());
  CHECK(st->kind == EntryKind::File);
  CHECK(st->size_bytes == static_cast<std::int64_t>(bytes.size()));
  CHECK(st->path == "out/image.png");
  CHECK(s.run([&] { return sb->read_file("out/image.png", ".", 1 << 20); }) == bytes);
  CHECK(s.sh(*sb, "od -An -c out/image.png | head -1").stdout_bytes.find("P   N   G") != std::string::npos);
  CHECK_FALSE(s.run([&] { return sb->stat_file("out/missing"); }).has_value());
  auto dir = s.run([&] { return sb->stat_file("out"); });
  REQUIRE(dir.has_value());
  CHECK(dir->kind == EntryKind::Directory);
  CHECK_THROWS_AS(s.run([&] { return sb->read_file("out/missing", ".", 100); }), FileNotFoundError);
}

TEST_CASE("D-19: a 120-character name and a non-ASCII name stat and read correctly") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const std::string long_name = std::string(120, 'n') + ".txt";
  s.run([&] { return sb->write_file(long_name, "long"); });
  s.run([&] { return sb->write_file("café/naïve.txt", "accents"); });
  CHECK(s.sh(*sb, "cat " + long_name).stdout_bytes == "long");
  CHECK(s.sh(*sb, "cat 'café/naïve.txt'").stdout_bytes == "accents");
  auto st = s.run([&] { return sb->stat_file(long_name); });
  REQUIRE(st.has_value());
  CHECK(st->size_bytes == 4);
  CHECK(s.run([&] { return sb->read_file("café/naïve.txt", ".", 100); }) == "accents");
}

TEST_CASE("DX-4 D-18: a file over the read cap is refused from its header") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  s.sh(*sb, "head -c 5000 /dev/zero > big.bin");
  CHECK_THROWS_AS(s.run([&] { return sb->read_file("big.bin", ".", 100); }), SandboxTransferCapExceeded);
  CHECK(s.run([&] { return sb->read_file("big.bin", ".", 5000); }).size() == 5000);
}

TEST_CASE("DX-5 D-17: a final-component symlink stats as SYMLINK and is never read") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  s.sh(*sb, "ln -s /etc/passwd link");
  auto st = s.run([&] { return sb->stat_file("link"); });
  REQUIRE(st.has_value());
  CHECK(st->kind == EntryKind::Symlink);
  CHECK_FALSE(st->size_bytes.has_value());
  CHECK_THROWS_AS(s.run([&] { return sb->read_file("link", ".", 1 << 20); }), OSError);
  // Writing over a final-component link is refused rather than written through.
  CHECK_THROWS_AS(s.run([&] { return sb->write_file("link", "x"); }), ValueError);
  CHECK(s.sh(*sb, "head -1 /etc/passwd").stdout_bytes.rfind("root:", 0) == 0);
}

TEST_CASE("DX-6 D-16: a linked parent is refused though the engine resolves it daemon-side") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  s.sh(*sb, "ln -sfn /etc out");
  // Premise: the engine's own stat of out/hostname describes /etc/hostname as a file.
  auto& docker_sb = dynamic_cast<docker::detail::DockerSandbox&>(*sb);
  auto premise = s.run([&] { return docker_sb.unconfined_stat_for_testing("/maf-sandbox/work/out/hostname"); });
  REQUIRE(premise.has_value());
  CHECK(premise->kind == EntryKind::File);
  CHECK_THROWS_AS(s.run([&] { return sb->stat_file("out/hostname"); }), ValueError);
  CHECK_THROWS_AS(s.run([&] { return sb->read_file("out/hostname", ".", 1 << 20); }), ValueError);
  CHECK_THROWS_AS(s.run([&] { return sb->write_file("out/planted", "x"); }), ValueError);
  CHECK_THROWS_AS(s.run([&] { return sb->remove("out/hostname"); }), ValueError);
  CHECK(s.sh(*sb, "test -e /etc/planted").exit_code != 0);
}

TEST_CASE("D-16: a linked ancestor of the working directory itself is refused, and fails the next acquire") {
  Scope s;
  auto spec = spec_for(kImage, kAllCaps);
  auto sb = s.acquire(spec);
  // The guest replaces /maf-sandbox with a link to "/": /maf-sandbox/work would serve /work.
  s.run([&] { return sb->exec("mkdir -p /work && rm -rf /maf-sandbox && ln -s / /maf-sandbox", "/"); });
  CHECK_THROWS_AS(s.run([&] { return sb->stat_file("etc/passwd", "/maf-sandbox/work"); }), ValueError);
  CHECK_THROWS_AS(s.acquire(spec), ValueError);
}

TEST_CASE("FIFO: a fifo stats as OTHER, is never read, and a fifo ancestor is not a directory") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  s.sh(*sb, "mkfifo pipe");
  auto st = s.run([&] { return sb->stat_file("pipe"); });
  REQUIRE(st.has_value());
  CHECK(st->kind == EntryKind::Other);
  CHECK_THROWS_AS(s.run([&] { return sb->read_file("pipe", ".", 100); }), OSError);
  CHECK_THROWS_AS(s.run([&] { return sb->stat_file("pipe/below"); }), NotADirectoryError);
}

TEST_CASE("D-15: confinement is decided before any engine call", "[once]") {
  // [once]: no engine call is made, so no transport is exercised (docker.md, "Engine tests per transport").
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  CHECK_THROWS_AS(s.run([&] { return sb->write_file("../escape", "x"); }), ValueError);
  CHECK_THROWS_AS(s.run([&] { return sb->write_file("a\\b", "x"); }), ValueError);
  CHECK_THROWS_AS(s.run([&] { return sb->write_file(".", "x"); }), ValueError);
  CHECK_THROWS_AS(s.run([&] { return sb->remove("."); }), ValueError);
  CHECK_THROWS_AS(s.run([&] { return sb->stat_file("/etc/passwd"); }), ValueError);
  CHECK_THROWS_AS(s.run([&] { return sb->list_dir("."); }), NotImplementedError);
}

TEST_CASE("D-14: missing directories get entries stamped with the user; existing ones are untouched") {
  Scope s;
  auto sb = s.acquire(spec_for(kNonRootImage, kAllCaps));
  // The base belongs to the image user; its ancestors stay root's.
  CHECK(s.sh(*sb, "stat -c '%u:%g %a' /maf-sandbox /maf-sandbox/work").stdout_bytes ==
        "0:0 755\n1000:1000 755\n");
  // An entry for an existing directory would rewrite its owner and mode and set its mtime
  // to the entry's; adding a child moves the mtime to "now", never back to 2001 or 1970.
  s.sh(*sb, "mkdir -m 700 keep && touch -d '2001-02-03 04:05:06' keep");
  CHECK(s.sh(*sb, "stat -c '%u:%g %a %Y' keep").stdout_bytes == "1000:1000 700 981173106\n");
  s.run([&] { return sb->write_file("keep/new/deeper/file.txt", "data"); });
  CHECK(s.sh(*sb, "stat -c '%u:%g %a' keep").stdout_bytes == "1000:1000 700\n");
  CHECK(std::stoll(s.sh(*sb, "stat -c '%Y' keep").stdout_bytes) > 981173106);
  CHECK(s.sh(*sb, "stat -c '%u:%g %a' keep/new keep/new/deeper keep/new/deeper/file.txt").stdout_bytes ==
        "1000:1000 755\n1000:1000 755\n1000:1000 644\n");
  // The guest user can modify what it was given.
  CHECK(s.sh(*sb, "echo more >> keep/new/deeper/file.txt && rm keep/new/deeper/file.txt").exit_code == 0);
}

TEST_CASE("D-25: an image without /etc/passwd resolves its numeric user through id") {
  Scope s;
  auto sb = s.acquire(spec_for(kNoPasswdImage, kAllCaps));
  s.run([&] { return sb->write_file("owned.txt", "x"); });
  CHECK(s.sh(*sb, "stat -c '%u:%g' . owned.txt").stdout_bytes == "4321:0\n4321:0\n");
}

TEST_CASE("D-23: remove — files, directories need recursive, missing is success, links are unlinked") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  s.run([&] { return sb->write_file("d/sub/f.txt", "x"); });
  s.run([&] { return sb->write_file("g.txt", "y"); });
  s.run([&] { return sb->remove("g.txt"); });
  CHECK(s.sh(*sb, "test -e g.txt").exit_code != 0);
  CHECK_THROWS_AS(s.run([&] { return sb->remove("d"); }), OSError);
  s.run([&] { return sb->remove("d", ".", true); });
  CHECK(s.sh(*sb, "test -e d").exit_code != 0);
  s.run([&] { return sb->remove("never-there"); });
  s.sh(*sb, "ln -s /etc/hostname l");
  s.run([&] { return sb->remove("l"); });
  CHECK(s.sh(*sb, "test -L l").exit_code != 0);
  CHECK(s.sh(*sb, "test -f /etc/hostname").exit_code == 0);
}

TEST_CASE("D-23: remove in a guest-owned directory runs as the image user") {
  Scope s;
  auto sb = s.acquire(spec_for(kNonRootImage, kAllCaps));
  s.run([&] { return sb->write_file("mine/f.txt", "x"); });
  s.run([&] { return sb->remove("mine", ".", true); });
  CHECK(s.sh(*sb, "test -e mine").exit_code != 0);
}

TEST_CASE("D-21: concurrent file operations on one container never overlap their freezes") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const std::string name = docker::DockerSandboxBackend::container_name(s.key(), "shell");
  int done = 0, finished = 0;
  std::vector<std::string> errors;
  s.run.run_void([&]() -> boost::asio::awaitable<void> {
    auto ex = co_await boost::asio::this_coro::executor;
    auto write = [&](int i) -> boost::asio::awaitable<void> {
      co_await sb->write_file("c/" + std::to_string(i) + ".txt", std::to_string(i));
      auto st = co_await sb->stat_file("c/" + std::to_string(i) + ".txt");
      if (st && st->size_bytes == 1) ++done;
    };
    for (int i = 0; i < 5; ++i)
      boost::asio::co_spawn(ex, write(i), [&](std::exception_ptr e) {
        ++finished;
        if (e) try { std::rethrow_exception(e); } catch (const std::exception& x) { errors.push_back(x.what()); }
      });
    boost::asio::steady_timer timer(ex);
    while (finished < 5) {
      timer.expires_after(std::chrono::milliseconds(50));
      co_await timer.async_wait(boost::asio::use_awaitable);
    }
  });
  for (const auto& e : errors) UNSCOPED_INFO(e);
  CHECK(errors.empty());
  CHECK(done == 5);
  CHECK(docker_cli({"container", "inspect", "--format", "{{.State.Paused}}", name}) == "false");
}
