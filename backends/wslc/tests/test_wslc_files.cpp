// write_file as a confined one-entry tar, through the shim on a real engine (wslc.md T-3;
// W-18, W-20…W-25).
#include <utility>  // Boost 1.74's awaitable.hpp needs it first

#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;
using namespace wslc_test;

namespace {
int uploads(const Engine& e) {
  int n = 0;
  for (const auto& c : e.calls()) {
    auto argv = c["argv"].get<std::vector<std::string>>();
    if (argv.size() >= 3 && argv[1] == "cp" && argv[2] == "-") ++n;
  }
  return n;
}
}  // namespace

TEST_CASE("W-24/T-3: nested parents, all 256 byte values, UTF-8 text, overwrite, mode 0644 root") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  e.run([&] { return sb->write_file("a/b/c/bytes.bin", all); });
  std::string hex;
  for (int i = 0; i < 256; ++i) hex += std::string{"0123456789abcdef"[i >> 4], "0123456789abcdef"[i & 15]};
  CHECK(e.sh(*sb, "od -An -tx1 -v a/b/c/bytes.bin | tr -d ' \\n'").stdout_text() == hex);
  CHECK(e.sh(*sb, "wc -c < a/b/c/bytes.bin").stdout_text().find("256") != std::string::npos);
  e.run([&] { return sb->write_file("t.txt", "héllo ✓"); });
  CHECK(e.sh(*sb, "cat t.txt").stdout_text() == "héllo ✓");
  e.run([&] { return sb->write_file("t.txt", "second"); });
  CHECK(e.sh(*sb, "cat t.txt").stdout_text() == "second");
  CHECK(e.sh(*sb, "stat -c '%a %u %g' t.txt").stdout_text() == "644 0 0\n");
  CHECK(e.sh(*sb, "stat -c '%a' a/b").stdout_text() == "755\n");
}

TEST_CASE("W-6/T-3: 8 MiB is accepted; 8 MiB + 1 is refused with no upload sent") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  const std::string eight(std::size_t{8} << 20, 'x');
  e.run([&] { return sb->write_file("big", eight); });
  CHECK(e.sh(*sb, "wc -c < big").stdout_text().find("8388608") != std::string::npos);
  e.clear_log();
  CHECK_THROWS_AS(e.run([&] { return sb->write_file("bigger", eight + "y"); }), SandboxTransferCapExceeded);
  CHECK(uploads(e) == 0);
  CHECK(e.sh(*sb, "test -e bigger || echo absent").stdout_text() == "absent\n");
}

TEST_CASE("W-23/T-3: links planted in a parent or at the leaf are refused before any upload") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  e.sh(*sb, "mkdir -p /outside && ln -s /outside linkdir && ln -s /outside/f leaf && mkdir real");
  e.clear_log();
  CHECK_THROWS_AS(e.run([&] { return sb->write_file("linkdir/x", "no"); }), ValueError);
  CHECK_THROWS_AS(e.run([&] { return sb->write_file("leaf", "no"); }), ValueError);
  CHECK(uploads(e) == 0);
  CHECK(e.sh(*sb, "ls -A /outside | wc -l").stdout_text().find('0') != std::string::npos);
  // A regular file where a parent should be is not a directory.
  e.run([&] { return sb->write_file("plain", "p"); });
  CHECK_THROWS_AS(e.run([&] { return sb->write_file("plain/x", "no"); }), NotADirectoryError);
  // A directory at the leaf is refused, and lexical escapes never reach the engine.
  CHECK_THROWS(e.run([&] { return sb->write_file("real", "no"); }));
  e.clear_log();
  CHECK_THROWS_AS(e.run([&] { return sb->write_file("../escape", "no"); }), ValueError);
  CHECK_THROWS_AS(e.run([&] { return sb->write_file(".", "no"); }), ValueError);
  CHECK(e.calls().empty());
}

TEST_CASE("W-18: an existing base is left exactly as it is; a link as the base refuses acquire") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  e.sh(*sb, "chmod 0700 /maf-sandbox/work && touch -t 200101010000 /maf-sandbox/work");
  auto again = e.acquire(spec_for(kCaps));
  CHECK(e.sh(*again, "stat -c '%a %Y' /maf-sandbox/work").stdout_text() == "700 978307200\n");
  e.sh(*sb, "rm -rf /maf-sandbox/work && mkdir -p /elsewhere && ln -s /elsewhere /maf-sandbox/work");
  CHECK_THROWS_AS(e.acquire(spec_for(kCaps)), ValueError);
}

TEST_CASE("W-2/W-30: stat, read, list and remove are refused by the capability gate") {
  Engine e;
  auto sb = e.acquire(spec_for(kCaps));
  CHECK_THROWS_AS(e.run([&] { return sb->stat_file("x"); }), NotImplementedError);
  CHECK_THROWS_AS(e.run([&] { return sb->read_file("x", ".", 10); }), NotImplementedError);
  CHECK_THROWS_AS(e.run([&] { return sb->list_dir("."); }), NotImplementedError);
  CHECK_THROWS_AS(e.run([&] { return sb->remove("x"); }), NotImplementedError);
}
