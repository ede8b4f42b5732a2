// W-41: argv -> one Windows command line (see windows_command_line.hpp for the rules).
#include "maf/sandbox/wslc/windows_command_line.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <utf8proc.h>

#include "maf/sandbox/errors.hpp"

namespace maf::sandbox::wslc {
namespace {

[[noreturn]] void refuse(std::size_t index, const std::string& why) {
  throw ValueError("wslc: argv[" + std::to_string(index) + "] " + why);
}

/// Decodes with utf8proc (which rejects overlongs, surrogates and truncated sequences) and
/// appends UTF-16, as surrogate pairs above the BMP.
void append_utf16(std::u16string& out, std::string_view utf8, std::size_t index) {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data());
  auto left = static_cast<utf8proc_ssize_t>(utf8.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t used = utf8proc_iterate(bytes, left, &cp);
    if (used <= 0 || cp < 0) {
      refuse(index, "is not valid UTF-8 (at byte " + std::to_string(utf8.size() - static_cast<std::size_t>(left)) + ")");
    }
    if (cp == 0) refuse(index, "holds a NUL, which no Windows command line can carry");
    if (cp < 0x10000) {
      out.push_back(static_cast<char16_t>(cp));
    } else {
      const auto v = static_cast<std::uint32_t>(cp) - 0x10000u;
      out.push_back(static_cast<char16_t>(0xD800u + (v >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00u + (v & 0x3FFu)));
    }
    bytes += used;
    left -= used;
  }
}

bool needs_quotes(std::u16string_view arg) {
  return arg.empty() || arg.find_first_of(u" \t\n\v\"") != std::u16string_view::npos;
}

/// Appends one argument after argv[0], quoted when it must be. Only ASCII characters are
/// special to the parser, so quoting the UTF-16 form is the same as quoting the UTF-8 one.
void append_argument(std::u16string& out, std::u16string_view arg) {
  if (!needs_quotes(arg)) {
    out.append(arg);
    return;
  }
  out.push_back(u'"');
  std::size_t backslashes = 0;
  for (char16_t c : arg) {
    if (c == u'\\') {
      ++backslashes;
      continue;
    }
    // A run before a quote is doubled and the quote escaped; a run before anything else is
    // literal (the parser only treats backslashes specially in front of a quote).
    out.append(c == u'"' ? 2 * backslashes + 1 : backslashes, u'\\');
    backslashes = 0;
    out.push_back(c);
  }
  out.append(2 * backslashes, u'\\');  // the closing quote must not be escaped
  out.push_back(u'"');
}

}  // namespace

std::u16string windows_command_line(const std::vector<std::string>& argv) {
  if (argv.empty()) throw ValueError("wslc: an empty argv has no Windows command line");
  const std::string& program = argv.front();
  if (program.empty()) refuse(0, "(the program) is empty");
  if (program.find('"') != std::string::npos) refuse(0, "(the program) holds a '\"', which its parsing rule cannot carry");

  std::u16string line;
  const bool quote_program = program.find_first_of(" \t") != std::string::npos;
  if (quote_program) line.push_back(u'"');
  append_utf16(line, program, 0);
  if (quote_program) line.push_back(u'"');
  std::u16string arg;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    arg.clear();
    append_utf16(arg, argv[i], i);
    line.push_back(u' ');
    append_argument(line, arg);
  }
  return line;
}

}  // namespace maf::sandbox::wslc
