// W-41 / T-12: the Windows command line built from an argv, checked against an independent
// parser of the documented MSVC rules ("Parsing C++ command-line arguments"), which is what
// CommandLineToArgvW and the CRT apply in the child.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/wslc/windows_command_line.hpp"

using maf::sandbox::ValueError;
using maf::sandbox::wslc::windows_command_line;

namespace {

bool is_blank(char16_t c) { return c == u' ' || c == u'\t'; }

/// The child's side: argv[0] is read verbatim up to whitespace, or up to the next quote when
/// it starts with one; later arguments follow the backslash/quote rules, including the
/// post-2008 rule that `""` inside a quoted run is a literal quote.
std::vector<std::u16string> parse(std::u16string_view s) {
  std::vector<std::u16string> out;
  std::size_t i = 0;
  std::u16string first;
  if (i < s.size() && s[i] == u'"') {
    for (++i; i < s.size() && s[i] != u'"'; ++i) first += s[i];
    if (i < s.size()) ++i;
  } else {
    for (; i < s.size() && !is_blank(s[i]); ++i) first += s[i];
  }
  out.push_back(first);
  for (;;) {
    while (i < s.size() && is_blank(s[i])) ++i;
    if (i >= s.size()) break;
    std::u16string arg;
    bool quoted = false;
    while (i < s.size() && (quoted || !is_blank(s[i]))) {
      if (s[i] == u'\\') {
        std::size_t n = 0;
        for (; i < s.size() && s[i] == u'\\'; ++i) ++n;
        if (i < s.size() && s[i] == u'"') {
          arg.append(n / 2, u'\\');
          if (n % 2 == 1) {
            arg += u'"';
            ++i;
          }
        } else {
          arg.append(n, u'\\');
        }
      } else if (s[i] == u'"') {
        if (quoted && i + 1 < s.size() && s[i + 1] == u'"') {
          arg += u'"';
          i += 2;
        } else {
          quoted = !quoted;
          ++i;
        }
      } else {
        arg += s[i++];
      }
    }
    out.push_back(arg);
  }
  return out;
}

std::u16string utf16(const std::string& ascii) { return {ascii.begin(), ascii.end()}; }

std::vector<std::u16string> utf16(const std::vector<std::string>& ascii) {
  std::vector<std::u16string> out;
  for (const auto& a : ascii) out.push_back(utf16(a));
  return out;
}

}  // namespace

TEST_CASE("W-41/T-12: golden command lines for the quoting rules") {
  using V = std::vector<std::string>;
  CHECK(windows_command_line(V{"wslc", "version"}) == u"wslc version");
  CHECK(windows_command_line(V{"wslc", "a b"}) == u"wslc \"a b\"");
  CHECK(windows_command_line(V{"wslc", ""}) == u"wslc \"\"");
  CHECK(windows_command_line(V{"wslc", "a\\b"}) == u"wslc a\\b");                 // no quote: literal
  CHECK(windows_command_line(V{"wslc", "\\\\srv\\share"}) == u"wslc \\\\srv\\share");
  CHECK(windows_command_line(V{"wslc", "a\\\"b"}) == u"wslc \"a\\\\\\\"b\"");      // 1 -> 3 before a quote
  CHECK(windows_command_line(V{"wslc", "a b\\"}) == u"wslc \"a b\\\\\"");          // trailing run doubled
  CHECK(windows_command_line(V{"wslc", "\""}) == u"wslc \"\\\"\"");
  CHECK(windows_command_line(V{"wslc", "tab\there"}) == u"wslc \"tab\there\"");
  CHECK(windows_command_line(V{"wslc", "line\nbreak"}) == u"wslc \"line\nbreak\"");
  CHECK(windows_command_line(V{"C:\\Program Files\\WSL\\wslc.exe", "x"}) ==
        u"\"C:\\Program Files\\WSL\\wslc.exe\" x");
  CHECK(windows_command_line(V{"C:\\tools\\wslc.exe"}) == u"C:\\tools\\wslc.exe");
}

TEST_CASE("W-41/T-12: UTF-8 arguments arrive as UTF-16, surrogate pairs above the BMP") {
  using V = std::vector<std::string>;
  CHECK(windows_command_line(V{"wslc", "caf\xC3\xA9"}) == u"wslc caf\u00E9");
  CHECK(windows_command_line(V{"wslc", "\xE6\x96\x87 \xF0\x9F\x98\x80"}) == u"wslc \"\u6587 \U0001F600\"");
  const auto line = windows_command_line(V{"w", "\xF0\x9F\x98\x80"});
  REQUIRE(line.size() == 4);
  CHECK(line[2] == 0xD83D);
  CHECK(line[3] == 0xDE00);
}

TEST_CASE("W-41/T-12: every short argument over the special alphabet survives the child's parser") {
  // All strings of length 0..5 over {a, space, backslash, quote}, each between two neighbours,
  // so an argument that leaked into or swallowed a neighbour is caught too.
  const std::string alphabet = "a \\\"";
  std::vector<std::string> level{""};
  std::size_t checked = 0;
  for (int length = 0; length <= 5; ++length) {
    std::vector<std::string> next;
    for (const auto& arg : level) {
      const std::vector<std::string> argv{"wslc", "x", arg, "y\\"};
      const auto parsed = parse(windows_command_line(argv));
      INFO("argument: [" << arg << "]");
      REQUIRE(parsed == utf16(argv));
      ++checked;
      for (char c : alphabet) next.push_back(arg + c);
    }
    level = std::move(next);
  }
  CHECK(checked == 1 + 4 + 16 + 64 + 256 + 1024);
}

TEST_CASE("W-41/T-12: hand-picked hostile arguments round-trip") {
  const std::vector<std::string> argv{"wslc",        "exec",          "sh",       "-c",
                                      "echo \"$X\" > 'o u t'\\",      "\\\\\\\"", "\"\"",
                                      "\\\"\\",      "a\"b c\"d\\\\", " ",        "\t",
                                      "--filter=label=maf-sandbox.scope=s p"};
  CHECK(parse(windows_command_line(argv)) == utf16(argv));
}

TEST_CASE("W-41: what no Windows command line can carry is refused, naming the argument") {
  using V = std::vector<std::string>;
  CHECK_THROWS_AS(windows_command_line(V{}), ValueError);
  CHECK_THROWS_WITH(windows_command_line(V{""}), Catch::Contains("argv[0]") && Catch::Contains("empty"));
  CHECK_THROWS_WITH(windows_command_line(V{"C:\\a\"b.exe"}), Catch::Contains("argv[0]"));
  CHECK_THROWS_WITH(windows_command_line(V{"wslc", "ok", "bad\xFF"}),
                    Catch::Contains("argv[2]") && Catch::Contains("UTF-8") && Catch::Contains("byte 3"));
  CHECK_THROWS_WITH(windows_command_line(V{"wslc", "\xED\xA0\x80"}), Catch::Contains("argv[1]"));  // a lone surrogate
  CHECK_THROWS_WITH(windows_command_line(V{"wslc", std::string("a\0b", 3)}),
                    Catch::Contains("argv[1]") && Catch::Contains("NUL"));
}
