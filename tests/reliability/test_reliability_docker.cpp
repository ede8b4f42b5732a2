// Faults and load against the Docker backend on the shared engine (issue 15 parts 3–4): a
// container killed mid-exec, a fork bomb against the pids limit, 1 GiB to stdout, a guest
// racing the freeze, the host killed mid-acquire, and 16 concurrent conversations. Each trial
// is recorded for docs/reliability.md (trials.hpp); rule ids are D-n (docs/backends/docker.md "Rules (D-n)").
#include <signal.h>

#include <fstream>
#include <map>
#include <thread>

#include "background_call.hpp"
#include "cli_child.hpp"
#include "engine_fixture.hpp"
#include "guest_race.hpp"
#include "maf/sandbox/errors.hpp"
#include "load.hpp"
#include "trials.hpp"

using namespace maf::sandbox;
using namespace docker_test;

namespace {

std::string where() { return "Docker (" + transport_name() + " transport)"; }

std::string container_of(const Scope& s, const std::string& kind = "shell") {
  return docker::DockerSandboxBackend::container_name(s.key(), kind);
}

/// Waits until the container has an exec running (the engine lists its ID).
bool exec_running(const std::string& container) {
  return !reliability::wait_for([&] {
            return docker_cli({"container", "inspect", "--format", "{{len .ExecIDs}}", container}) == "0"
                       ? std::string()
                       : std::string("running");
          }).empty();
}

std::string containers_of_scope(const std::string& scope) {
  return docker_cli({"ps", "-a", "--filter", "label=maf-sandbox.scope=" + scope, "--format", "{{.Names}}"});
}

}  // namespace

TEST_CASE("D-20 reliability: a container killed mid-exec gives a typed error, invalidates the sandbox, keeps its "
          "files for the next acquire, and disposes clean") {
  Scope s;
  const auto spec = spec_for(kImage, kAllCaps);
  auto sb = s.acquire(spec);
  s.run([&] { return sb->write_file("keep.txt", "kept"); });
  reliability::BackgroundCall bg(reliability::exec_call(sb, "sleep 60", std::chrono::minutes(2)));
  REQUIRE(exec_running(container_of(s)));
  docker_cli({"kill", container_of(s)});
  const std::string outcome = bg.outcome();
  // A killed exec must not read as the program's own exit status 137.
  CHECK(outcome == "OSError");
  // The handle is invalid now: a further exec refuses with a typed error, it does not pretend.
  CHECK_THROWS_AS(s.sh(*sb, "echo after"), Error);
  // Nothing is lost: the next acquire starts the stopped container again (D-10), files kept.
  auto again = s.acquire(spec);
  CHECK(s.run([&] { return again->read_file("keep.txt", ".", 100); }) == "kept");
  CHECK_FALSE(s.run([&] { return s.backend->dispose(s.key(), std::nullopt, std::nullopt); }));
  CHECK(containers_of_scope(s.scope).empty());
  reliability::record("docker-killed-mid-exec", "a container killed (`docker kill`) mid-exec", where(),
                      "exec raised " + outcome + "; files kept for the next acquire; disposed clean");
}

TEST_CASE("D-2 reliability: a guest forking up to the pids limit is held inside its container; a fork beyond "
          "it fails; a further exec returns; the host and another sandbox stay healthy; dispose is clean",
          "[once]") {
  // [once]: the kernel's pids controller holds the bomb; the transport only delivers the
  // limit at create, which test_docker_lifecycle's D-1/D-3 check on both (docker.md, "Engine tests per transport").
  // Asserted are the properties, not the kernel's pid accounting: how many forks fit under
  // the limit, and whether a freed slot (the bomb's own shell exiting frees one) lets a
  // later exec start, differ from machine to machine.
  constexpr int kPidsLimit = 64;
  auto config = test_config();
  config.pids_limit = kPidsLimit;
  config.cpus = 0.5;  // the bomb spins on failed forks: keep it off the shared cores
  Scope s(config);
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  // Background sleepers until fork fails, which ends the shell; the count goes to a file
  // because nothing more may be able to start in the container to report it.
  auto bomb = s.sh(*sb, "n=0; while sleep 600 2>/dev/null & do n=$((n+1)); echo $n > forked; done");
  CHECK(bomb.exit_code != 0);  // the shell's own "can't fork", returned, not hung
  const int forked = std::atoi(s.run([&] { return sb->read_file("forked", ".", 64); }).c_str());
  CHECK(forked > 0);
  CHECK(forked < kPidsLimit);  // the limit held inside the container
  // A further exec returns — the engine's typed refusal, a non-zero exit, or output — and
  // never hangs. If it starts at all, it tries to fork more sleepers than the whole limit
  // allows and must fail doing so: "done" with exit 0 would mean the limit did not hold.
  std::string further;
  try {
    auto again = s.sh(*sb, "i=0; while [ $i -lt " + std::to_string(kPidsLimit + 8) +
                               " ]; do sleep 600 2>/dev/null & i=$((i+1)); done; echo done");
    further = again.exit_code == 0 && again.stdout_text() == "done\n" ? "forked past the limit"
                                                                       : "exit " + std::to_string(again.exit_code);
  } catch (const Error& e) {
    further = reliability::error_type(e);
  }
  CHECK(further != "forked past the limit");
  // The host is healthy: the engine answers and another sandbox runs.
  Scope other;
  auto sb2 = other.acquire(spec_for(kImage, kAllCaps));
  CHECK(other.sh(*sb2, "echo healthy").stdout_text() == "healthy\n");
  CHECK_FALSE(s.run([&] { return s.backend->dispose(s.key(), std::nullopt, std::nullopt); }));
  CHECK(containers_of_scope(s.scope).empty());
  reliability::record("docker-pids-limit", "a guest forking up to the pids limit (64)", where(),
                      "held at " + std::to_string(forked) + " forks (the bomb's shell: exit " + std::to_string(bomb.exit_code) +
                          "); a further exec forking past the limit: " + further + "; host healthy; disposed clean");
}

TEST_CASE("reliability: a guest writing 1 GiB to stdout is stopped at max_exec_output_bytes, nothing buffered "
          "beyond the cap, container removed") {
  auto config = test_config();
  config.max_exec_output_bytes = std::size_t{1} << 20;
  Scope s(config);
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  const bool peak_reset = reliability::reset_peak_rss();
  const long before = reliability::status_kib("VmRSS");
  std::string outcome;
  try {
    s.sh(*sb, "head -c 1073741824 /dev/zero");
    outcome = "returned";
  } catch (const SandboxTransferCapExceeded& e) {  // EXE-1: the one over-cap type on every backend
    outcome = std::string(e.what()).find("max_exec_output_bytes") != std::string::npos ? "refused at the cap" : e.what();
  }
  CHECK(outcome == "refused at the cap");
  // Peak memory grew by far less than what the guest wrote (1 GiB): the cap bounds the buffer.
  const long grew_kib = reliability::status_kib("VmHWM") - before;
  if (peak_reset) CHECK(grew_kib < 64 * 1024);
  // The writer does not go on inside the container once the client is stopped.
  CHECK(docker_cli({"ps", "-a", "--filter", "name=^" + container_of(s) + "$", "--format", "{{.Names}}"}).empty());
  CHECK_FALSE(s.run([&] { return s.backend->dispose(s.key(), std::nullopt, std::nullopt); }));
  reliability::record("docker-1gib-stdout", "a guest writing 1 GiB to stdout (cap 1 MiB)", where(),
                      outcome + "; peak memory +" + std::to_string(grew_kib / 1024) + " MiB; container removed");
}

TEST_CASE("D-16 D-21 reliability: a guest swapping a checked parent for a link in a loop never gets the host to "
          "return bytes from outside the work dir (the freeze holds)") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  REQUIRE(s.sh(*sb, reliability::kSwapSetup).exit_code == 0);
  std::map<std::string, int> outcomes;
  CHECK(reliability::race_detached(*sb, 16, outcomes) > 0);
  CHECK(outcomes.count(reliability::kLeaked) == 0);
  CHECK(s.sh(*sb, "ls /tmp/decoy").stdout_text() == "file.txt\n");
  for (const auto& [outcome, n] : outcomes)
    for (int i = 0; i < n; ++i)
      reliability::record("docker-swap-loop", "a guest swapping a checked parent for a link in a loop", where(),
                          outcome);
}

namespace {

/// Keeps what each collection delivered.
class KeepingSink final : public OutputSink {
public:
  std::vector<std::string> bytes;
  boost::asio::awaitable<LandedArtifact> deliver(Artifact artifact) override {
    bytes.push_back(artifact.content);
    co_return LandedArtifact{artifact.name, artifact.name, std::nullopt};
  }
};

}  // namespace

TEST_CASE("D-16 D-21 reliability: collect_outputs, its stats and reads under one freeze (issue 24), racing the "
          "same swapping guest never lands bytes from outside the work dir") {
  Scope s;
  auto sb = s.acquire(spec_for(kImage, kAllCaps));
  REQUIRE(s.sh(*sb, reliability::kSwapSetup).exit_code == 0);
  s.run([&] { return sb->exec("(" + reliability::kSwapLoop + ") >swaps 2>/dev/null &"); });
  SandboxSpec::Fields f = spec_for(kImage, kAllCaps).fields();
  f.declared_outputs = {DeclaredOutput{.path = "sub/file.txt", .media_type = "text/plain", .required = false}};
  const SandboxSpec collecting(std::move(f));
  for (int i = 0; i < 100000 && !s.run([&] { return sb->stat_file("looping"); }); ++i) {
  }
  auto sink = std::make_shared<KeepingSink>();
  std::map<std::string, int> outcomes;
  for (int i = 0; i < 16; ++i) {
    sink->bytes.clear();
    std::string outcome;
    try {
      s.run([&] { return collect_outputs(*sb, collecting, sink); });
      outcome = sink->bytes.empty()                ? "collect: nothing (absent mid-swap)"
                : sink->bytes[0] == "INSIDE\n"     ? "collect: the work dir's bytes"
                : sink->bytes[0] == "OUTSIDE\n"    ? reliability::kLeaked
                                                   : "collect: other bytes";
    } catch (const Error& e) {
      outcome = "collect refused: " + reliability::error_type(e);
    }
    ++outcomes[outcome];
  }
  s.run([&] { return sb->write_file("stop", "x"); });
  int swaps = -1;
  for (int i = 0; i < 1000 && swaps < 0; ++i)
    if (const std::string count = s.run([&] { return sb->read_file("swaps", ".", 64); }); !count.empty())
      swaps = std::stoi(count);
  CHECK(swaps > 0);
  CHECK(outcomes.count(reliability::kLeaked) == 0);
  CHECK(s.sh(*sb, "ls /tmp/decoy").stdout_text() == "file.txt\n");
  for (const auto& [outcome, n] : outcomes)
    for (int i = 0; i < n; ++i)
      reliability::record("docker-swap-loop-collect", "collect_outputs against a guest swapping a checked parent",
                          where(), outcome);
}

TEST_CASE("D-26 D-28 reliability: the host killed (SIGKILL) mid-acquire; dispose-scope and reap from a fresh "
          "process remove what it left",
          "[once]") {
  // [once]: what a killed host leaves is a labelled container, whichever transport made it;
  // removing it by label from a second instance is DX-2 / D-28, run on both transports by
  // test_docker_disposal (docker.md, "Engine tests per transport").
  const std::string dir = "/tmp/maf-reliability-docker-" + random_hex();
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/config.json";
  std::ofstream(config) << nlohmann::json{{"transport", transport_name()}}.dump();
  const std::vector<std::string> common{"--backend", "docker", "--config", config};
  for (const std::string cleanup : {"dispose-scope", "reap"}) {
    const std::string scope = "e2e-kill-" + random_hex();
    std::vector<std::string> run_args{"run"};
    run_args.insert(run_args.end(), common.begin(), common.end());
    run_args.insert(run_args.end(), {"--image", kImage, "--min-isolation", "container", "--scope", scope, "--thread",
                                     "t", "--", "sleep", "60"});
    const pid_t pid = reliability::spawn_cli(run_args);
    // Killed as soon as the engine knows the container: `run -d` has returned and the
    // backend is still preparing it (work dir, probes) — mid-acquire.
    const std::string seen = reliability::wait_for(
        [&] { return containers_of_scope(scope).empty() ? std::string() : std::string("container created"); });
    ::kill(pid, SIGKILL);
    REQUIRE(reliability::reap_child(pid) == -SIGKILL);
    REQUIRE_FALSE(seen.empty());
    std::vector<std::string> clean{cleanup};
    clean.insert(clean.end(), common.begin(), common.end());
    if (cleanup == "reap") {
      // Creation times have one-second resolution: let the leftover age past the cutoff
      // first (an ordering precondition, not a timing assertion).
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      clean.insert(clean.end(), {"--older-than", "1s", "--scope", scope});
    } else {
      clean.insert(clean.end(), {"--scope", scope, "--thread", "t"});
    }
    const int code = reliability::reap_child(reliability::spawn_cli(clean));
    CHECK(code == 0);
    CHECK(containers_of_scope(scope).empty());
    reliability::record("docker-host-killed", "the host SIGKILLed mid-acquire, then `" + cleanup + "` from a fresh process",
                        where() + ", `maf-sandbox` CLI",
                        code == 0 && containers_of_scope(scope).empty() ? "cleaned up" : "left something");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("C-54 cli: `run` whose acquire fails after the container was created (no /bin/sh: the sh probe "
          "refuses) leaves no container; --image overrides a spec file's image for one run",
          "[once]") {
  // [once]: the command's exit status and option handling; the container a refused sh probe
  // leaves, and its removal by the conversation's purge, are D-24, run on both transports by
  // test_docker_lifecycle (docker.md, "Engine tests per transport").
  const std::string dir = "/tmp/maf-reliability-docker-" + random_hex();
  std::filesystem::create_directories(dir);
  const std::string config = dir + "/config.json";
  std::ofstream(config) << nlohmann::json{{"transport", transport_name()}}.dump();
  const std::string spec = dir + "/spec.json";
  std::ofstream(spec) << nlohmann::json{{"kind", "cli"}, {"image", kNoShImage}, {"requires", {"exec"}}}.dump();
  auto run = [&](const std::string& scope, std::vector<std::string> image_args) {
    std::vector<std::string> args{"run", "--backend", "docker", "--config", config, "--min-isolation", "container",
                                  "--scope", scope, "--thread", "t"};
    args.insert(args.end(), image_args.begin(), image_args.end());
    args.insert(args.end(), {"--", "true"});
    return reliability::reap_child(reliability::spawn_cli(args));
  };
  const std::string refused = "cli-nosh-" + random_hex();
  CHECK(run(refused, {"--image", kNoShImage}) == 3);  // SandboxCapabilityNotSupported (C-54)
  CHECK(containers_of_scope(refused).empty());
  CHECK(run(refused, {"--spec", spec}) == 3);
  CHECK(containers_of_scope(refused).empty());
  // The spec names the image without sh; --image replaces it for this run, which then works.
  const std::string overridden = "cli-override-" + random_hex();
  CHECK(run(overridden, {"--spec", spec, "--image", kImage}) == 0);
  CHECK(containers_of_scope(overridden).empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("C-52 reliability load: 16 concurrent conversations (acquire/exec/write/collect/dispose) leak no "
          "container, descriptor, thread or child process (Docker)") {
  Scope s;
  constexpr int kConversations = 16;
  SandboxSpec::Fields f = spec_for(kImage, kAllCaps).fields();
  f.declared_outputs.push_back(DeclaredOutput{.path = "out.txt"});
  const auto c = reliability::run_load(
      *s.backend, [&](const std::string& tag) { return s.key(tag); }, SandboxSpec(std::move(f)), kConversations,
      [&] { return static_cast<int>(s.backend->transport().idle_connections()); });
  CHECK(c.finished == kConversations);
  CHECK(containers_of_scope(s.scope).empty());
  // A leak is more after than before, never fewer: something an earlier case left winding
  // down (a thread, a descriptor, a child being reaped) may end during the load.
  CHECK(c.fds_after <= c.fds_before);
  CHECK(c.threads_after <= c.threads_before);
  CHECK(c.children_after <= c.children_before);
  const bool clean = c.finished == kConversations && containers_of_scope(s.scope).empty() &&
                     c.fds_after <= c.fds_before && c.threads_after <= c.threads_before &&
                     c.children_after <= c.children_before;
  reliability::record("docker-load-16", "16 concurrent conversations (acquire/exec/write/collect/dispose)", where(),
                      clean ? "all finished; no container, fd, thread or child left" : "leaked");
}
