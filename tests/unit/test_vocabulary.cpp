// Vocabulary rules (C-1…C-34): isolation, egress, capabilities, small enums, key, limits,
// ExecResult text views, disposal folding.
#include <catch2/catch.hpp>

#include <unordered_set>

#include "maf/sandbox/async.hpp"

using namespace maf::sandbox;

TEST_CASE("C-1: Isolation parses exactly the seven values and refuses others naming the value") {
  CHECK(parse_isolation("none") == Isolation::None);
  CHECK(parse_isolation("runtime") == Isolation::Runtime);
  CHECK(parse_isolation("os_process") == Isolation::OsProcess);
  CHECK(parse_isolation("container") == Isolation::Container);
  CHECK(parse_isolation("hardened_container") == Isolation::HardenedContainer);
  CHECK(parse_isolation("microvm") == Isolation::MicroVm);
  CHECK(parse_isolation("vm") == Isolation::Vm);
  for (const char* bad : {"MICROVM", "micro-vm", "quantum", "", " vm"}) {
    try {
      parse_isolation(bad);
      FAIL("parsed " << bad);
    } catch (const ValueError& e) {
      CHECK_THAT(e.what(), Catch::Contains("'" + std::string(bad) + "' is not a valid Isolation"));
    }
  }
}

TEST_CASE("C-2: the legacy string 'process' never parses") {
  CHECK_THROWS_AS(parse_isolation("process"), ValueError);
  CHECK_FALSE(try_parse_enum<Isolation>("process").has_value());
}

TEST_CASE("C-3: order exists only through meets_floor") {
  CHECK(meets_floor(Isolation::MicroVm, Isolation::Container));
  CHECK(meets_floor(Isolation::Container, Isolation::Container));
  CHECK_FALSE(meets_floor(Isolation::OsProcess, Isolation::Container));
  CHECK(meets_floor(Isolation::OsProcess, Isolation::Runtime));
  CHECK_FALSE(meets_floor(Isolation::None, Isolation::Runtime));
  CHECK(isolation_ladder_text() == "none < runtime < os_process < container < hardened_container < microvm < vm");
}

TEST_CASE("C-4: stricter picks the higher rung; an absent opinion differs from NONE") {
  CHECK(stricter(Isolation::Container, Isolation::MicroVm) == Isolation::MicroVm);
  CHECK(stricter(Isolation::Vm, Isolation::MicroVm) == Isolation::Vm);
  CHECK(stricter(Isolation::Container, std::optional<Isolation>{}) == Isolation::Container);
  CHECK(stricter(Isolation::Container, std::optional<Isolation>{Isolation::None}) == Isolation::Container);
}

TEST_CASE("C-5/C-6: egress modes parse from strings and match by membership only") {
  CHECK(parse_egress("closed") == Egress::Closed);
  CHECK(parse_egress("allowlist") == Egress::Allowlist);
  CHECK(parse_egress("unrestricted") == Egress::Unrestricted);
  CHECK_THROWS_AS(parse_egress("undefined"), ValueError);
  CHECK_THROWS_AS(parse_egress("CLOSED"), ValueError);
  EgressSet modes = EgressSet::parse(std::vector<std::string>{"closed"});
  CHECK(modes.contains(Egress::Closed));
  CHECK_FALSE(modes.contains(Egress::Allowlist));
}

TEST_CASE("C-7: EgressRule validates methods as RFC 9110 tokens, case-sensitive, no duplicates, not empty") {
  CHECK_NOTHROW(EgressRule("api.example", std::vector<std::string>{"GET", "get", "PATCH"}));
  CHECK_THROWS_WITH(EgressRule("h", std::vector<std::string>{"GET/foo"}), Catch::Contains("'GET/foo'"));
  CHECK_THROWS_WITH(EgressRule("h", std::vector<std::string>{"GET", "GET"}), Catch::Contains("listed twice"));
  CHECK_THROWS_AS(EgressRule("h", std::vector<std::string>{}), ValueError);
  CHECK_THROWS_AS(EgressRule("h", std::vector<std::string>{""}), ValueError);
  CHECK_NOTHROW(EgressRule("not a host ~ at all"));  // hosts are not validated by core
  EgressRule rule("h", std::vector<std::string>{"get"});
  REQUIRE(rule.methods());
  CHECK((*rule.methods())[0] == "get");  // kept as spelled
}

TEST_CASE("C-11/C-12: default capabilities and unknown capability strings") {
  CHECK(kDefaultCapabilities == CapabilitySet{Capability::Exec, Capability::FilesIn});
  CHECK_THROWS_WITH(parse_capability("network"), Catch::Contains("'network' is not a valid Capability"));
  CHECK(parse_capability("files_delete") == Capability::FilesDelete);
  CHECK(parse_capability("egress_methods") == Capability::EgressMethods);
}

TEST_CASE("C-13: CALL scope is stricter than CONVERSATION") {
  CHECK(stricter(IsolationScope::Conversation, IsolationScope::Call) == IsolationScope::Call);
  CHECK(stricter(IsolationScope::Call, IsolationScope::Conversation) == IsolationScope::Call);
  CHECK(parse_isolation_scope("call") == IsolationScope::Call);
  CHECK_THROWS_AS(parse_isolation_scope("CALL"), ValueError);
}

TEST_CASE("vocabulary: sets print sorted by value and joined with ', '") {
  CapabilitySet caps{Capability::FilesOut, Capability::Exec, Capability::RunCode, Capability::FilesIn};
  CHECK(caps.to_string() == "exec, files_in, files_out, run_code");
  CHECK(CapabilitySet{}.to_string("nothing") == "nothing");
  CHECK(EgressSet{Egress::Unrestricted, Egress::Allowlist, Egress::Closed}.to_string() ==
        "allowlist, closed, unrestricted");
}

TEST_CASE("C-14/C-15: SandboxKey equality and hashing use every field, call_id included") {
  SandboxKey a{"s", "t", "agent", ""};
  SandboxKey b{"s", "t", "agent", "call-1"};
  CHECK_FALSE(a == b);
  std::unordered_set<SandboxKey> set{a, b, SandboxKey{"s", "t", "agent", ""}};
  CHECK(set.size() == 2);
  CHECK(to_string(b) == "s/t/agent/call-1");
}

TEST_CASE("C-16/C-17: CallerContext is read at call time and refuses an absent thread") {
  std::string scope = "tenant-a";
  std::optional<std::string> thread = "conv-1";
  CallerContext ctx{[&] { return scope; }, [&] { return thread; }, nullptr};
  CHECK(key_for_call(ctx, "agent") == SandboxKey{"tenant-a", "conv-1", "agent", ""});
  scope = "tenant-b";
  thread = "conv-2";
  CHECK(key_for_call(ctx, "agent", "c9") == SandboxKey{"tenant-b", "conv-2", "agent", "c9"});
  thread.reset();
  CHECK_THROWS_WITH(key_for_call(ctx, "agent"), Catch::Contains("no conversation is bound"));
}

TEST_CASE("C-21/C-22: TransferLimits.within and the shared default") {
  CHECK(kDefaultTransferLimits.max_bytes_per_file() == 8388608);
  CHECK(kDefaultTransferLimits.max_total_bytes() == 33554432);
  CHECK(kDefaultTransferLimits.max_files() == 64);
  CHECK(kDefaultTransferLimits.within(kDefaultTransferLimits));
  TransferLimits small(1, 2, 3);
  CHECK(small.within(kDefaultTransferLimits));
  CHECK_FALSE(kDefaultTransferLimits.within(small));
  CHECK_FALSE(TransferLimits(1, 100, 1).within(TransferLimits(1, 99, 1)));
}

TEST_CASE("C-23 [gap]: zero or negative limits are refused naming the field") {
  CHECK_THROWS_WITH(TransferLimits(0, 1, 1), Catch::Contains("max_bytes_per_file") && Catch::Contains("got 0"));
  CHECK_THROWS_WITH(TransferLimits(1, -5, 1), Catch::Contains("max_total_bytes") && Catch::Contains("-5"));
  CHECK_THROWS_WITH(TransferLimits(1, 1, 0), Catch::Contains("max_files"));
  CHECK(kDefaultSandboxLimits.files_in == kDefaultTransferLimits);
  CHECK(kDefaultSandboxLimits.files_out == kDefaultTransferLimits);
}

TEST_CASE("C-24: default declarations read silence per axis") {
  const BackendDeclarations& d = kDefaultBackendDeclarations;
  CHECK(d.capabilities == kDefaultCapabilities);
  CHECK(d.limits == kDefaultSandboxLimits);
  CHECK(d.egress_modes.empty());
  CHECK(d.os_families.empty());
  CHECK(d.effective_isolation_scopes() == IsolationScopeSet{IsolationScope::Conversation});
  CHECK_FALSE(d.egress_method_tokens.has_value());
}

TEST_CASE("C-27: ExecResult keeps bytes and decodes text with maximal-subpart replacement") {
  ExecResult r{std::string("ok \xff\xfe end"), std::string("\xe2\x82"), 7};
  CHECK(r.stdout_bytes.size() == 9);
  CHECK(r.stdout_text() == "ok \xEF\xBF\xBD\xEF\xBF\xBD end");
  CHECK(r.stderr_text() == "\xEF\xBF\xBD");  // a truncated 3-byte sequence is one maximal subpart
  CHECK(r.exit_code == 7);
  // Surrogates (ED A0 80) are invalid: ED is one subpart, then A0 and 80 each.
  CHECK(decode_utf8_replace("\xed\xa0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // Overlong encodings are invalid byte by byte.
  CHECK(decode_utf8_replace("\xc0\xaf") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(decode_utf8_replace("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(is_valid_utf8("\xf0\x9f\x98\x80"));
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK(ExecResult::from_text("hi").stdout_text() == "hi");
}

TEST_CASE("C-32/C-33: DisposalFailure folding by precedence") {
  CHECK_FALSE(fold({}).has_value());
  auto one = fold({{"weird", "d1"}});
  REQUIRE(one);
  CHECK(one->code == "unknown");
  CHECK(one->detail == "d1");
  auto many = fold({{"refused", "a"}, {"timeout", "b"}, {"unlisted", "c"}});
  REQUIRE(many);
  CHECK(many->code == "timeout");
  CHECK(many->detail == "a; b; c");
  CHECK(fold({{"unknown", "x"}, {"unreachable", "y"}})->code == "unreachable");
  CHECK(DisposalFailure{"refused", "still there"}.to_string() == "refused: still there");
}

TEST_CASE("C-34: ScopePurge defaults to zero and no failure") {
  ScopePurge p;
  CHECK(p.disposed == 0);
  CHECK_FALSE(p.undisposed.has_value());
}

TEST_CASE("C-121: argv quoting matches shlex.join") {
  CHECK(Command(std::vector<std::string>{"echo", "a b", "", "it's", "$(x);", "a=b,c:d@e%f+g.h/i-j_k"}).shell_line() ==
        "echo 'a b' '' 'it'\"'\"'s' '$(x);' a=b,c:d@e%f+g.h/i-j_k");
  CHECK(Command("echo $HOME").shell_line() == "echo $HOME");
  CHECK_FALSE(Command("x").is_argv());
}
