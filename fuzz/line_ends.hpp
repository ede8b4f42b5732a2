#pragma once
// What two fuzz targets share: wslc (and a Windows-side writer) ends lines with CRLF, and a
// reader must read such text as it reads the LF form.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace maf_fuzz {

/// `text` with the CR of every CRLF removed, when every CR in it precedes a LF; nullopt when
/// some CR stands elsewhere (then the two forms need not read alike).
inline std::optional<std::string> with_lf_line_ends(std::string_view text) {
  std::string lf;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') continue;
      return std::nullopt;
    }
    lf += text[i];
  }
  return lf;
}

}  // namespace maf_fuzz
