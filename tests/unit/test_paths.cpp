// Guest path helpers (C-95…C-103). Expected values of normalise/join/dirname were
// computed with CPython 3.11's posixpath and are hard-coded here.
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/paths.hpp"
#include "maf/sandbox/sync.hpp"

using namespace maf::sandbox;

namespace {

/// A no-follow stat over a fixed map of absolute paths, recording what it was asked.
/// The helpers are lazily-started coroutines taking the callback by reference, so the
/// callback must outlive the awaitable: it is a member here, never a temporary.
struct MapStat {
  MapStat(std::map<std::string, EntryKind> e) : entries(std::move(e)) {}
  std::map<std::string, EntryKind> entries;
  std::vector<std::string> asked;
  UnconfinedStat stat = [this](const std::string& p) -> boost::asio::awaitable<std::optional<EntryKind>> {
    asked.push_back(p);
    auto it = entries.find(p);
    co_return it == entries.end() ? std::nullopt : std::optional<EntryKind>(it->second);
  };
  const UnconfinedStat& fn() const { return stat; }
};

}  // namespace

TEST_CASE("C-95: normalize_guest_path matches posixpath.normpath") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "."},
      {"/", "/"},
      {"//", "//"},
      {"///", "/"},
      {"////a", "/a"},
      {"//a//b/", "//a/b"},
      {"a/./b/../c", "a/c"},
      {"../a/..", ".."},
      {"/../..", "/"},
      {"a/../../b", "../b"},
      {"./", "."},
      {"a//b///c/", "a/b/c"},
      {"/a/b/../../..", "/"},
      {"...", "..."},
      {"a/.../b", "a/.../b"},
      {"//a/../..", "//"},
      {"/./.", "/"},
      {"./..", ".."},
  };
  for (const auto& [in, out] : cases) {
    INFO("normpath(" << in << ")");
    CHECK(normalize_guest_path(in) == out);
  }
}

TEST_CASE("C-95: join_guest_path matches posixpath.join; an absolute part replaces the base") {
  CHECK(join_guest_path("/w", "a") == "/w/a");
  CHECK(join_guest_path("/w/", "a") == "/w/a");
  CHECK(join_guest_path("/w", "/abs") == "/abs");
  CHECK(join_guest_path("", "a") == "a");
  CHECK(join_guest_path("/w", "") == "/w/");
  CHECK(join_guest_path("w", "x/y") == "w/x/y");
}

TEST_CASE("C-95: guest_dirname matches posixpath.dirname") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/a/b", "/a"}, {"a", ""},       {"/a", "/"},          {"/", "/"},  {"//a", "//"},
      {"a/b/", "a/b"}, {"a//b", "a"}, {"///a//b", "///a"}, {"", ""},
  };
  for (const auto& [in, out] : cases) {
    INFO("dirname(" << in << ")");
    CHECK(guest_dirname(in) == out);
  }
}

TEST_CASE("C-97: guest_path_relative_to: equal is empty, a string-prefix sibling is outside") {
  CHECK(guest_path_relative_to("/w/sub", "/w/sub") == std::optional<std::string>(""));
  CHECK(guest_path_relative_to("/w/sub/a/b", "/w/sub") == std::optional<std::string>("a/b"));
  CHECK(guest_path_relative_to("/w/sub2", "/w/sub") == std::nullopt);
  CHECK(guest_path_relative_to("/w", "/w/sub") == std::nullopt);
  CHECK(guest_path_relative_to("/a", "/") == std::optional<std::string>("a"));
  CHECK(guest_path_relative_to("/w/./x/../y/", "/w//") == std::optional<std::string>("y"));
}

TEST_CASE("C-96: confine_resolve_guest_path resolves inside and refuses escapes") {
  CHECK(confine_resolve_guest_path("a/b", "/w") == "/w/a/b");
  CHECK(confine_resolve_guest_path("", "/w") == "/w");
  CHECK(confine_resolve_guest_path(".", "/w/") == "/w");
  CHECK(confine_resolve_guest_path("/w/x", "/w") == "/w/x");     // absolute inside accepted
  CHECK(confine_resolve_guest_path("a/../b", "/w") == "/w/b");
  CHECK_THROWS_AS(confine_resolve_guest_path("..", "/w"), ValueError);
  CHECK_THROWS_AS(confine_resolve_guest_path("a/../../x", "/w"), ValueError);
  CHECK_THROWS_AS(confine_resolve_guest_path("/etc/passwd", "/w"), ValueError);
  CHECK_THROWS_AS(confine_resolve_guest_path("../w2/x", "/w"), ValueError);  // sibling prefix
  CHECK_THROWS_AS(confine_resolve_guest_path("a\\b", "/w"), ValueError);
  CHECK_THROWS_WITH(confine_resolve_guest_path("../x", "/w"), Catch::Contains("../x") && Catch::Contains("/w"));
}

TEST_CASE("C-99: resolve_working_directory: absolute as given, relative under the base, escape refused") {
  CHECK(resolve_working_directory("/abs//x/", "/base") == "/abs/x");
  CHECK(resolve_working_directory(".", "/base") == "/base");
  CHECK(resolve_working_directory("sub/dir", "/base") == "/base/sub/dir");
  CHECK(resolve_working_directory("", "/base") == "/base");
  CHECK_THROWS_AS(resolve_working_directory("../elsewhere", "/base"), ValueError);
  CHECK_THROWS_AS(resolve_working_directory("a\\b", "/base"), ValueError);
}

TEST_CASE("C-98: guest_path_and_ancestors lists the working directory chain below / then the path's segments") {
  using V = std::vector<std::string>;
  CHECK(guest_path_and_ancestors("/a/b/w/x/y", "/a/b/w") == V{"/a", "/a/b", "/a/b/w", "/a/b/w/x", "/a/b/w/x/y"});
  CHECK(guest_path_and_ancestors("/a/b/w", "/a/b/w") == V{"/a", "/a/b", "/a/b/w"});
  // Even a path above the working directory keeps the whole working-directory chain.
  CHECK(guest_path_and_ancestors("/a", "/a/b/w") == V{"/a", "/a/b", "/a/b/w"});
  CHECK(guest_path_and_ancestors("/x", "/") == V{"/x"});
  CHECK(guest_path_and_ancestors("/", "/") == V{});
}

TEST_CASE("C-100: the walk stops at the first absent directory and accepts") {
  MapStat s{{{"/w", EntryKind::Directory}}};
  BlockingRunner run;
  run([&] { return refuse_symlinked_ancestors(s.fn(), "/w/missing/deeper/file", "/w"); });
  CHECK(s.asked == std::vector<std::string>{"/w", "/w/missing"});
}

TEST_CASE("C-100: a link anywhere in the chain, the working directory's ancestors included, is a ValueError") {
  BlockingRunner run;
  MapStat above{{{"/a", EntryKind::Symlink}}};
  CHECK_THROWS_AS(run([&] { return refuse_symlinked_ancestors(above.fn(), "/a/w/f", "/a/w"); }), ValueError);
  MapStat wd{{{"/a", EntryKind::Directory}, {"/a/w", EntryKind::Symlink}}};
  CHECK_THROWS_WITH(run([&] { return refuse_symlinked_ancestors(wd.fn(), "/a/w/f", "/a/w"); }),
                    Catch::Contains("/a/w") && Catch::Contains("symbolic link"));
  MapStat below{{{"/a", EntryKind::Directory}, {"/a/w", EntryKind::Directory}, {"/a/w/d", EntryKind::Symlink}}};
  CHECK_THROWS_AS(run([&] { return refuse_symlinked_ancestors(below.fn(), "/a/w/d/f", "/a/w"); }), ValueError);
}

TEST_CASE("C-100: a non-directory ancestor is NotADirectoryError, not a confinement refusal") {
  BlockingRunner run;
  MapStat s{{{"/w", EntryKind::Directory}, {"/w/f", EntryKind::File}}};
  CHECK_THROWS_AS(run([&] { return refuse_symlinked_ancestors(s.fn(), "/w/f/x", "/w"); }), NotADirectoryError);
  MapStat o{{{"/w", EntryKind::Directory}, {"/w/fifo", EntryKind::Other}}};
  CHECK_THROWS_AS(run([&] { return refuse_symlinked_ancestors(o.fn(), "/w/fifo/x", "/w"); }), NotADirectoryError);
}

TEST_CASE("C-100: without include_self the leaf is not walked; with it, it is") {
  BlockingRunner run;
  MapStat s{{{"/w", EntryKind::Directory}, {"/w/link", EntryKind::Symlink}}};
  run([&] { return refuse_symlinked_ancestors(s.fn(), "/w/link", "/w", false); });
  CHECK(s.asked == std::vector<std::string>{"/w"});
  CHECK_THROWS_AS(run([&] { return refuse_symlinked_ancestors(s.fn(), "/w/link", "/w", true); }), ValueError);
}

TEST_CASE("C-102: confine_resolve_guest_write_path refuses the working directory, a leaf link and escapes") {
  BlockingRunner run;
  MapStat s{{{"/w", EntryKind::Directory}, {"/w/link", EntryKind::Symlink}, {"/w/d", EntryKind::Directory}}};
  CHECK(run([&] { return confine_resolve_guest_write_path(s.fn(), "d/new.txt", "/w"); }) == "/w/d/new.txt");
  CHECK(run([&] { return confine_resolve_guest_write_path(s.fn(), "/w/x", "/w"); }) == "/w/x");
  for (const char* wd_itself : {".", "", "a/.."}) {
    INFO(wd_itself);
    CHECK_THROWS_AS(run([&] { return confine_resolve_guest_write_path(s.fn(), wd_itself, "/w"); }), ValueError);
  }
  CHECK_THROWS_AS(run([&] { return confine_resolve_guest_write_path(s.fn(), "link", "/w"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return confine_resolve_guest_write_path(s.fn(), "link/x", "/w"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return confine_resolve_guest_write_path(s.fn(), "../x", "/w"); }), ValueError);
  CHECK_THROWS_AS(run([&] { return confine_resolve_guest_write_path(s.fn(), "a\\b", "/w"); }), ValueError);
}
