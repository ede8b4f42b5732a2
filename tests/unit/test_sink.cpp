// The file-system sink (C-94, with C-30/C-31): confinement on resolved paths, binary writes,
// and refusals that never name a host path.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <vector>

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/sink.hpp"
#include "maf/sandbox/sync.hpp"
#include "unit/temp_dir.hpp"

using namespace maf::sandbox;
namespace fs = std::filesystem;
using maf::sandbox::test::TempDir;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

Artifact artifact(std::string name, std::string content) {
  return Artifact{std::move(name), std::move(content), "kind", "application/octet-stream"};
}

}  // namespace

TEST_CASE("C-94: deliver writes the bytes in binary under the root, creating parents") {
  TempDir tmp;
  auto sink = make_file_system_sink(tmp.path() / "out");
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes += static_cast<char>(i);
  BlockingRunner run;
  const LandedArtifact landed = run([&] { return sink->deliver(artifact("nested/dir/all.bin", all_bytes)); });
  const fs::path expected = fs::canonical(tmp.path()) / "out" / "nested" / "dir" / "all.bin";
  CHECK(slurp(expected) == all_bytes);
  CHECK(landed.name == "nested/dir/all.bin");
  CHECK(landed.display == "nested/dir/all.bin (256 bytes)");
  CHECK(landed.handle == std::optional<std::string>(expected.string()));
}

TEST_CASE("C-94: a second delivery replaces the file; \\r\\n is never translated") {
  TempDir tmp;
  auto sink = make_file_system_sink(tmp.path());
  BlockingRunner run;
  run([&] { return sink->deliver(artifact("f.txt", "a much longer first version\r\n")); });
  run([&] { return sink->deliver(artifact("f.txt", "v2\r\n")); });
  CHECK(slurp(tmp.path() / "f.txt") == "v2\r\n");
}

TEST_CASE("C-94: a custom display formatter sees the artifact and its destination") {
  TempDir tmp;
  fs::path seen;
  auto sink = make_file_system_sink(tmp.path(), [&](const Artifact& a, const fs::path& destination) {
    seen = destination;
    return "landed " + a.name + " as " + a.kind;
  });
  BlockingRunner run;
  const auto landed = run([&] { return sink->deliver(artifact("x.txt", "x")); });
  CHECK(landed.display == "landed x.txt as kind");
  CHECK(seen == fs::canonical(tmp.path()) / "x.txt");
}

TEST_CASE("C-94: the sink's normalization is NFC") {
  TempDir tmp;
  CHECK(make_file_system_sink(tmp.path())->normalization() == NameNormalization::Nfc);
}

TEST_CASE("C-94: a symlink in the root pointing outside is refused, naming only the artifact") {
  TempDir tmp;
  const fs::path root = tmp.path() / "root";
  const fs::path outside = tmp.path() / "outside";
  fs::create_directories(root);
  fs::create_directories(outside);
  fs::create_directory_symlink(outside, root / "evil");
  auto sink = make_file_system_sink(root);
  BlockingRunner run;
  try {
    run([&] { return sink->deliver(artifact("evil/payload.txt", "x")); });
    FAIL("delivery through an escaping link was accepted");
  } catch (const SandboxLandingNotConfined& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("evil/payload.txt"));
    CHECK_THAT(message, !Catch::Contains(tmp.path().string()));
  }
  CHECK(fs::is_empty(outside));
}

TEST_CASE("C-94: a leaf link pointing outside is refused; nothing outside is replaced") {
  TempDir tmp;
  const fs::path root = tmp.path() / "root";
  put(tmp.path() / "secret.txt", "keep");
  fs::create_directories(root);
  fs::create_symlink(tmp.path() / "secret.txt", root / "leaf.txt");
  auto sink = make_file_system_sink(root);
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sink->deliver(artifact("leaf.txt", "overwritten")); }), SandboxLandingNotConfined);
  CHECK(slurp(tmp.path() / "secret.txt") == "keep");
}

TEST_CASE("C-94: a link that stays inside the root is followed") {
  TempDir tmp;
  const fs::path root = tmp.path() / "root";
  fs::create_directories(root / "real");
  fs::create_directory_symlink(root / "real", root / "alias");
  auto sink = make_file_system_sink(root);
  BlockingRunner run;
  const auto landed = run([&] { return sink->deliver(artifact("alias/f.txt", "in")); });
  CHECK(slurp(root / "real" / "f.txt") == "in");
  CHECK(landed.handle == std::optional<std::string>((fs::canonical(root) / "real" / "f.txt").string()));
}

TEST_CASE("C-94: traversal, absolute names and string-prefix siblings are refused by the sink itself") {
  TempDir tmp;
  const fs::path root = tmp.path() / "r";
  fs::create_directories(root);
  auto sink = make_file_system_sink(root);
  BlockingRunner run;
  const std::vector<std::string> names = {"../escape.txt", "a/../../escape.txt", "../r2/x.txt",
                                         (tmp.path() / "abs.txt").string(), ".", ""};
  for (const std::string& name : names) {
    INFO(name);
    CHECK_THROWS_AS(run([&] { return sink->deliver(artifact(name, "x")); }), SandboxLandingNotConfined);
  }
  CHECK(!fs::exists(tmp.path() / "escape.txt"));
  CHECK(!fs::exists(tmp.path() / "r2"));
  CHECK(!fs::exists(tmp.path() / "abs.txt"));
}

TEST_CASE("C-94: the root is resolved once, when the sink is made") {
  TempDir tmp;
  fs::create_directories(tmp.path() / "first");
  fs::create_directories(tmp.path() / "second");
  fs::create_directory_symlink(tmp.path() / "first", tmp.path() / "current");
  auto sink = make_file_system_sink(tmp.path() / "current");
  fs::remove(tmp.path() / "current");
  fs::create_directory_symlink(tmp.path() / "second", tmp.path() / "current");
  BlockingRunner run;
  run([&] { return sink->deliver(artifact("f.txt", "1")); });
  CHECK(fs::exists(tmp.path() / "first" / "f.txt"));
  CHECK(!fs::exists(tmp.path() / "second" / "f.txt"));
}

TEST_CASE("C-94: a root that does not exist yet is created on the first delivery") {
  TempDir tmp;
  auto sink = make_file_system_sink(tmp.path() / "not" / "yet");
  BlockingRunner run;
  run([&] { return sink->deliver(artifact("f.txt", "1")); });
  CHECK(slurp(tmp.path() / "not" / "yet" / "f.txt") == "1");
}

TEST_CASE("C-31: a write the host refuses raises (an OSError), never returns a refusal") {
  TempDir tmp;
  fs::create_directories(tmp.path() / "taken.txt");  // a directory where the file should go
  auto sink = make_file_system_sink(tmp.path());
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return sink->deliver(artifact("taken.txt", "x")); }), OSError);
}
