#pragma once
/// @file support/capture_buffer.hpp
/// Output captured from a guest (a subprocess's pipe, an exec's multiplexed stream) that
/// grows without ever holding two copies of itself.
///
/// A growing std::string reallocates to twice its size and copies, old and new buffer both
/// resident, so an 8 MiB capture peaked at 2-2.4x its size (bench/RESULTS.md). Here the
/// first `kHeadBytes` grow in an ordinary string (most outputs are small); past that, bytes
/// go to anonymous mappings of `kChunkBytes`, whose pages become resident only as they are
/// written and go back to the kernel at munmap (freed malloc blocks of this size may stay
/// resident once glibc's dynamic mmap threshold has risen). `take()` reserves the exact
/// total once and moves the chunks in order, unmapping each as soon as it is copied: the
/// peak is the output plus the head plus one chunk.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace maf::sandbox::support {

class CaptureBuffer {
public:
  static constexpr std::size_t kHeadBytes = std::size_t{1} << 20;
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

  CaptureBuffer() = default;
  CaptureBuffer(CaptureBuffer&&) noexcept = default;
  CaptureBuffer& operator=(CaptureBuffer&&) noexcept = default;
  CaptureBuffer(const CaptureBuffer&) = delete;
  CaptureBuffer& operator=(const CaptureBuffer&) = delete;
  ~CaptureBuffer() = default;

  /// Append bytes. Throws std::bad_alloc when no mapping can be had.
  void append(const char* data, std::size_t n);
  void append(std::string_view bytes) { append(bytes.data(), bytes.size()); }

  /// Bytes appended since construction or the last take().
  std::size_t size() const noexcept { return size_; }

  /// Everything appended, as one string; leaves the buffer empty.
  std::string take();

private:
  /// One anonymous mapping of kChunkBytes; unmapped on destruction.
  struct Mapping {
    Mapping();
    Mapping(Mapping&& o) noexcept;
    Mapping& operator=(Mapping&&) = delete;
    ~Mapping() { unmap(); }
    void unmap() noexcept;
    char* data = nullptr;
    std::size_t used = 0;
  };

  std::string head_;
  std::vector<Mapping> chunks_;
  std::size_t size_ = 0;
};

}  // namespace maf::sandbox::support
