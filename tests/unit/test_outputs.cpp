// Output collection (C-81…C-93), driven through the in-process double.
// Expected lowercase/NFC spellings were computed with CPython 3.11 (str.lower,
// unicodedata.normalize) and are hard-coded.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include "message_of.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/outputs.hpp"
#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/testing/in_process.hpp"
#include "unit/temp_dir.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::testing;
using maf::sandbox::test::message_of;
using maf::sandbox::test::TempDir;
namespace fs = std::filesystem;

namespace {

constexpr const char* W = "/maf-sandbox/work";

/// A sink that records what it was given and answers with a recognisable LandedArtifact;
/// optionally refuses the n-th delivery (1-based).
class RecordingSink : public OutputSink {
public:
  explicit RecordingSink(NameNormalization n = NameNormalization::Nfc, int refuse_at = 0)
      : normalization_(n), refuse_at_(refuse_at) {}
  boost::asio::awaitable<LandedArtifact> deliver(Artifact a) override {
    if (++calls == refuse_at_) throw SandboxLandingNotConfined("refused " + a.name);
    delivered.push_back(a);
    co_return LandedArtifact{a.name, "shown:" + a.name, "handle:" + std::to_string(calls)};
  }
  NameNormalization normalization() const noexcept override { return normalization_; }

  std::vector<Artifact> delivered;
  int calls = 0;

private:
  NameNormalization normalization_;
  int refuse_at_;
};

DeclaredOutput land(std::string path, std::optional<std::string> name = std::nullopt, bool required = true) {
  return DeclaredOutput{std::move(path), OutputDisposition::Land, std::nullopt, required, std::move(name)};
}
DeclaredOutput consume(std::string path) { return DeclaredOutput{std::move(path), OutputDisposition::Consume}; }

SandboxSpec spec_with(std::vector<DeclaredOutput> outputs, TransferLimits out = kDefaultTransferLimits,
                      bool at_call_time = false) {
  return SandboxSpec({.kind = "report",
                      .declared_outputs = std::move(outputs),
                      .files_out = out,
                      .outputs_named_at_call_time = at_call_time});
}

std::shared_ptr<InProcessSandbox> sandbox_with(std::map<std::string, SeedValue> seed) {
  return std::make_shared<InProcessSandbox>(InProcessSandboxOptions{.seed_files = std::move(seed)});
}

std::string nfd_e_acute() { return "e\xCC\x81"; }  // e + COMBINING ACUTE ACCENT
std::string nfc_e_acute() { return "\xC3\xA9"; }   // U+00E9

}  // namespace

// --- C-81 validate_artifact_name ---

TEST_CASE("C-81: empty artifact name is refused") {
  CHECK_THROWS_WITH(validate_artifact_name(""), Catch::Contains("non-empty"));
}

TEST_CASE("C-81: each rule is named, checked in the documented order") {
  CHECK_THROWS_WITH(validate_artifact_name("a\\b"), Catch::Contains("backslash"));
  CHECK_THROWS_WITH(validate_artifact_name("/a\\b"), Catch::Contains("backslash"));  // backslash before absolute
  CHECK_THROWS_WITH(validate_artifact_name("/etc/x"), Catch::Contains("absolute"));
  CHECK_THROWS_WITH(validate_artifact_name("/../x"), Catch::Contains("absolute"));   // absolute before traversal
  CHECK_THROWS_WITH(validate_artifact_name("a/../b"), Catch::Contains("traversal"));
  CHECK_THROWS_WITH(validate_artifact_name("a//../b"), Catch::Contains("traversal"));  // traversal before segment
  for (const char* bad : {"a//b", "a/./b", "a/", "./a", "."}) {
    INFO(bad);
    CHECK_THROWS_WITH(validate_artifact_name(bad), Catch::Contains("segment"));
  }
  CHECK_THROWS_WITH(validate_artifact_name(std::string("a\x01" "b\x1f", 4)), Catch::Contains("U+0001, U+001F"));
  CHECK_THROWS_WITH(validate_artifact_name(std::string("a\0b", 3)), Catch::Contains("U+0000"));
  CHECK_THROWS_WITH(validate_artifact_name("a\x01\xff"), Catch::Contains("control"));  // control before UTF-8
  CHECK_THROWS_WITH(validate_artifact_name("bad\xff"), Catch::Contains("UTF-8"));
  CHECK_THROWS_WITH(validate_artifact_name("\xED\xA0\x80"), Catch::Contains("UTF-8"));  // encoded surrogate
  CHECK_THROWS_WITH(validate_artifact_name("\xC0\xAF"), Catch::Contains("UTF-8"));      // overlong
  CHECK_THROWS_AS(validate_artifact_name(""), SandboxArtifactNameInvalid);
}

TEST_CASE("C-81: the 255-byte ceiling counts UTF-8 bytes and states the count") {
  validate_artifact_name(std::string(255, 'a'));
  CHECK_THROWS_WITH(validate_artifact_name(std::string(256, 'a')), Catch::Contains("256"));
  std::string two_byte;
  for (int i = 0; i < 128; ++i) two_byte += nfc_e_acute();  // 128 code points, 256 bytes
  CHECK_THROWS_WITH(validate_artifact_name(two_byte), Catch::Contains("256"));
}

TEST_CASE("C-82: nothing further is checked: CON, ':' and U+007F are accepted") {
  validate_artifact_name("CON");
  validate_artifact_name("a:b");
  validate_artifact_name("del\x7f");
  validate_artifact_name("dir/file.tar.gz");
  validate_artifact_name("...");
}

TEST_CASE("C-82: portable_name rewrites per segment, only when asked") {
  CHECK(portable_name("a<b>:c\"d|e?f*g") == "a_b__c_d_e_f_g");
  CHECK(portable_name("\x01x") == "_x");
  CHECK(portable_name("name. . ") == "name");
  CHECK(portable_name("con.txt") == "con_.txt");
  CHECK(portable_name("CON") == "CON_");
  CHECK(portable_name("Aux") == "Aux_");
  CHECK(portable_name("dir/NUL.tar.gz") == "dir/NUL_.tar.gz");
  CHECK(portable_name("lpt9") == "lpt9_");
  CHECK(portable_name("COM\xC2\xB9.log") == "COM\xC2\xB9_.log");  // COM¹
  CHECK(portable_name("com10") == "com10");
  CHECK(portable_name("CONFIG") == "CONFIG");
  CHECK(portable_name("con.") == "con_");
  CHECK(portable_name("a//b") == "a/_/b");
  CHECK(portable_name("...") == "_");
  CHECK(portable_name("plain/name.txt") == "plain/name.txt");
}

// --- C-83 helpers ---

TEST_CASE("C-83: landing_outputs, spec_lands_artifacts and missing_sink_refusal") {
  const auto spec = spec_with({land("a.txt"), consume("b.json"), land("c.png")});
  const auto landing = landing_outputs(spec);
  REQUIRE(landing.size() == 2);
  CHECK(landing[0].path == "a.txt");
  CHECK(landing[1].path == "c.png");
  CHECK(spec_lands_artifacts(spec));
  CHECK_FALSE(spec_lands_artifacts(spec_with({consume("b.json")})));
  CHECK(spec_lands_artifacts(spec_with({}, kDefaultTransferLimits, true)));
  const SandboxOutputSinkRequired refusal = missing_sink_refusal(spec, landing, "the tool session");
  const std::string m = refusal.what();
  CHECK_THAT(m, Catch::Contains("report") && Catch::Contains("a.txt") && Catch::Contains("c.png") &&
                    Catch::Contains("the tool session"));
  const std::string call_time = missing_sink_refusal(spec_with({}, kDefaultTransferLimits, true), {}, "x").what();
  CHECK_THAT(call_time, Catch::Contains("lands artifacts it names at call time"));
}

// --- Phase A (C-84…C-87) ---

TEST_CASE("C-84: call-time outputs without the flag are a plain ValueError naming kind and count") {
  auto sb = sandbox_with({});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  try {
    run([&] { return collect_outputs(*sb, spec_with({}), sink, {land("x"), land("y")}); });
    FAIL("accepted");
  } catch (const SandboxOutputError&) {
    FAIL("must not be in the output family");
  } catch (const ValueError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("report") && Catch::Contains("2"));
  }
  CHECK(sb->hook_counts().lstat == 0);
}

TEST_CASE("C-85: anything that lands needs a sink; CONSUME alone does not") {
  auto sb = sandbox_with({{"b.json", std::string("{}")}});
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({consume("b.json"), land("a.txt")})); }),
                  SandboxOutputSinkRequired);
  CHECK(sb->hook_counts().lstat == 0);
  CHECK(run([&] { return collect_outputs(*sb, spec_with({consume("b.json")})); }).empty());
  // Call-time outputs that land need one too.
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({}, kDefaultTransferLimits, true), nullptr,
                                                   {land("late.txt")}); }),
                  SandboxOutputSinkRequired);
}

TEST_CASE("C-85/C-93: declared outputs come first, then call-time outputs, delivered in that order") {
  auto sb = sandbox_with({{"a.txt", std::string("A")}, {"b.txt", std::string("BB")}, {"c.txt", std::string("C")}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  const auto landed = run([&] {
    return collect_outputs(*sb, spec_with({land("b.txt"), land("a.txt")}, kDefaultTransferLimits, true), sink,
                           {land("c.txt")});
  });
  REQUIRE(landed.size() == 3);
  CHECK(landed[0].name == "b.txt");
  CHECK(landed[1].name == "a.txt");
  CHECK(landed[2].name == "c.txt");
  CHECK(landed[2].display == "shown:c.txt");  // exactly what the sink returned
  CHECK(landed[2].handle == std::optional<std::string>("handle:3"));
}

TEST_CASE("C-86: every path is validated, CONSUME included; a differing name is validated too") {
  auto sb = sandbox_with({});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({consume("../escape")}), sink); }),
                  SandboxArtifactNameInvalid);
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({land("ok.txt", "../x.txt")}), sink); }),
                  SandboxArtifactNameInvalid);
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({land("ok.txt", "bad\xff")}), sink); }),
                  SandboxArtifactNameInvalid);
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({land("/abs/path")}), sink); }),
                  SandboxArtifactNameInvalid);
  CHECK(sb->hook_counts().lstat == 0);
}

TEST_CASE("C-86: the delivered name is `name` (else `path`), NFC-normalised for an NFC sink") {
  auto sb = sandbox_with({{"out/r.txt", std::string("r")}, {"caf" + nfd_e_acute(), std::string("c")}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  const auto landed =
      run([&] { return collect_outputs(*sb, spec_with({land("out/r.txt", "report.txt"), land("caf" + nfd_e_acute())}), sink); });
  REQUIRE(sink->delivered.size() == 2);
  CHECK(sink->delivered[0].name == "report.txt");
  CHECK(sink->delivered[1].name == "caf" + nfc_e_acute());
  auto raw = std::make_shared<RecordingSink>(NameNormalization::None);
  run([&] { return collect_outputs(*sb, spec_with({land("caf" + nfd_e_acute())}), raw); });
  CHECK(raw->delivered[0].name == "caf" + nfd_e_acute());
}

TEST_CASE("C-86: an NFC/NFD pair collides, naming both paths and the Unicode-form reason") {
  auto sb = sandbox_with({});
  BlockingRunner run;
  for (auto normalization : {NameNormalization::Nfc, NameNormalization::None}) {
    auto sink = std::make_shared<RecordingSink>(normalization);
    const auto m = message_of<SandboxArtifactNameCollision>([&] {
      run([&] { return collect_outputs(*sb, spec_with({land("caf" + nfc_e_acute()), land("caf" + nfd_e_acute())}), sink); });
    });
    CHECK_THAT(m, Catch::Contains("caf" + nfc_e_acute()) && Catch::Contains("caf" + nfd_e_acute()));
    if (normalization == NameNormalization::None) CHECK_THAT(m, Catch::Contains("case or Unicode form"));
    else CHECK_THAT(m, Catch::Contains("identical"));  // both deliver as the NFC spelling
  }
  CHECK(sb->hook_counts().lstat == 0);
}

TEST_CASE("C-86: a case-only pair collides; an identical delivered name says so") {
  auto sb = sandbox_with({});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  const auto case_only = message_of<SandboxArtifactNameCollision>(
      [&] { run([&] { return collect_outputs(*sb, spec_with({land("Report.TXT"), land("report.txt")}), sink); }); });
  CHECK_THAT(case_only, Catch::Contains("Report.TXT") && Catch::Contains("report.txt") &&
                            Catch::Contains("case or Unicode form"));
  const auto identical = message_of<SandboxArtifactNameCollision>([&] {
    run([&] { return collect_outputs(*sb, spec_with({land("a.txt", "same.txt"), land("b.txt", "same.txt")}), sink); });
  });
  CHECK_THAT(identical, Catch::Contains("a.txt") && Catch::Contains("b.txt") && Catch::Contains("identical"));
  // CONSUME outputs land nowhere, so they never collide.
  sb->seed("x.txt", std::string("1"));
  sb->seed("X.TXT", std::string("2"));
  CHECK(run([&] { return collect_outputs(*sb, spec_with({consume("x.txt"), land("X.TXT")}), sink); }).size() == 1);
}

TEST_CASE("C-87: lowercase is Python's str.lower, not case folding") {
  auto sb = std::make_shared<InProcessSandbox>();
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  auto collides = [&](std::string a, std::string b) {
    sb->seed(a, std::string("1"));
    sb->seed(b, std::string("2"));
    try {
      run([&] { return collect_outputs(*sb, spec_with({land(a), land(b)}), sink); });
      return false;
    } catch (const SandboxArtifactNameCollision&) {
      return true;
    }
  };
  CHECK_FALSE(collides("Stra\xC3\x9F" "e", "Strasse"));                  // Straße / Strasse
  CHECK_FALSE(collides("\xEF\xAC\x81le", "file"));                       // ﬁle / file
  CHECK(collides("\xC4\xB0x", "i\xCC\x87x"));                            // İx -> i̇x (two code points)
  CHECK(collides("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3", "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82"));  // ΟΔΟΣ -> οδος (final)
  CHECK_FALSE(collides("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3", "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83"));  // not οδοσ
  // '.' is case-ignorable and 't' is cased, so this sigma is not final: οδοσ.txt.
  CHECK(collides("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3.txt", "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x83.txt"));
  CHECK(collides("\xC7\x84", "\xC7\x85"));                               // Ǆ and ǅ both lower to ǆ
  CHECK(collides("\xE1\xBA\x9E", "\xC3\x9F"));                           // ẞ lowers to ß
}

TEST_CASE("C-87: the byte ceiling is judged on the delivered, post-NFC spelling") {
  // 100 x (e + U+0301) is 300 bytes as NFD and 200 bytes as NFC.
  std::string nfd, nfc;
  for (int i = 0; i < 100; ++i) {
    nfd += nfd_e_acute();
    nfc += nfc_e_acute();
  }
  auto sb = sandbox_with({{"f.txt", std::string("x")}});
  BlockingRunner run;
  auto nfc_sink = std::make_shared<RecordingSink>();
  run([&] { return collect_outputs(*sb, spec_with({land("f.txt", nfd)}), nfc_sink); });
  CHECK(nfc_sink->delivered[0].name == nfc);
  auto raw_sink = std::make_shared<RecordingSink>(NameNormalization::None);
  CHECK_THROWS_WITH(run([&] { return collect_outputs(*sb, spec_with({land("f.txt", nfd)}), raw_sink); }),
                    Catch::Contains("300"));
}

// --- Phase B (C-88…C-90) ---

TEST_CASE("C-88: a confinement refusal from stat becomes SandboxOutputNotConfined, keeping the cause") {
  auto sb = sandbox_with({{"link", EntryKind::Symlink}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  try {
    run([&] { return collect_outputs(*sb, spec_with({land("link/out.txt")}), sink); });
    FAIL("accepted");
  } catch (const SandboxOutputNotConfined& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("link/out.txt") && Catch::Contains("symbolic link"));
    CHECK_THROWS_AS(std::rethrow_if_nested(e), ValueError);
  }
  CHECK(sink->calls == 0);
}

TEST_CASE("C-88: an I/O refusal from stat becomes SandboxOutputUnreachable, keeping the cause") {
  auto sb = sandbox_with({{"file", std::string("x")}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  try {
    run([&] { return collect_outputs(*sb, spec_with({land("file/out.txt")}), sink); });
    FAIL("accepted");
  } catch (const SandboxOutputUnreachable& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("file/out.txt") && Catch::Contains("not a directory"));
    CHECK_THROWS_AS(std::rethrow_if_nested(e), NotADirectoryError);
  }
  // A link above the working directory is a confinement refusal too (the walk covers it).
  auto above = sandbox_with({{"/maf-sandbox", EntryKind::Symlink}});
  CHECK_THROWS_AS(run([&] { return collect_outputs(*above, spec_with({land("r.txt")}), sink); }),
                  SandboxOutputNotConfined);
}

TEST_CASE("C-88: other exception types propagate unchanged") {
  auto sb = std::make_shared<InProcessSandbox>(InProcessSandboxOptions{.capabilities = {Capability::Exec}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({land("r.txt")}), sink); }), NotImplementedError);
}

TEST_CASE("C-88: stat uses the spec's work_dir") {
  auto sb = sandbox_with({{"/job/out.txt", std::string("job")}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  const SandboxSpec spec({.kind = "report", .work_dir = "/job", .declared_outputs = {land("out.txt")}});
  run([&] { return collect_outputs(*sb, spec, sink); });
  CHECK(sink->delivered.at(0).content == "job");
}

TEST_CASE("C-89: a missing required output is refused; a missing optional one is skipped and not counted") {
  auto sb = sandbox_with({{"here.txt", std::string("1")}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return collect_outputs(*sb, spec_with({land("here.txt"), land("gone.txt")}), sink); }),
                    Catch::Contains("report") && Catch::Contains("gone.txt"));
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({land("gone.txt")}), sink); }), SandboxOutputMissing);
  // max_files = 1: the absent optional output does not use up the one slot.
  const auto landed = run([&] {
    return collect_outputs(*sb, spec_with({land("gone.txt", std::nullopt, false), land("here.txt")}, {100, 100, 1}), sink);
  });
  CHECK(landed.size() == 1);
}

TEST_CASE("C-89: a directory, a FIFO/other and a link are not regular") {
  auto sb = sandbox_with({{"d/x", std::string()}, {"fifo", EntryKind::Other}, {"link", EntryKind::Symlink}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  for (const char* path : {"d", "fifo", "link"}) {
    INFO(path);
    CHECK_THROWS_WITH(run([&] { return collect_outputs(*sb, spec_with({land(path)}), sink); }),
                      Catch::Contains(path) && Catch::Contains("not a regular file"));
    CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({consume(path)}), sink); }), SandboxOutputNotRegular);
  }
  CHECK(sb->hook_counts().read_file == 0);
}

namespace {
/// A backend whose stat cannot tell a file's size (C-28: unknown fails closed).
class SizelessSandbox : public InProcessSandbox {
public:
  using InProcessSandbox::InProcessSandbox;

protected:
  boost::asio::awaitable<std::optional<GuestStat>> do_lstat(const std::string& p) override {
    auto s = co_await InProcessSandbox::do_lstat(p);
    if (s) s->size_bytes.reset();
    co_return s;
  }
};
}  // namespace

TEST_CASE("C-89: a file of unknown size is refused, never read") {
  SizelessSandbox sb({.seed_files = {{"f.txt", std::string("abc")}}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return collect_outputs(sb, spec_with({land("f.txt")}), sink); }), SandboxOutputSizeUnknown);
  CHECK(sb.hook_counts().read_file == 0);
}

TEST_CASE("C-90: a file over the per-file cap is refused from its stat before any byte is read") {
  auto sb = sandbox_with({{"small.txt", std::string(10, 's')}, {"big.bin", std::string(1001, 'b')}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  const auto m = message_of<SandboxTransferCapExceeded>([&] {
    run([&] { return collect_outputs(*sb, spec_with({land("small.txt"), land("big.bin")}, {1000, 1'000'000, 10}), sink); });
  });
  CHECK_THAT(m, Catch::Contains("big.bin") && Catch::Contains("max_bytes_per_file=1000"));
  const auto counts = sb->hook_counts();
  CHECK(counts.read_file == 0);
  CHECK(counts.bytes_read == 0);
  CHECK(sink->calls == 0);
}

TEST_CASE("C-90: 10 000 tiny declared files are refused by the count cap") {
  std::map<std::string, SeedValue> seed;
  std::vector<DeclaredOutput> declared;
  for (int i = 0; i < 10'000; ++i) {
    const std::string name = "tiny/" + std::to_string(i) + ".txt";
    seed.emplace(name, std::string("x"));
    declared.push_back(land(name));
  }
  auto sb = sandbox_with(std::move(seed));
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  const auto m = message_of<SandboxTransferCapExceeded>(
      [&] { run([&] { return collect_outputs(*sb, spec_with(std::move(declared)), sink); }); });
  CHECK_THAT(m, Catch::Contains("tiny/64.txt") && Catch::Contains("max_files=64"));
  CHECK(sb->hook_counts().read_file == 0);
  CHECK(sink->calls == 0);
}

TEST_CASE("C-90: CONSUME outputs count against the caps; the per-file cap is checked before the count") {
  auto sb = sandbox_with({{"a.json", std::string(5, 'a')}, {"b.txt", std::string(5, 'b')}, {"big", std::string(50, 'x')}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return collect_outputs(*sb, spec_with({consume("a.json"), land("b.txt")}, {100, 100, 1}), sink); }),
                    Catch::Contains("b.txt") && Catch::Contains("max_files=1"));
  CHECK_THROWS_WITH(run([&] { return collect_outputs(*sb, spec_with({consume("a.json"), land("big")}, {10, 100, 1}), sink); }),
                    Catch::Contains("max_bytes_per_file=10"));
  CHECK_THROWS_WITH(run([&] { return collect_outputs(*sb, spec_with({consume("a.json"), land("b.txt")}, {10, 9, 5}), sink); }),
                    Catch::Contains("b.txt") && Catch::Contains("max_total_bytes=9"));
  CHECK(sink->calls == 0);
}

TEST_CASE("C-90: when nothing lands, the result is empty and the sink is never called") {
  auto sb = sandbox_with({{"a.json", std::string("{}")}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  CHECK(run([&] { return collect_outputs(*sb, spec_with({consume("a.json"), land("opt", std::nullopt, false)}), sink); })
            .empty());
  CHECK(sink->calls == 0);
  CHECK(sb->hook_counts().read_file == 0);  // C-92: CONSUME is never read here
}

// --- Phase C (C-91, C-92) ---

TEST_CASE("C-91: a file that grows between stat and read is refused in phase C; nothing is delivered") {
  auto sb = sandbox_with({{"first.txt", std::string("1")}, {"grows.txt", std::string(10, 'g')}});
  auto sink = std::make_shared<RecordingSink>();
  bool grown = false;
  sb->set_operation_hook([&](FileOperation op) {
    if (op == FileOperation::Read && !grown) {
      grown = true;  // after every stat of phase B, before the first read of phase C
      sb->seed("grows.txt", std::string(5000, 'g'));
    }
  });
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({land("first.txt"), land("grows.txt")}), sink); }),
                  SandboxTransferCapExceeded);
  CHECK(grown);
  CHECK(sink->calls == 0);
  CHECK(sb->hook_counts().bytes_read <= 1);  // only first.txt's byte was ever handed over
}

TEST_CASE("C-91: a read that fails after a good stat is translated like a stat") {
  auto sb = sandbox_with({{"r.txt", std::string("r")}});
  auto sink = std::make_shared<RecordingSink>();
  sb->set_operation_hook([&](FileOperation op) {
    if (op == FileOperation::Read) sb->seed("r.txt", EntryKind::Other);  // swapped for a FIFO
  });
  BlockingRunner run;
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({land("r.txt")}), sink); }), SandboxOutputUnreachable);
  sb->set_operation_hook([&](FileOperation op) {
    if (op == FileOperation::Read) {
      sb->erase("d");
      sb->seed("d", EntryKind::Symlink);  // a parent swapped for a link
    }
  });
  sb->seed("d/x.txt", std::string("x"));
  CHECK_THROWS_AS(run([&] { return collect_outputs(*sb, spec_with({land("d/x.txt")}), sink); }), SandboxOutputNotConfined);
  CHECK(sink->calls == 0);
}

TEST_CASE("C-92: an artifact carries the delivered name, the bytes, the kind and the declared media type") {
  auto sb = sandbox_with({{"out.png", std::string("\x89PNG\r\n\x1a\n", 8)}, {"state.json", std::string("{}")}});
  auto sink = std::make_shared<RecordingSink>();
  BlockingRunner run;
  DeclaredOutput png{"out.png", OutputDisposition::Land, "image/png", true, "chart.png"};
  run([&] { return collect_outputs(*sb, spec_with({png, consume("state.json")}), sink); });
  REQUIRE(sink->delivered.size() == 1);
  const Artifact& a = sink->delivered[0];
  CHECK(a.name == "chart.png");
  CHECK(a.content == std::string("\x89PNG\r\n\x1a\n", 8));
  CHECK(a.kind == "report");
  CHECK(a.media_type == std::optional<std::string>("image/png"));
  CHECK(sb->hook_counts().read_file == 1);
}

// --- Phase D (C-93) ---

TEST_CASE("C-93: a sink refusal after partial delivery keeps the earlier deliveries") {
  TempDir tmp;
  const fs::path root = tmp.path() / "landing";
  fs::create_directories(root);
  fs::create_directories(tmp.path() / "outside");
  fs::create_directory_symlink(tmp.path() / "outside", root / "escape");
  auto sb = sandbox_with({{"a.txt", std::string("A")}, {"b.txt", std::string("B")}, {"c.txt", std::string("C")}});
  auto sink = make_file_system_sink(root);
  BlockingRunner run;
  CHECK_THROWS_AS(
      run([&] { return collect_outputs(*sb, spec_with({land("a.txt"), land("b.txt", "escape/b.txt"), land("c.txt")}), sink); }),
      SandboxLandingNotConfined);
  CHECK(fs::exists(root / "a.txt"));             // delivered before the refusal: kept
  CHECK(fs::is_empty(tmp.path() / "outside"));   // the refused one went nowhere
  CHECK(!fs::exists(root / "c.txt"));            // nothing after the refusal
}

TEST_CASE("C-93: a refusing recording sink is called once per artifact until it refuses") {
  auto sb = sandbox_with({{"a.txt", std::string("A")}, {"b.txt", std::string("B")}, {"c.txt", std::string("C")}});
  auto sink = std::make_shared<RecordingSink>(NameNormalization::Nfc, 2);
  BlockingRunner run;
  CHECK_THROWS_WITH(run([&] { return collect_outputs(*sb, spec_with({land("a.txt"), land("b.txt"), land("c.txt")}), sink); }),
                    "refused b.txt");
  CHECK(sink->calls == 2);
  REQUIRE(sink->delivered.size() == 1);
  CHECK(sink->delivered[0].name == "a.txt");
}

TEST_CASE("C-93: end to end into the file-system sink") {
  TempDir tmp;
  auto sb = sandbox_with({{"out/report.md", std::string("# hi\n")}});
  BlockingRunner run;
  const auto landed = run([&] {
    return collect_outputs(*sb, spec_with({land("out/report.md")}), make_file_system_sink(tmp.path()));
  });
  REQUIRE(landed.size() == 1);
  CHECK(landed[0].display == "out/report.md (5 bytes)");
  std::ifstream in(tmp.path() / "out" / "report.md", std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "# hi\n");
}
