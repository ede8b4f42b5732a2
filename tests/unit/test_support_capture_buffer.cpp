// support/capture_buffer.hpp: captured guest output keeps every byte in order across the
// head string and the chunk mappings, and counts what it holds (the exec caps read size()).
#include <catch2/catch.hpp>

#include <string>

#include "maf/sandbox/support/capture_buffer.hpp"

using maf::sandbox::support::CaptureBuffer;

namespace {

std::string patterned(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 31 + seed + i / 977) & 0xff);
  return s;
}

}  // namespace

TEST_CASE("CaptureBuffer: a small capture stays in the head and comes back whole") {
  CaptureBuffer b;
  CHECK(b.size() == 0);
  CHECK(b.take().empty());
  b.append("abc");
  b.append(std::string_view("\0de", 3));
  CHECK(b.size() == 6);
  CHECK(b.take() == std::string("abc\0de", 6));
  CHECK(b.size() == 0);
  CHECK(b.take().empty());
}

TEST_CASE("CaptureBuffer: bytes across the head and several chunks, in odd pieces, stay exact") {
  // 1 MiB head + 2.5 chunks, appended in pieces that straddle every boundary.
  const std::string all = patterned(CaptureBuffer::kHeadBytes + CaptureBuffer::kChunkBytes * 5 / 2 + 7, 3);
  CaptureBuffer b;
  std::size_t at = 0, piece = 1;
  while (at < all.size()) {
    const std::size_t n = std::min(piece, all.size() - at);
    b.append(all.data() + at, n);
    at += n;
    piece = piece * 3 + 11;  // 1, 14, 53, … up past a chunk
  }
  CHECK(b.size() == all.size());
  const std::string got = b.take();
  CHECK(got.size() == all.size());
  CHECK(got == all);
  CHECK(b.size() == 0);
  // Usable again after take().
  b.append("again");
  CHECK(b.take() == "again");
}

TEST_CASE("CaptureBuffer: one append larger than head and chunk together") {
  const std::string all = patterned(CaptureBuffer::kHeadBytes * 3 + 1, 9);
  CaptureBuffer b;
  b.append(all);
  CHECK(b.size() == all.size());
  CHECK(b.take() == all);
}

TEST_CASE("CaptureBuffer: moving it keeps the chunks; the moved-from buffer is not read again") {
  const std::string all = patterned(CaptureBuffer::kHeadBytes + 4096, 5);
  CaptureBuffer a;
  a.append(all);
  CaptureBuffer b(std::move(a));
  CHECK(b.size() == all.size());
  CHECK(b.take() == all);
}
