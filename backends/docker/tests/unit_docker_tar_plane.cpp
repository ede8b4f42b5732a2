// Offline tests of the tar-plane reader (D-18, D-19): the first entry of a
// `docker cp C:path -` stream, fed to the reader in slices.
#include <catch2/catch.hpp>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/support/tar.hpp"
#include "tar_plane.hpp"

using namespace maf::sandbox;
using docker::detail::parse_first_entry;
using docker::detail::take_file_body;

namespace {

std::string archive_of(const std::string& name, const std::string& body) {
  support::TarWriter w;
  w.add_file(name, body, {.mode = 0644, .uid = 0, .gid = 0, .mtime = 1});
  return std::move(w).finish();
}

std::string patterned(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 4093) & 0xff);
  return s;
}

}  // namespace

TEST_CASE("D-18: a body several slices long is read whole and exact") {
  const std::string body = patterned((std::size_t{3} << 20) + 12345);  // crosses 1 MiB slices unaligned
  const std::string tar = archive_of("work/big.bin", body);
  auto head = parse_first_entry(tar, false, false, "/work/big.bin");
  CHECK_FALSE(head.need_more);
  CHECK(head.entry.size == body.size());
  CHECK(head.body.empty());
  auto full = parse_first_entry(tar, false, true, "/work/big.bin");
  CHECK_FALSE(full.need_more);
  CHECK(full.body == body);
}

TEST_CASE("D-18: a prefix cut by the read limit asks for more; an uncut short stream is an OSError") {
  const std::string body = patterned((std::size_t{2} << 20) + 1);
  const std::string tar = archive_of("f", body);
  // Cut mid-body: the header is known, the body is not complete.
  const std::string prefix = tar.substr(0, (std::size_t{1} << 20) + 700);
  auto head = parse_first_entry(prefix, true, false, "/f");
  CHECK_FALSE(head.need_more);
  CHECK(head.entry.size == body.size());
  CHECK(parse_first_entry(prefix, true, true, "/f").need_more);
  CHECK_THROWS_AS(parse_first_entry(prefix, false, true, "/f"), OSError);
  CHECK_THROWS_WITH(parse_first_entry(prefix, false, true, "/f"), Catch::Contains("'/f'") && Catch::Contains("truncated"));
  // Cut inside the header itself.
  CHECK(parse_first_entry(tar.substr(0, 100), true, false, "/f").need_more);
  CHECK_THROWS_AS(parse_first_entry(std::string(), false, false, "/f"), OSError);
}

TEST_CASE("D-18: take_file_body turns the stream's own buffer into the body") {
  const std::string body = patterned((std::size_t{2} << 20) + 777);
  // A name over 100 bytes gets a pax extended header first: the body starts after it.
  const std::string long_name = "work/" + std::string(150, 'n') + ".bin";
  for (const std::string& name : {std::string("work/f.bin"), long_name}) {
    std::string tar = archive_of(name, body);
    auto head = parse_first_entry(tar, false, false, "/" + name);
    REQUIRE_FALSE(head.need_more);
    CHECK(head.entry.name == name);
    CHECK(head.body_offset % 512 == 0);
    CHECK(head.body_offset >= (name == long_name ? 1536u : 512u));
    const char* buffer = tar.data();
    auto taken = take_file_body(std::move(tar), head, false, "/" + name);
    REQUIRE(taken);
    CHECK(*taken == body);
    CHECK(taken->data() == buffer);  // in place: the very allocation the stream came in
  }
}

TEST_CASE("D-18: take_file_body of a stream cut mid-body asks for more; uncut, it is an OSError naming the path") {
  const std::string body = patterned((std::size_t{1} << 20) + 3);
  const std::string tar = archive_of("f", body);
  const std::string prefix = tar.substr(0, 512 + body.size() - 1);  // one body byte short
  auto head = parse_first_entry(prefix, true, false, "/f");
  REQUIRE_FALSE(head.need_more);
  CHECK_FALSE(take_file_body(std::string(prefix), head, true, "/f"));
  CHECK_THROWS_AS(take_file_body(std::string(prefix), head, false, "/f"), OSError);
  CHECK_THROWS_WITH(take_file_body(std::string(prefix), head, false, "/f"),
                    Catch::Contains("'/f'") && Catch::Contains("truncated"));
  // Exactly the body, no padding or end blocks after it: complete.
  auto exact = take_file_body(tar.substr(0, 512 + body.size()), head, false, "/f");
  REQUIRE(exact);
  CHECK(*exact == body);
}

TEST_CASE("D-14: cumulative_components lists every directory on the path, outermost first") {
  using docker::detail::cumulative_components;
  CHECK(cumulative_components("/a/b/c") == std::vector<std::string>{"/a", "/a/b", "/a/b/c"});
  CHECK(cumulative_components("/maf-sandbox/work/") == std::vector<std::string>{"/maf-sandbox", "/maf-sandbox/work"});
  CHECK(cumulative_components("/x//y") == std::vector<std::string>{"/x", "/x/y"});
  CHECK(cumulative_components("/").empty());
}
