// Every suite that runs a program, against a host-tree double that is honest — and against
// deliberately broken ones, each of which must fail exactly the probes named for its flaw.
// A probe that cannot fail is a defect.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "maf/sandbox/conformance/conformance.hpp"
#include "support/host_tree_sandbox.hpp"
#include "support/process_tag.hpp"
#include "support/host_addresses.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::conformance;
using Ids = std::vector<std::string>;

namespace {

struct HostTreeFixture {
  test::TempDir dir{"maf-conformance-tree"};
  BlockingRunner run;
  std::shared_ptr<test::HostTreeSandbox> sandbox;
  std::unique_ptr<PosixGuestSubject> subject;

  explicit HostTreeFixture(test::Flaw flaw = test::Flaw::None, std::optional<Egress> claimed = std::nullopt) {
    sandbox = std::make_shared<test::HostTreeSandbox>(dir.path(), flaw);
    subject = std::make_unique<PosixGuestSubject>(run, sandbox, sandbox->capabilities(), claimed);
    subject->set_exec_timeout(std::chrono::seconds(20));
  }
};

/// A one-shot-per-connection HTTP server on the host's loopback answering 200 to anything.
class Http200 {
public:
  Http200() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        char buf[2048];
        (void)!::read(c, buf, sizeof buf);
        const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
        (void)!::write(c, reply, sizeof reply - 1);
        ::close(c);
      }
    });
  }
  ~Http200() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("conformance: an honest host-tree double passes FILES_OUT, READ_CAP, FILES_IN, FILES_DELETE and EXEC") {
  HostTreeFixture f;
  for (Suite s : {Suite::FilesOut, Suite::ReadCap, Suite::FilesIn, Suite::FilesDelete, Suite::Exec}) {
    INFO(suite_label(s));
    std::vector<ProbeResult> results;
    REQUIRE_NOTHROW(results = check_suite(s, *f.subject));
    CHECK(ids_with(results, Outcome::Skip).empty());
    CHECK(ids_with(results, Outcome::Pass).size() == probes(s).size());
  }
  // R8: the measurement agrees with the verdict for a backend that declares files_delete.
  CHECK(ids_with(measure_files_delete_probes(*f.subject), Outcome::Pass).size() == 10);
}

TEST_CASE("conformance: broken double — following links on stat/read fails FO-2…FO-7 and FO-9…FO-12") {
  HostTreeFixture f(test::Flaw::FollowLinks);
  const auto results = run_files_out(*f.subject);
  CHECK(ids_with(results, Outcome::Fail) ==
        Ids{"FO-2", "FO-3", "FO-4", "FO-5", "FO-6", "FO-7", "FO-9", "FO-10", "FO-11", "FO-12"});
  CHECK_THROWS_AS(check_files_out(*f.subject), ConformanceFailure);
}

TEST_CASE("conformance: broken double — ignoring the working directory fails EX-4") {
  HostTreeFixture f(test::Flaw::IgnoreWorkingDirectory);
  const auto results = run_exec(*f.subject);
  CHECK(ids_with(results, Outcome::Fail) == Ids{"EX-4"});
}

TEST_CASE("conformance: broken double — claiming closed egress on an open network fails EC-1, EC-2, EC-3") {
  HostTreeFixture f(test::Flaw::None, Egress::Closed);
  const auto results = run_egress_closed(*f.subject);
  if (test::host_has_non_loopback_address())
    CHECK(ids_with(results, Outcome::Fail) == Ids{"EC-1", "EC-2", "EC-3"});
  else
    CHECK(ids_with(results, Outcome::Fail) == Ids{"EC-1", "EC-3"});
  for (const auto& r : results) INFO(r.id << ": " << r.message);
  CHECK_THAT(results[0].message, Catch::Contains("host listener received a connection"));
  CHECK_THAT(results[2].message, Catch::Contains("DNS responder received a query"));
}

TEST_CASE("conformance: a guest with no network tool fails EC probes instead of passing them") {
  class NoTools : public PosixGuestSubject {
  public:
    using PosixGuestSubject::PosixGuestSubject;
    GuestAttempt connect_tcp(const std::string&, std::uint16_t, std::chrono::milliseconds) override { return {}; }
    GuestAttempt query_dns(const std::string&, std::uint16_t, std::string_view, std::chrono::milliseconds) override {
      return {};
    }
  };
  test::TempDir dir("maf-conformance-notools");
  BlockingRunner run;
  auto sb = std::make_shared<test::HostTreeSandbox>(dir.path());
  NoTools subject(run, sb, sb->capabilities(), Egress::Closed);
  const auto results = run_egress_closed(subject);
  CHECK(ids_with(results, Outcome::Pass).empty());
  CHECK_THAT(results[0].message, Catch::Contains("no tool"));
}

TEST_CASE("conformance: broken double — an allowlist claim that is not enforced fails EG-2 (and EG-3 untried)") {
  Http200 server;
  HostTreeFixture f(test::Flaw::None, Egress::Allowlist);
  const EgressTargets targets{server.url("/allowed"), server.url("/denied"), std::chrono::seconds(10)};
  const auto results = run_egress(*f.subject, targets);
  CHECK(ids_with(results, Outcome::Pass) == Ids{"EG-1"});
  // EG-3: the host has no maf-sandbox-rawframe on PATH, and an attack never made proves nothing.
  CHECK(ids_with(results, Outcome::Fail) == Ids{"EG-2", "EG-3"});
  // A severed network fails the positive control instead.
  const EgressTargets dead{"http://127.0.0.1:1/", "http://127.0.0.1:1/", std::chrono::seconds(10)};
  CHECK(ids_with(run_egress(*f.subject, dead), Outcome::Fail) == Ids{"EG-1", "EG-3"});
}

TEST_CASE("conformance: broken doubles — each exec flaw fails exactly its probes") {
  struct Case {
    test::Flaw flaw;
    Ids failed;
  };
  for (const auto& [flaw, failed] : {Case{test::Flaw::FoldStderr, {"EX-5", "EX-6"}},
                                     Case{test::Flaw::NormaliseExitCode, {"EX-2", "EX-6"}},
                                     Case{test::Flaw::TimeoutAsOSError, {"EX-7"}}}) {
    HostTreeFixture f(flaw);
    INFO("flaw " << static_cast<int>(flaw));
    CHECK(ids_with(run_exec(*f.subject), Outcome::Fail) == failed);
  }
}

TEST_CASE("conformance: broken doubles — each file-plane flaw fails exactly its probes") {
  {
    HostTreeFixture f(test::Flaw::AppendOnWrite);
    CHECK(ids_with(run_files_in(*f.subject), Outcome::Fail) == Ids{"FI-4"});
  }
  {
    HostTreeFixture f(test::Flaw::FollowLinks);
    CHECK(ids_with(run_files_in(*f.subject), Outcome::Fail) == Ids{"FI-7", "FI-8", "FI-11", "FI-12"});
  }
  {
    HostTreeFixture f(test::Flaw::FollowLinks);
    CHECK(ids_with(run_files_delete(*f.subject), Outcome::Fail) == Ids{"FD-4"});
  }
  {
    // FD-3's recursive removal of a link never reaches the hook as recursive: the core
    // passes recursive only for a directory, so only the interior link of FD-8 is followed.
    HostTreeFixture f(test::Flaw::FollowLinksWhenRemovingTrees);
    CHECK(ids_with(run_files_delete(*f.subject), Outcome::Fail) == Ids{"FD-8"});
  }
}

namespace {

/// A host-tree double that also declares `declared` (HostTools, Background).
struct HostToolsFixture {
  test::TempDir dir{"maf-conformance-host-tools"};
  BlockingRunner run;
  std::shared_ptr<test::HostTreeSandbox> sandbox;
  std::unique_ptr<PosixGuestSubject> subject;
  explicit HostToolsFixture(test::Flaw flaw, Capability declared = Capability::HostTools) {
    sandbox = std::make_shared<test::HostTreeSandbox>(dir.path(), flaw, CapabilitySet{declared});
    subject = std::make_unique<PosixGuestSubject>(run, sandbox, sandbox->capabilities(), std::nullopt);
    // HT-1…HT-3 give a program this long, and BG-1…BG-5 bound each wait by it: a double that
    // never answers, or whose program never ends, costs it per probe.
    subject->set_exec_timeout(std::chrono::seconds(5));
  }
};
using BackgroundFixture = HostToolsFixture;

}  // namespace

TEST_CASE("conformance: HOST_TOOLS — an honest host-tree double passes HT-1…HT-4; each broken one fails its probes") {
  {
    HostToolsFixture f(test::Flaw::None);
    const auto results = run_host_tools(*f.subject);
    CHECK(ids_with(results, Outcome::Pass) == Ids{"HT-1", "HT-2", "HT-3", "HT-4"});
  }
  {
    // A file plane that does not see what a running program writes: no call is ever served.
    HostToolsFixture f(test::Flaw::BlindToHostToolCalls);
    CHECK(ids_with(run_host_tools(*f.subject), Outcome::Fail) == Ids{"HT-1", "HT-2", "HT-3"});
  }
  {
    // A transport that turns the host's refusals into values: the door is open.
    HostToolsFixture f(test::Flaw::ForgesHostToolAnswers);
    CHECK(ids_with(run_host_tools(*f.subject), Outcome::Fail) == Ids{"HT-2", "HT-3"});
  }
  {
    // A deadline stop that misses the program's session: it keeps running past its deadline.
    HostToolsFixture f(test::Flaw::TimeoutSparesSession);
    CHECK(ids_with(run_host_tools(*f.subject), Outcome::Fail) == Ids{"HT-4"});
    // What the flaw left running is this test's to stop — its own sleepers only: a test
    // running beside this one (conformance_process's HT-4) sleeps with its own tag.
    const std::string own = "pkill -KILL -f 'sleep 271[.]5" + test::process_tag() + "' >/dev/null 2>&1";
    (void)!std::system(own.c_str());
  }
}

namespace {

/// The message of probe `id` in `results` (empty when it is not there).
std::string message_of(const std::vector<ProbeResult>& results, const std::string& id) {
  for (const auto& r : results)
    if (r.id == id) return r.message;
  return {};
}

}  // namespace

TEST_CASE("conformance: HOST_TOOLS HT-4 HT-T4 — a backend that never signals at the deadline fails on its own report "
          "(broken double TimeoutNeverSignals; the transport no longer infers 'sent to the group' from the pid file)") {
  HostToolsFixture f(test::Flaw::TimeoutNeverSignals);
  const auto results = run_host_tools(*f.subject);
  f.sandbox->kill_leftovers();  // the program it never signalled
  INFO(test::failure_messages(results));
  CHECK(ids_with(results, Outcome::Fail) == Ids{"HT-4"});
  // Failed on the report itself, not only on what was left running.
  CHECK_THAT(message_of(results, "HT-4"), Catch::Contains("signal unknown and reach nothing"));
}

TEST_CASE("conformance: HT-4 and BG-4 — 'is gone' is a skip naming the reason, never a pass, where the guest's "
          "processes are not visible on the runner's host (broken double HiddenFromHost)") {
  {
    HostToolsFixture f(test::Flaw::HiddenFromHost);
    const auto results = run_host_tools(*f.subject);
    INFO(test::failure_messages(results));
    CHECK(ids_with(results, Outcome::Pass) == Ids{"HT-1", "HT-2", "HT-3"});
    CHECK(ids_with(results, Outcome::Skip) == Ids{"HT-4"});
    CHECK_THAT(message_of(results, "HT-4"), Catch::Contains("was never seen running"));
  }
  {
    BackgroundFixture f(test::Flaw::HiddenFromHost, Capability::Background);
    const auto results = run_background(*f.subject);
    INFO(test::failure_messages(results));
    CHECK(ids_with(results, Outcome::Skip) == Ids{"BG-4"});
    CHECK(ids_with(results, Outcome::Fail).empty());
    CHECK_THAT(message_of(results, "BG-4"), Catch::Contains("was never seen running"));
  }
}

TEST_CASE("conformance: BACKGROUND — an honest host-tree double passes BG-1…BG-6 and BG-8; each broken one fails its probes") {
  {
    BackgroundFixture f(test::Flaw::None, Capability::Background);
    const auto results = run_background(*f.subject);
    for (const auto& r : results) UNSCOPED_INFO(r.id << ": " << r.message);
    CHECK(ids_with(results, Outcome::Pass) == Ids{"BG-1", "BG-2", "BG-3", "BG-4", "BG-5", "BG-6", "BG-8"});
  }
  {
    // One exec at a time: the next exec ends what the last one left, the program with it.
    BackgroundFixture f(test::Flaw::EndsLeftoversOnNextExec, Capability::Background);
    const auto results = run_background(*f.subject);
    // BG-4 fails, or is a skip when the flaw killed the program's children before the probe
    // looked for them (a race the flaw itself makes) — never a pass.
    Ids failed = ids_with(results, Outcome::Fail);
    failed.erase(std::remove(failed.begin(), failed.end(), "BG-4"), failed.end());
    CHECK(failed == Ids{"BG-1", "BG-2", "BG-3", "BG-5", "BG-8"});
    CHECK(ids_with(results, Outcome::Pass) == Ids{"BG-6"});
  }
  {
    // A guest whose setsid starts no group: the signal to the program's group reaches nothing,
    // neither a caller's (BG-4) nor the one its lifetime sends (BG-8).
    BackgroundFixture f(test::Flaw::NoNewSession, Capability::Background);
    CHECK(ids_with(run_background(*f.subject), Outcome::Fail) == Ids{"BG-4", "BG-8"});
    f.sandbox->kill_leftovers();  // what the flaw left running (its group could not be signalled)
  }
  {
    // An exec that reports every exit as 0: a lookup of a never-started id finds "something".
    BackgroundFixture f(test::Flaw::ExitCodeAlwaysZero, Capability::Background);
    CHECK(ids_with(run_background(*f.subject), Outcome::Fail) == Ids{"BG-6"});
  }
}
