// support/shell.hpp: C-121, byte-for-byte Python shlex.quote / shlex.join. Expected strings
// were produced by `python3 -c 'import shlex; print(shlex.join([...]))'` and are pinned here.

#include <catch2/catch.hpp>

#include "maf/sandbox/support/shell.hpp"

using maf::sandbox::support::shell_join;
using maf::sandbox::support::shell_quote;

TEST_CASE("C-121 shell_quote: empty is ''", "[shell]") { CHECK(shell_quote("") == "''"); }

TEST_CASE("C-121 shell_quote: the safe set passes unchanged", "[shell]") {
  CHECK(shell_quote("plain-_@%+=:,./x") == "plain-_@%+=:,./x");
  CHECK(shell_quote("ABCxyz0189") == "ABCxyz0189");
}

TEST_CASE("C-121 shell_quote: anything else is single-quoted, ' written as '\"'\"'", "[shell]") {
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("it's") == "'it'\"'\"'s'");
  CHECK(shell_quote("'") == "''\"'\"''");
  CHECK(shell_quote("$(id)") == "'$(id)'");
  CHECK(shell_quote("~home") == "'~home'");
  CHECK(shell_quote("a*b") == "'a*b'");
  CHECK(shell_quote("!bang") == "'!bang'");
  CHECK(shell_quote("\\back") == "'\\back'");
  CHECK(shell_quote("tab\there") == "'tab\there'");
  CHECK(shell_quote("new\nline") == "'new\nline'");
  CHECK(shell_quote(";") == "';'");
  CHECK(shell_quote("caf\xc3\xa9") == "'caf\xc3\xa9'");  // non-ASCII is never "safe"
}

TEST_CASE("C-121 shell_join: byte-for-byte shlex.join", "[shell]") {
  const std::vector<std::string> argv{"a b", "", "it's", "$(id)", "caf\xc3\xa9", "plain-_@%+=:,./x",
                                      "~home", "a*b", "tab\there", "new\nline", "!bang", "\\back"};
  CHECK(shell_join(argv) ==
        "'a b' '' 'it'\"'\"'s' '$(id)' 'caf\xc3\xa9' plain-_@%+=:,./x '~home' 'a*b' 'tab\there' 'new\nline' "
        "'!bang' '\\back'");
  CHECK(shell_join({}) == "");
  CHECK(shell_join({""}) == "''");
  CHECK(shell_join({"", ""}) == "'' ''");
  CHECK(shell_join({"echo", "hello world"}) == "echo 'hello world'");
}
