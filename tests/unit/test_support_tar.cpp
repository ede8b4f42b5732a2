// support/tar.hpp: round trips through the system GNU tar in both directions, the
// incremental reader's caps (D-18, D-19, T-11) and its refusal of malformed archives.

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "maf/sandbox/support/subprocess.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "maf/sandbox/sync.hpp"

namespace fs = std::filesystem;
using namespace maf::sandbox::support;

namespace {

/// A scratch directory removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "maf-tar-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

SubprocessResult sh(const std::vector<std::string>& argv, std::optional<std::string> stdin_bytes = std::nullopt) {
  maf::sandbox::BlockingRunner runner;
  auto r = runner([&] { return run_subprocess({.argv = argv, .stdin_bytes = std::move(stdin_bytes)}); });
  INFO(r.stderr_bytes);
  REQUIRE(r.ok());
  return r;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary);
  out << content;
}

struct Parsed {
  TarEntry entry;
  std::string body;
};

/// Every entry of `archive`, fed `chunk` bytes at a time.
std::vector<Parsed> parse(const std::string& archive, std::size_t chunk = 1 << 20, TarReaderLimits limits = {}) {
  TarReader reader(limits);
  std::vector<Parsed> out;
  std::size_t fed = 0;
  for (;;) {
    auto ev = reader.next();
    if (ev.kind == TarReader::Event::need_more) {
      if (fed == archive.size()) {
        reader.finish();
        continue;
      }
      const auto n = std::min(chunk, archive.size() - fed);
      reader.feed(std::string_view(archive).substr(fed, n));
      fed += n;
    } else if (ev.kind == TarReader::Event::header) {
      out.push_back({*ev.entry, {}});
    } else if (ev.kind == TarReader::Event::body) {
      out.back().body.append(ev.data);
    } else if (ev.kind == TarReader::Event::end) {
      return out;
    }
  }
}

const std::string kLongName = "work/" + std::string(60, 'd') + "/" + std::string(70, 'f') + ".txt";  // > 100 bytes
const std::string kUtf8Name = "work/caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac.txt";

/// Rewrites a header's checksum after a test tampered with it.
void fix_checksum(std::string& archive, std::size_t header_at) {
  std::fill_n(archive.begin() + static_cast<std::ptrdiff_t>(header_at + 148), 8, ' ');
  unsigned sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(archive[header_at + i]);
  char digits[8];
  std::snprintf(digits, sizeof digits, "%06o", sum);
  std::copy_n(digits, 7, archive.begin() + static_cast<std::ptrdiff_t>(header_at + 148));
}

}  // namespace

TEST_CASE("tar writer -> system tar: long and UTF-8 names, symlinks, hard links, directories, uid/gid/mode",
          "[tar]") {
  TarWriter w;
  w.add_directory("work", {.mode = 0750, .uid = 1234, .gid = 5678, .mtime = 1700000000});
  w.add_directory("work/" + std::string(60, 'd'), {.mode = 0755, .uid = 1234, .gid = 5678});
  w.add_file(kLongName, "long name body", {.mode = 0640, .uid = 1234, .gid = 5678, .mtime = 1700000000});
  w.add_file(kUtf8Name, "caf\xc3\xa9", {.mode = 0600, .uid = 3000000, .gid = 4000000});  // ids need pax
  w.add_file("work/a.txt", std::string(1000, 'a'), {.mode = 0644});
  w.add_symlink("work/link", "a.txt", {.mode = 0777});
  w.add_symlink("work/long-link", kLongName, {.mode = 0777});
  w.add_hard_link("work/hard", "work/a.txt", {.mode = 0644});
  const std::string archive = std::move(w).finish();
  REQUIRE(archive.size() % 512 == 0);

  TempDir dir;
  write_file(dir.path / "a.tar", archive);
  // Listing with numeric ids checks the ownership fields without depending on extraction.
  const auto listing = sh({"tar", "--numeric-owner", "-tvf", (dir.path / "a.tar").string()}).stdout_bytes;
  CHECK(listing.find("drwxr-x--- 1234/5678") != std::string::npos);
  CHECK(listing.find("-rw-r----- 1234/5678") != std::string::npos);
  CHECK(listing.find("-rw------- 3000000/4000000") != std::string::npos);
  CHECK(listing.find(kLongName) != std::string::npos);
  CHECK(listing.find(kUtf8Name) != std::string::npos);
  CHECK(listing.find("work/hard link to work/a.txt") != std::string::npos);

  const auto out = dir.path / "x";
  fs::create_directory(out);
  sh({"tar", "-xf", (dir.path / "a.tar").string(), "-C", out.string()});
  CHECK(read_file(out / kLongName) == "long name body");
  CHECK(read_file(out / kUtf8Name) == "caf\xc3\xa9");
  CHECK(read_file(out / "work/a.txt") == std::string(1000, 'a'));
  CHECK(fs::read_symlink(out / "work/link") == "a.txt");
  CHECK(fs::read_symlink(out / "work/long-link") == kLongName);
  struct stat a {}, hard {}, file {}, work {};
  REQUIRE(::stat((out / "work/a.txt").c_str(), &a) == 0);
  REQUIRE(::stat((out / "work/hard").c_str(), &hard) == 0);
  CHECK(a.st_ino == hard.st_ino);
  REQUIRE(::stat((out / kLongName).c_str(), &file) == 0);
  CHECK((file.st_mode & 07777) == 0640);
  REQUIRE(::stat((out / "work").c_str(), &work) == 0);
  CHECK((work.st_mode & 07777) == 0750);
  if (::geteuid() == 0) {  // only root extracts with the archive's owners
    CHECK(file.st_uid == 1234);
    CHECK(file.st_gid == 5678);
  }
}

TEST_CASE("system tar -> tar reader: pax and GNU formats, every entry type", "[tar]") {
  TempDir dir;
  const auto src = dir.path / "src";
  fs::create_directories(src / "work" / std::string(60, 'd'));
  write_file(src / kLongName, "long name body");
  write_file(src / kUtf8Name, "utf8");
  write_file(src / "work/a.txt", std::string(3000, 'a'));
  fs::permissions(src / "work/a.txt", fs::perms(0640));
  fs::create_symlink("a.txt", src / "work/link");
  fs::create_symlink(kLongName, src / "work/long-link");
  fs::create_hard_link(src / "work/a.txt", src / "work/hard");

  for (const std::string format : {"pax", "gnu"}) {
    DYNAMIC_SECTION("format " << format) {
      const auto archive = sh({"tar", "--format=" + format, "--owner=4242", "--group=4343", "--numeric-owner",
                               "-C", src.string(), "-cf", "-", "work"})
                               .stdout_bytes;
      for (std::size_t chunk : {std::size_t{1} << 20, std::size_t{1}, std::size_t{511}}) {
        std::map<std::string, Parsed> by_name;
        for (auto& p : parse(archive, chunk)) by_name[p.entry.name] = p;
        REQUIRE(by_name.count(kLongName));
        CHECK(by_name[kLongName].body == "long name body");
        CHECK(by_name[kLongName].entry.type == TarEntryType::file);
        CHECK(by_name[kLongName].entry.uid == 4242);
        CHECK(by_name[kLongName].entry.gid == 4343);
        REQUIRE(by_name.count(kUtf8Name));
        CHECK(by_name[kUtf8Name].body == "utf8");
        // Whichever of the two names tar met first carries the body; the other links to it.
        const bool file_first = by_name["work/a.txt"].entry.type == TarEntryType::file;
        const auto& original = by_name[file_first ? "work/a.txt" : "work/hard"];
        const auto& link = by_name[file_first ? "work/hard" : "work/a.txt"];
        CHECK(original.body == std::string(3000, 'a'));
        CHECK(original.entry.mode == 0640);
        CHECK(link.entry.type == TarEntryType::hard_link);
        CHECK(link.entry.link_target == original.entry.name);
        CHECK(link.entry.size == 0);
        CHECK(by_name["work/link"].entry.type == TarEntryType::symlink);
        CHECK(by_name["work/link"].entry.link_target == "a.txt");
        CHECK(by_name["work/long-link"].entry.link_target == kLongName);
        CHECK(by_name["work/"].entry.type == TarEntryType::directory);
      }
    }
  }
}

TEST_CASE("tar writer golden header (T-11): short name, mode, ids, size, checksum", "[tar]") {
  TarWriter w;
  w.add_file("w/f", "hi", {.mode = 0644, .uid = 0, .gid = 0, .mtime = 1700000000});
  const auto a = std::move(w).finish();
  REQUIRE(a.size() == 512 * 4);  // header, body block, two zero blocks
  CHECK(a.substr(0, 4) == std::string("w/f\0", 4));
  CHECK(a.substr(100, 8) == std::string("0000644\0", 8));
  CHECK(a.substr(108, 8) == std::string("0000000\0", 8));
  CHECK(a.substr(124, 12) == std::string("00000000002\0", 12));
  CHECK(a.substr(136, 12) == std::string("14524770400\0", 12));
  CHECK(a[156] == '0');
  CHECK(a.substr(257, 8) == std::string("ustar\0" "00", 8));
  CHECK(a.substr(512, 3) == std::string("hi\0", 3));
  std::string copy = a;
  fix_checksum(copy, 0);
  CHECK(copy.substr(148, 8) == a.substr(148, 8));
}

TEST_CASE("tar writer: a long name is a pax record in a PaxHeaders.0 header", "[tar]") {
  TarWriter w;
  w.add_file(kLongName, "x", {});
  const auto a = std::move(w).finish();
  CHECK(a.substr(0, 13) == "PaxHeaders.0/");
  CHECK(a[156] == 'x');
  CHECK(a.find("150 path=" + kLongName + "\n") == 512);  // the length counts its own digits
  auto parsed = parse(a);
  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0].entry.name == kLongName);
}

TEST_CASE("tar writer: bodies must match their declared sizes", "[tar]") {
  TarWriter w;
  w.begin_file("f", 3, {});
  CHECK_THROWS_AS(w.append_body("toolong"), maf::sandbox::ValueError);
  w.append_body("ab");
  CHECK_THROWS_AS(w.end_body(), maf::sandbox::ValueError);
}

TEST_CASE("tar reader: stops after the first header without needing the body", "[tar]") {
  TarWriter w;
  w.add_file("big", std::string(1 << 20, 'b'), {.mode = 0600});
  const auto a = std::move(w).finish();
  TarReader r;
  r.feed(std::string_view(a).substr(0, 512));
  auto ev = r.next();
  REQUIRE(ev.kind == TarReader::Event::header);
  CHECK(ev.entry->name == "big");
  CHECK(ev.entry->size == (1u << 20));
  CHECK(ev.entry->mode == 0600);
  CHECK(r.next().kind == TarReader::Event::need_more);
}

TEST_CASE("tar reader: an over-cap body is refused from its header, before any body byte", "[tar]") {
  TarWriter w;
  w.add_file("small", "ok", {});
  w.add_file("huge", std::string(10000, 'h'), {});
  const auto a = std::move(w).finish();
  TarReader r({.max_body_bytes = 100});
  r.feed(std::string_view(a).substr(0, 512 * 3));  // small's header and body, huge's header only
  REQUIRE(r.next().kind == TarReader::Event::header);
  REQUIRE(r.next().kind == TarReader::Event::body);
  REQUIRE(r.next().kind == TarReader::Event::entry_end);
  try {
    r.next();
    FAIL("expected TarLimitExceeded");
  } catch (const TarLimitExceeded& e) {
    CHECK(e.entry_name() == "huge");
    CHECK(e.entry_size() == 10000);
  }
  CHECK(r.offset() == 512 * 3);  // nothing past huge's header was consumed
}

TEST_CASE("tar reader: extended metadata is bounded (64 KiB, 32 headers)", "[tar]") {
  SECTION("a pax header over the budget") {
    TarWriter w;
    w.add_file(std::string(70 * 1024, 'n'), "x", {});
    CHECK_THROWS_AS(parse(std::move(w).finish()), TarLimitExceeded);
  }
  SECTION("more than 32 extended headers") {
    std::string a;
    for (int i = 0; i < 33; ++i) {
      TarWriter w;
      w.add_file("p" + std::string(120, 'x'), "", {});
      auto one = std::move(w).finish();
      a += one.substr(0, 1024);  // just the pax header and its body block
    }
    TarWriter w;
    w.add_file("real", "", {});
    a += std::move(w).finish();
    CHECK_THROWS_AS(parse(a), TarLimitExceeded);
  }
  SECTION("32 are fine") {
    std::string a;
    for (int i = 0; i < 32; ++i) {
      TarWriter w;
      w.add_file("p" + std::string(120, 'x'), "", {});
      a += std::move(w).finish().substr(0, 1024);
    }
    TarWriter w;
    w.add_file("real", "", {});
    a += std::move(w).finish();
    auto parsed = parse(a);
    REQUIRE(parsed.size() == 1);
    CHECK(parsed[0].entry.name == "p" + std::string(120, 'x'));  // the last path record wins
  }
}

TEST_CASE("tar reader: malformed archives are refused with TarFormatError", "[tar]") {
  TarWriter w;
  w.add_file("file.txt", std::string(700, 'z'), {});
  const auto good = std::move(w).finish();
  REQUIRE(parse(good).size() == 1);

  SECTION("bad checksum") {
    auto bad = good;
    bad[0] = 'F';
    CHECK_THROWS_AS(parse(bad), TarFormatError);
  }
  SECTION("bad octal digit") {
    auto bad = good;
    bad[124 + 3] = '9';
    fix_checksum(bad, 0);
    CHECK_THROWS_AS(parse(bad), TarFormatError);
  }
  SECTION("truncated inside the body") {
    CHECK_THROWS_AS(parse(good.substr(0, 512 + 100)), TarFormatError);
  }
  SECTION("truncated inside a header") {
    CHECK_THROWS_AS(parse(good.substr(0, 300)), TarFormatError);
  }
  SECTION("truncated inside the padding") {
    CHECK_THROWS_AS(parse(good.substr(0, 512 + 800)), TarFormatError);
  }
  SECTION("bad pax record length") {
    TarWriter pw;
    pw.add_file(kLongName, "x", {});
    auto bad = std::move(pw).finish();
    bad[512] = 'X';
    CHECK_THROWS_AS(parse(bad), TarFormatError);
  }
  SECTION("input ending at an entry boundary without zero blocks reads as the end") {
    CHECK(parse(good.substr(0, 512 * 3)).size() == 1);
  }
  SECTION("garbage") {
    CHECK_THROWS_AS(parse(std::string(512, 'g')), TarFormatError);
  }
}

TEST_CASE("tar reader: base-256 numeric fields", "[tar]") {
  TarWriter w;
  w.add_file("f", "", {.uid = 1});
  auto a = std::move(w).finish();
  // uid 2^40 in base-256: 0x80 then big-endian bytes.
  std::string field(8, '\0');
  field[0] = static_cast<char>(0x80);
  field[2] = 1;
  std::copy(field.begin(), field.end(), a.begin() + 108);
  fix_checksum(a, 0);
  auto parsed = parse(a);
  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0].entry.uid == (std::uint64_t{1} << 40));
}

TEST_CASE("finish_with_file: the one-pass stream joins, and streams piecewise, to the archive finish() makes") {
  using namespace maf::sandbox::support;
  const TarEntryMeta dir{.mode = 0755, .uid = 0, .gid = 0, .mtime = 7};
  const TarEntryMeta file{.mode = 0644, .uid = 1000, .gid = 1000, .mtime = 7};
  const std::string long_name = "maf-sandbox/work/" + std::string(140, 'x') + ".txt";  // a pax header
  for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{511}, std::size_t{512},
                                 std::size_t{513}, (std::size_t{1} << 20) + 3})
    for (const std::string& name : {std::string("maf-sandbox/work/a.bin"), long_name}) {
      std::string content(size, '\0');
      for (std::size_t i = 0; i < size; ++i) content[i] = static_cast<char>((i * 7 + i / 509) & 0xff);
      TarWriter whole, entries;
      for (auto* w : {&whole, &entries}) w->add_directory("maf-sandbox/work", dir);
      whole.add_file(name, content, file);
      const std::string expected = std::move(whole).finish();
      const TarStream stream = std::move(entries).finish_with_file(name, content, file);
      CHECK(stream.body.data() == content.data());  // borrowed, not copied
      CHECK(stream.size() == expected.size());
      CHECK(stream.joined() == expected);
      std::string piecewise = stream.head;
      auto next = stream.after_head(4096);
      for (std::string piece = next(); !piece.empty(); piece = next()) {
        CHECK(piece.size() <= std::max<std::size_t>(4096, stream.tail_zeros));
        piecewise += piece;
      }
      CHECK(piecewise == expected);
    }
}
