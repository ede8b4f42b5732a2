// The gate between a transport's reads and the core's sink (support/guest_stream.hpp), as
// the Docker and WSLC streams use it: the wrapper's header stripped wherever the reads split
// it, stderr held until it, the engine's words kept apart when nothing started, the cap
// (STR-5) delivering at most its value.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "maf/sandbox/support/guest_stream.hpp"

using namespace maf::sandbox;
using support::GuestStreamGate;

namespace {
struct Seen {
  std::vector<std::pair<OutputStream, std::string>> chunks;
  std::string of(OutputStream s) const {
    std::string out;
    for (const auto& [stream, bytes] : chunks)
      if (stream == s) out += bytes;
    return out;
  }
};
}  // namespace

TEST_CASE("STR-7 gate: a header split across reads is stripped; stderr read before it is delivered after it") {
  Seen seen;
  ExecOutputSink sink([&](OutputStream s, std::string_view b) { seen.chunks.emplace_back(s, std::string(b)); });
  GuestStreamGate gate(sink, 1024, "max_exec_output_bytes");
  CHECK(gate.feed(OutputStream::Stderr, "early"));
  CHECK(gate.feed(OutputStream::Stdout, "maf-exec-st"));
  CHECK(seen.chunks.empty());  // held: nothing is known to have started yet
  CHECK(gate.feed(OutputStream::Stdout, "ream 42\nhel"));
  REQUIRE(gate.pgid());
  CHECK(*gate.pgid() == "42");
  CHECK(gate.feed(OutputStream::Stdout, "lo\n"));
  CHECK(seen.of(OutputStream::Stdout) == "hello\n");
  CHECK(seen.of(OutputStream::Stderr) == "early");
  CHECK(seen.chunks.front().first == OutputStream::Stderr);
}

TEST_CASE("STR-7 gate: output that is not a header means nothing started; it is delivered as stderr at the end") {
  Seen seen;
  ExecOutputSink sink([&](OutputStream s, std::string_view b) { seen.chunks.emplace_back(s, std::string(b)); });
  GuestStreamGate gate(sink, 1024, "max_exec_output_bytes");
  CHECK(gate.feed(OutputStream::Stdout, "OCI runtime exec failed: chdir\n"));
  CHECK(gate.feed(OutputStream::Stdout, "maf-exec-stream 7\n"));  // too late to be the header
  CHECK_FALSE(gate.started());
  CHECK(seen.chunks.empty());
  gate.deliver_preamble();
  CHECK(seen.of(OutputStream::Stderr) == "OCI runtime exec failed: chdir\nmaf-exec-stream 7\n");
  CHECK(seen.of(OutputStream::Stdout).empty());
}

TEST_CASE("STR-5 gate: at most the cap is delivered, per stream or both together, and the stream is named") {
  Seen seen;
  ExecOutputSink sink([&](OutputStream s, std::string_view b) { seen.chunks.emplace_back(s, std::string(b)); });
  SECTION("per stream") {
    GuestStreamGate gate(sink, 8, "max_exec_output_bytes");
    CHECK(gate.feed(OutputStream::Stdout, "maf-exec-stream 9\n12345"));
    CHECK(gate.feed(OutputStream::Stderr, "abcdefgh"));  // stderr has its own 8
    CHECK_FALSE(gate.feed(OutputStream::Stdout, "6789"));
    REQUIRE(gate.over_cap());
    CHECK(*gate.over_cap() == OutputStream::Stdout);
    CHECK(seen.of(OutputStream::Stdout) == "12345678");
    CHECK_FALSE(gate.feed(OutputStream::Stderr, "x"));  // nothing more once over
  }
  SECTION("together") {
    GuestStreamGate gate(sink, 8, "budget", GuestStreamGate::CapScope::Together);
    CHECK(gate.feed(OutputStream::Stdout, "maf-exec-stream 9\n12345"));
    CHECK_FALSE(gate.feed(OutputStream::Stderr, "abcd"));
    REQUIRE(gate.over_cap());
    CHECK(*gate.over_cap() == OutputStream::Stderr);
    CHECK(seen.of(OutputStream::Stdout).size() + seen.of(OutputStream::Stderr).size() == 8);
  }
}

TEST_CASE("STR-6 gate: once the handler threw, the gate says stop and delivers nothing more") {
  int calls = 0;
  ExecOutputSink sink([&](OutputStream, std::string_view) {
    ++calls;
    throw std::runtime_error("no");
  });
  GuestStreamGate gate(sink, 1024, "max_exec_output_bytes");
  CHECK_FALSE(gate.feed(OutputStream::Stdout, "maf-exec-stream 3\nfirst"));
  CHECK(gate.stopped());
  CHECK_FALSE(gate.feed(OutputStream::Stdout, "more"));
  CHECK(calls == 1);
}

TEST_CASE("STR-2 the wrapper and the killer: the program follows the token verbatim; the killer targets the group") {
  const auto argv = support::guest_stream_argv("maf-exec-stream-abc", {"echo", "a;b"});
  REQUIRE(argv.size() == 6);
  CHECK(argv[0] == "sh");
  CHECK(argv[3] == "maf-exec-stream-abc");
  CHECK(argv[4] == "echo");
  CHECK(argv[5] == "a;b");
  const auto kill = support::guest_group_kill_argv("maf-exec-stream-abc", std::string("17"));
  CHECK(kill.back() == "17");
  CHECK(kill[kill.size() - 2] == "maf-exec-stream-abc");
  CHECK(support::guest_stream_token() != support::guest_stream_token());
}
