#include "maf/sandbox/support/capture_buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

namespace maf::sandbox::support {

CaptureBuffer::Mapping::Mapping() {
  void* p = ::mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data = static_cast<char*>(p);
}

CaptureBuffer::Mapping::Mapping(Mapping&& o) noexcept : data(std::exchange(o.data, nullptr)), used(o.used) {}

void CaptureBuffer::Mapping::unmap() noexcept {
  if (data) ::munmap(data, kChunkBytes);
  data = nullptr;
}

void CaptureBuffer::append(const char* data, std::size_t n) {
  const std::size_t to_head =
      head_.size() < kHeadBytes && chunks_.empty() ? std::min(n, kHeadBytes - head_.size()) : 0;
  head_.append(data, to_head);
  size_ += to_head;
  data += to_head;
  n -= to_head;
  while (n > 0) {
    if (chunks_.empty() || chunks_.back().used == kChunkBytes) chunks_.emplace_back();
    Mapping& m = chunks_.back();
    const std::size_t take = std::min(n, kChunkBytes - m.used);
    std::memcpy(m.data + m.used, data, take);
    m.used += take;
    size_ += take;
    data += take;
    n -= take;
  }
}

std::string CaptureBuffer::take() {
  size_ = 0;
  if (chunks_.empty()) return std::exchange(head_, std::string());
  std::size_t total = head_.size();
  for (const auto& m : chunks_) total += m.used;
  std::string out;
  out.reserve(total);
  out.append(head_);
  std::string().swap(head_);
  for (auto& m : chunks_) {
    out.append(m.data, m.used);
    m.unmap();
  }
  chunks_.clear();
  return out;
}

}  // namespace maf::sandbox::support
