#include "tar_plane.hpp"

#include <algorithm>
#include <string_view>

#include "maf/sandbox/errors.hpp"
#include "said.hpp"

namespace maf::sandbox::docker::detail {

FirstEntry parse_first_entry(const std::string& bytes, bool cut, bool want_body, const std::string& path) {
  // The reader buffers what it is fed, so the stream goes in slices: its buffer stays one
  // slice long instead of becoming a second copy of a file being read (a 32 MiB read peaked
  // at 3x the payload: the stream, the reader's copy, the body).
  constexpr std::size_t kSlice = std::size_t{1} << 20;
  support::TarReader reader;  // defaults: 64 KiB of extended metadata, 32 extended headers
  std::size_t fed = 0;
  const auto feed_slice = [&] {
    const std::size_t n = std::min(kSlice, bytes.size() - fed);
    reader.feed(std::string_view(bytes).substr(fed, n));
    fed += n;
    if (fed == bytes.size() && !cut) reader.finish();
  };
  feed_slice();
  FirstEntry out;
  bool have_header = false;
  try {
    for (;;) {
      auto ev = reader.next();
      switch (ev.kind) {
        case support::TarReader::Event::header:
          out.entry = *ev.entry;
          out.body_offset = static_cast<std::size_t>(reader.offset());
          have_header = true;
          if (!want_body) return out;
          // One allocation for the body; never more than the stream could hold.
          out.body.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(out.entry.size, bytes.size())));
          break;
        case support::TarReader::Event::body:
          out.body.append(ev.data);
          break;
        case support::TarReader::Event::entry_end:
          return out;
        case support::TarReader::Event::need_more:
          if (fed < bytes.size()) {
            feed_slice();
            break;
          }
          if (cut) {
            out.need_more = true;
            return out;
          }
          [[fallthrough]];
        case support::TarReader::Event::end:
          throw OSError(have_header ? said("the tar stream of guest path '" + path + "' ended early")
                                    : said("no tar header for guest path '" + path + "'"));
      }
    }
  } catch (const support::TarLimitExceeded& e) {
    throw OSError(said("refusing the tar stream of guest path '" + path + "': " + e.what()));
  } catch (const support::TarFormatError& e) {
    if (cut && !have_header) {  // a header cut by the limit, not a malformed one
      out.need_more = true;
      return out;
    }
    throw OSError(said("malformed tar stream for guest path '" + path + "': " + e.what()));
  }
}

std::optional<std::string> take_file_body(std::string&& stream, const FirstEntry& head, bool cut,
                                          const std::string& path) {
  // A regular file's body is contiguous in a tar stream, right after its header blocks.
  const std::uint64_t size = head.entry.size;
  const std::size_t start = head.body_offset;
  if (start > stream.size() || stream.size() - start < size) {
    if (cut) return std::nullopt;
    throw OSError(said("the tar stream of guest path '" + path + "' ended early (truncated body)"));
  }
  std::string body = std::move(stream);
  body.erase(0, start);  // a move within the buffer, no second allocation
  body.resize(static_cast<std::size_t>(size));
  return body;
}

std::vector<std::string> cumulative_components(const std::string& absolute_path) {
  std::vector<std::string> out;
  std::string current;
  std::size_t i = 1;
  while (i <= absolute_path.size()) {
    std::size_t j = absolute_path.find('/', i);
    if (j == std::string::npos) j = absolute_path.size();
    if (j > i) {
      current += '/';
      current.append(absolute_path, i, j - i);  // (`"/" + substr` trips GCC 12's -Wrestrict)
      out.push_back(current);
    }
    i = j + 1;
  }
  return out;
}

}  // namespace maf::sandbox::docker::detail
