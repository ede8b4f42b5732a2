// The Docker daemon restarted during an exec and during a write (issue 15 part 3). The shared
// engine is never restarted: each test starts a private dockerd (private-dockerd: its own
// socket, data root, exec root and containerd) and points the backend at it.
#include <cstdlib>
#include <filesystem>

#include "background_call.hpp"
#include "cli_child.hpp"
#include "engine_fixture.hpp"
#include "maf/sandbox/errors.hpp"
#include "trials.hpp"

using namespace maf::sandbox;
using namespace docker_test;
using maf::sandbox::support::shell_quote;

namespace {

/// A dockerd of this test's own, torn down with everything it ran when the test ends.
struct PrivateDaemon {
  // Short: a unix socket path must fit in 108 bytes.
  std::string dir = "/tmp/maf-rel-dockerd-" + random_hex(4);

  PrivateDaemon() {
    if (script("start") == 0) return;
    script("stop");  // a half-started daemon must not outlive the test
    FAIL("the private dockerd did not start; its log was printed above");
  }
  ~PrivateDaemon() { script("stop"); }
  int script(const std::string& verb) const {
    return std::system((shell_quote(MAF_TEST_PRIVATE_DOCKERD) + " " + verb + " " + shell_quote(dir)).c_str());
  }
  std::string host() const { return "unix://" + dir + "/docker.sock"; }
  std::string cli(std::vector<std::string> args) const {
    args.insert(args.begin(), {"-H", host()});
    return docker_cli(args);
  }
  std::string labelled_containers() const {
    return cli({"ps", "-a", "--filter", "label=maf-sandbox.scope", "--format", "{{.Names}}"});
  }
};

/// A backend bound to the private daemon: the Engine-API transport through docker_host, the
/// CLI transport through DOCKER_HOST as it binds (D-29 pins it from then on).
struct PrivateScope {
  PrivateDaemon& daemon;
  BlockingRunner run;
  std::shared_ptr<docker::DockerSandboxBackend> backend;
  std::string scope = "e2e-restart-" + random_hex();

  explicit PrivateScope(PrivateDaemon& d) : daemon(d) {
    auto config = test_config();
    config.docker_host = d.host();
    const char* ambient = std::getenv("DOCKER_HOST");
    const std::string saved = ambient ? ambient : "";
    ::setenv("DOCKER_HOST", d.host().c_str(), 1);
    backend = run([&] { return docker::DockerSandboxBackend::create(config); });
    if (ambient) ::setenv("DOCKER_HOST", saved.c_str(), 1);
    else ::unsetenv("DOCKER_HOST");
  }
  SandboxKey key() const { return SandboxKey{scope, "thread", "agent", ""}; }
  std::shared_ptr<Sandbox> acquire() {
    return run([&] { return backend->acquire(key(), spec_for(kImage, kAllCaps)); });
  }
  std::string container() const { return docker::DockerSandboxBackend::container_name(key(), "shell"); }

  /// A sandbox holding keep.txt, the file the restart must not lose.
  std::shared_ptr<Sandbox> acquire_with_keepsake() {
    auto sb = acquire();
    run([&] { return sb->write_file("keep.txt", "kept"); });
    return sb;
  }
  /// After the restart: the next acquire hands out a running, unfrozen container that still
  /// has keep.txt.
  std::shared_ptr<Sandbox> recover() {
    auto sb = acquire();
    CHECK(daemon.cli({"container", "inspect", "--format", "{{.State.Running}} {{.State.Paused}}", container()}) ==
          "true false");
    CHECK(run([&] { return sb->read_file("keep.txt", ".", 100); }) == "kept");
    return sb;
  }
  /// Disposal works and nothing labelled remains on the daemon.
  void dispose_clean() {
    CHECK_FALSE(run([&] { return backend->dispose(key(), std::nullopt, std::nullopt); }));
    CHECK(daemon.labelled_containers().empty());
  }
};

/// Waits until `format` of the container reads as something other than `idle`, or `call`
/// has returned: "seen", "returned", or "" when neither happened.
std::string container_shows(const PrivateDaemon& d, const std::string& container, const std::string& format,
                            const std::string& idle, const reliability::BackgroundCall& call) {
  return reliability::wait_for([&] {
    if (d.cli({"container", "inspect", "--format", format, container}) != idle) return std::string("seen");
    return call.finished() ? std::string("returned") : std::string();
  });
}

std::string where() { return "Docker (" + transport_name() + " transport), private dockerd"; }

}  // namespace

TEST_CASE("D-10 D-20 reliability: the daemon restarted during an exec — typed error, the files survive, the next "
          "acquire restarts the container, dispose is clean") {
  PrivateDaemon daemon;
  PrivateScope s(daemon);
  auto sb = s.acquire_with_keepsake();
  reliability::BackgroundCall exec(reliability::exec_call(sb, "sleep 60", std::chrono::minutes(2)));
  REQUIRE(container_shows(daemon, s.container(), "{{len .ExecIDs}}", "0", exec) == "seen");
  REQUIRE(daemon.script("restart") == 0);
  const std::string outcome = exec.outcome();
  // The daemon stopped the container under the command: not the program's own exit status.
  CHECK(exec.failed());
  CHECK(outcome.rfind("untyped", 0) != 0);
  auto again = s.recover();
  CHECK(s.run([&] { return again->exec("echo back"); }).stdout_text() == "back\n");
  s.dispose_clean();
  reliability::record("docker-restart-exec", "the Docker daemon restarted during an exec", where(),
                      "exec raised " + outcome + "; files kept; recovered on the next acquire; disposed clean");
}

TEST_CASE("D-11 D-21 reliability: the daemon restarted during a write (inside the freeze) — typed error or a "
          "complete write, never a half-recovered container; the next acquire recovers; dispose is clean") {
  PrivateDaemon daemon;
  PrivateScope s(daemon);
  auto sb = s.acquire_with_keepsake();
  // Large enough that the copy is still running when the daemon goes down.
  const std::string big(std::size_t{256} << 20, 'b');
  reliability::BackgroundCall write([sb, &big]() -> boost::asio::awaitable<std::string> {
    std::string path = "big.bin", content = big, dot = ".";
    co_await sb->write_file(std::move(path), std::move(content), std::move(dot));
    co_return "written";
  });
  // The freeze is on: the write is between its pause and its unpause. A machine fast enough
  // to finish first still gets the restart, and the trial says so.
  const std::string when = container_shows(daemon, s.container(), "{{.State.Paused}}", "false", write);
  REQUIRE_FALSE(when.empty());
  REQUIRE(daemon.script("restart") == 0);
  const std::string outcome = write.outcome();
  CHECK(outcome.rfind("untyped", 0) != 0);
  // Whatever state the restart left (exited, or paused by our own freeze), acquire recovers.
  auto again = s.recover();
  // Nothing half-written passes for the file: a retried write reads back whole.
  s.run([&] { return again->write_file("big.bin", "retried"); });
  CHECK(s.run([&] { return again->read_file("big.bin", ".", 100); }) == "retried");
  s.dispose_clean();
  reliability::record("docker-restart-write", "the Docker daemon restarted during a write (256 MiB, frozen)",
                      where(),
                      (write.failed() ? "write raised " + outcome
                       : when == "seen" ? "write completed during the restart"
                                        : "write completed before the restart") +
                          "; recovered on the next acquire; disposed clean");
}
