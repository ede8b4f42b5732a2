// libFuzzer target for the incremental tar reader (support/tar.hpp). Any input must either
// parse or be refused with TarFormatError / TarLimitExceeded; bodies must add up to the
// sizes their headers announced, and the reader must never claim more input than it got.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "maf/sandbox/support/tar.hpp"

using maf::sandbox::support::TarReader;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // Feeding in input-dependent chunk sizes exercises every split of headers and bodies.
  const std::size_t chunk = 1 + size % 700;
  TarReader reader({.max_body_bytes = 1 << 20, .max_extended_bytes = 64 * 1024, .max_extended_headers = 32});
  std::size_t fed = 0;
  std::uint64_t announced = 0, received = 0;
  bool in_entry = false;
  try {
    for (;;) {
      const auto ev = reader.next();
      if (ev.kind == TarReader::Event::need_more) {
        if (fed == input.size()) {
          reader.finish();
          continue;
        }
        const auto n = std::min(chunk, input.size() - fed);
        reader.feed(input.substr(fed, n));
        fed += n;
      } else if (ev.kind == TarReader::Event::header) {
        if (in_entry || ev.entry->name.empty()) std::abort();
        in_entry = true;
        announced = ev.entry->size;
        received = 0;
      } else if (ev.kind == TarReader::Event::body) {
        received += ev.data.size();
        if (!in_entry || received > announced) std::abort();
      } else if (ev.kind == TarReader::Event::entry_end) {
        if (!in_entry || received != announced) std::abort();
        in_entry = false;
      } else {
        break;
      }
      if (reader.offset() > fed) std::abort();
    }
  } catch (const maf::sandbox::support::TarFormatError&) {
  } catch (const maf::sandbox::support::TarLimitExceeded&) {
  }
  return 0;
}
