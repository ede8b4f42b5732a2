// The ACAS backend against its emulator (label `acas`): the first-milestone behaviours of
// A-n and the fault cases of E-40…E-42, each test with its own emulator.
#include "acas_fixture.hpp"

#include <cstdlib>

#include "maf/sandbox/errors.hpp"

using namespace acas_test;
using maf::sandbox::Capability;
using maf::sandbox::Egress;
using maf::sandbox::SandboxSpec;

TEST_CASE("A-5/A-24: acquire serves exact exec bytes; a warm acquire reuses the sandbox without a create") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  auto r = f.run([&] { return sb->exec(std::string("printf 'ok\\377\\376'; printf err >&2; exit 3")); });
  CHECK(r.stdout_bytes == std::string("ok\xff\xfe"));
  CHECK(r.stderr_bytes == "err");
  CHECK(r.exit_code == 3);
  auto again = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  CHECK(again->instance_id() == sb->instance_id());
  CHECK(f.requests("create").size() == 1);
  // reserved labels on the create body.
  auto body = f.requests("create")[0]["body"];
  CHECK(body["labels"]["scope"] == f.scope);
  CHECK(body["labels"]["agent"] == "agent");
  CHECK(body["egressPolicy"]["defaultAction"] == "Deny");
  CHECK(body["egressPolicy"]["hostRules"].empty());
  // the lifecycle POST follows the create.
  CHECK(f.requests("lifecycle").size() == 1);
}

TEST_CASE("A-13: acquire makes the storage base with one file-plane mkdir per missing level") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  auto mkdirs = f.requests("files.mkdir");
  REQUIRE(mkdirs.size() == 2);
  CHECK(mkdirs[0]["body"]["path"] == "/maf-sandbox");
  CHECK(mkdirs[1]["body"]["path"] == "/maf-sandbox/work");
  // Repair after an out-of-band removal: only the missing level is made again.
  f.guest(sb->instance_id(), "rm -rf /maf-sandbox/work");
  auto since = f.last_seq();
  f.run([&] { return backend->acquire(f.key(), files_spec()); });
  auto repaired = f.requests("files.mkdir", since);
  REQUIRE(repaired.size() == 1);
  CHECK(repaired[0]["body"]["path"] == "/maf-sandbox/work");
}

TEST_CASE("A-13/ACQ-4: a base the guest replaced with a link fails the next acquire; nothing is made through it") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  const std::string id = sb->instance_id();
  // Hostile code: the base becomes a link to a directory of its choosing.
  f.guest(id, "rm -rf /maf-sandbox/work && mkdir -p /elsewhere && ln -s /elsewhere /maf-sandbox/work");
  const auto since = f.last_seq();
  const auto message = refusal<maf::sandbox::ValueError>([&] { f.run([&] { return backend->acquire(f.key(), files_spec()); }); });
  CHECK_THAT(message, Catch::Contains("'/maf-sandbox/work'") && Catch::Contains("symbolic link") &&
                          Catch::Contains("backend 'acas'"));
  CHECK(f.requests("files.mkdir", since).empty());
  CHECK(f.guest(id, "ls -A /elsewhere")["stdout"] == "");
}

TEST_CASE("A-13/ACQ-2: a work_dir is the absolute base itself; a relative one is refused before any request") {
  Fixture f;
  auto backend = f.backend();
  auto spec_at = [](std::string work_dir) {
    return SandboxSpec({.kind = "acas-test",
                        .image = "busybox",
                        .work_dir = std::move(work_dir),
                        .requires_capabilities = {Capability::Exec, Capability::FilesIn}});
  };
  auto since = f.last_seq();
  // ACAS used to join a relative work_dir under its default base; the core refuses it now,
  // naming it, for every backend.
  const auto message =
      refusal<maf::sandbox::ValueError>([&] { f.run([&] { return backend->acquire(f.key(), spec_at("rel/dir")); }); });
  CHECK_THAT(message, Catch::Contains("work_dir 'rel/dir'") && Catch::Contains("backend 'acas'"));
  CHECK(f.last_seq() == since);
  // An absolute one is the base: made level by level, and exec runs there.
  auto sb = f.run([&] { return backend->acquire(f.key(), spec_at("/srv/acas/rel/dir")); });
  auto mkdirs = f.requests("files.mkdir", since);
  REQUIRE(mkdirs.size() == 4);
  CHECK(mkdirs[0]["body"]["path"] == "/srv");
  CHECK(mkdirs[3]["body"]["path"] == "/srv/acas/rel/dir");
  CHECK(f.run([&] { return sb->exec(std::string("pwd")); }).stdout_bytes == "/srv/acas/rel/dir\n");
}

TEST_CASE("A-9/ACQ-1: method-scoped rules and unrestricted egress are refused before any request or credential") {
  Fixture f;
  auto backend = f.backend();
  const auto since = f.last_seq();
  const SandboxSpec methods({.kind = "acas-test",
                             .image = "busybox",
                             .egress_allow = {maf::sandbox::EgressRule("api.example.com", std::vector<std::string>{"GET"})},
                             .requires_capabilities = {Capability::Exec},
                             .egress = Egress::Allowlist});
  CHECK_THAT(refusal<maf::sandbox::SandboxCapabilityNotSupported>(
                 [&] { f.run([&] { return backend->acquire(f.key(), methods); }); }),
             Catch::Contains("backend 'acas' does not support egress_methods") &&
                 Catch::Contains("workload kind 'acas-test'"));
  const SandboxSpec open({.kind = "acas-test",
                          .image = "busybox",
                          .requires_capabilities = {Capability::Exec},
                          .egress = Egress::Unrestricted});
  CHECK_THAT(
      refusal<maf::sandbox::SandboxEgressNotEnforced>([&] { f.run([&] { return backend->acquire(f.key(), open); }); }),
      Catch::Contains("backend 'acas' cannot enforce egress 'unrestricted'") &&
          Catch::Contains("workload kind 'acas-test'"));
  CHECK(f.last_seq() == since);
}

TEST_CASE("A-31: write_file runs over exec in 48 KiB chunks (2 + k commands) and lands exact bytes") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  for (auto [size, commands] : std::vector<std::pair<std::size_t, std::size_t>>{
           {0, 2}, {1, 3}, {49152, 3}, {49153, 4}, {200000, 7}}) {
    std::string content(size, '\0');
    for (std::size_t i = 0; i < size; ++i) content[i] = static_cast<char>((i * 131 + 7) & 0xff);
    auto since = f.last_seq();
    f.run([&] { return sb->write_file("blob.bin", content); });
    INFO("size " << size << ": " << f.requests("exec", since).dump());
    CHECK(f.requests("exec", since).size() == commands);
    CHECK(f.requests("files.put", since).empty());  // never the file plane
    CHECK(f.run([&] { return sb->read_file("blob.bin", ".", 1 << 20); }) == content);
  }
}

TEST_CASE("A-40/A-42/A-44: stat, list and the ancestor walk refuse a linked parent") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  CHECK_FALSE(f.run([&] { return sb->stat_file("missing.txt"); }).has_value());
  f.run([&] { return sb->write_file("d/real.txt", std::string("hello world\n")); });
  auto st = f.run([&] { return sb->stat_file("d/real.txt"); });
  REQUIRE(st.has_value());
  CHECK(st->kind == maf::sandbox::EntryKind::File);
  CHECK(st->size_bytes == 12);
  auto listing = f.run([&] { return sb->list_dir("d"); });
  REQUIRE(listing.size() == 1);
  CHECK(listing[0].path == "d/real.txt");
  f.guest(sb->instance_id(), "ln -s /etc /maf-sandbox/work/out");
  auto since = f.last_seq();
  CHECK_THROWS_AS(f.run([&] { return sb->stat_file("out/hostname"); }), maf::sandbox::ValueError);
  CHECK(f.requests("files.get", since).empty());
  auto link = f.run([&] { return sb->stat_file("out"); });
  REQUIRE(link.has_value());
  CHECK(link->kind == maf::sandbox::EntryKind::Symlink);
}

TEST_CASE("A-43/E-41: reading a FIFO or a hung download is bounded by read_timeout_seconds and keeps the sandbox; a reset exec invalidates it") {
  Fixture f;
  auto config = f.config();
  // Long enough for the acquire's and write_file's file-plane calls on a loaded CI box; the
  // FIFO read and the hung download then each take this long to be refused.
  config.read_timeout_seconds = 8;
  auto backend = f.backend(config);
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  f.guest(sb->instance_id(), "mkfifo /maf-sandbox/work/pipe");
  CHECK_THROWS_AS(f.run([&] { return sb->read_file("pipe", ".", 1024); }), maf::sandbox::TimeoutError);
  CHECK(f.requests("delete").empty());
  CHECK(f.run([&] { return sb->exec(std::string("echo still")); }).stdout_bytes == "still\n");
  // E-41 `hang`: a download the service never answers is bounded the same way.
  f.run([&] { return sb->write_file("plain.txt", std::string("plain")); });
  auto since = f.last_seq();
  f.fault({{"route", "files.get"}, {"action", "hang"}});
  CHECK_THROWS_AS(f.run([&] { return sb->read_file("plain.txt", ".", 1024); }), maf::sandbox::TimeoutError);
  auto hung = f.requests("files.get", since);
  REQUIRE(hung.size() == 1);
  CHECK(hung[0]["outcome"] == "hung");
  CHECK(f.live() == 1);
  // E-41 `reset` (RST) during exec: a lost answer, so the sandbox is invalidated.
  since = f.last_seq();
  f.fault({{"route", "exec"}, {"action", "reset"}});
  CHECK_THROWS_AS(f.run([&] { return sb->exec(std::string("echo hi")); }), maf::sandbox::acas::AcasTransportError);
  CHECK(f.requests("exec", since)[0]["outcome"] == "reset-by-fault");
  CHECK(f.requests("delete", since).size() == 1);
  CHECK(f.live() == 0);
}

TEST_CASE("A-2: a bare image name the service lacks is refused before any create, catalogue in the message") {
  Fixture f;
  auto backend = f.backend();
  const auto message = refusal<maf::sandbox::ValueError>(
      [&] { f.run([&] { return backend->acquire(f.key(), files_spec("python3.13")); }); });
  CHECK_THAT(message, Catch::Contains("It provides: busybox, busybox-nonroot, busybox-nosh."));
  INFO(f.emulator->control("GET", "/requests").dump());
  CHECK(f.requests("images.public").size() == 1);
  CHECK(f.requests("create").empty());
}

TEST_CASE("A-9: a warm sandbox with another egress policy raises AcasEgressPolicyConflict before any request") {
  Fixture f;
  auto backend = f.backend();
  auto spec_for = [](std::string host) {
    return SandboxSpec({.kind = "acas-test", .image = "busybox", .egress_allow = {std::move(host)},
                        .requires_capabilities = {Capability::Exec}, .egress = Egress::Allowlist});
  };
  auto sb = f.run([&] { return backend->acquire(f.key(), spec_for("a.com")); });
  CHECK(f.requests("create")[0]["body"]["egressPolicy"]["hostRules"][0]["pattern"] == "a.com");
  auto since = f.last_seq();
  CHECK_THROWS_AS(f.run([&] { return backend->acquire(f.key(), spec_for("B.com")); }),
                  maf::sandbox::acas::AcasEgressPolicyConflict);
  CHECK(f.last_seq() == since);
  // Same policy, other spelling: reused.
  CHECK(f.run([&] { return backend->acquire(f.key(), spec_for("A.com")); })->instance_id() == sb->instance_id());
  CHECK(f.run([&] { return sb->exec(std::string("true")); }).exit_code == 0);
}

TEST_CASE("T-4/A-27: an exec answered 429 with Retry-After is retried after the wait and succeeds") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  auto since = f.last_seq();
  f.fault({{"route", "exec"}, {"code", 429}, {"retryAfter", 1}, {"times", 1}});
  auto r = f.run([&] { return sb->exec(std::string("echo hi")); });
  CHECK(r.stdout_bytes == "hi\n");
  auto execs = f.requests("exec", since);
  REQUIRE(execs.size() >= 2);
  CHECK(execs[0]["status"] == 429);
  CHECK(execs[1]["status"] == 200);
  CHECK(execs[1]["body"] == execs[0]["body"]);  // the identical request, re-sent
  CHECK(f.requests("delete", since).empty());
}

TEST_CASE("A-26: a 429 whose Retry-After outlasts the deadline is a TimeoutError that keeps the sandbox") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  auto since = f.last_seq();
  f.fault({{"route", "exec"}, {"code", 429}, {"retryAfter", 5}, {"times", 1}});
  CHECK_THROWS_AS(f.run([&] { return sb->exec(std::string("echo hi"), ".", std::chrono::seconds(2)); }),
                  maf::sandbox::TimeoutError);
  CHECK(f.requests("delete", since).empty());
  CHECK(f.live() == 1);
}

TEST_CASE("T-6: a 500 during create leaves no sandbox behind (reconciled by label, never replayed)") {
  Fixture f;
  auto backend = f.backend();
  // afterEffect: the service made the sandbox, then answered 500.
  f.fault({{"route", "create"}, {"code", 500}, {"afterEffect", true}});
  CHECK_THROWS_AS(f.run([&] { return backend->acquire(f.key(), files_spec()); }),
                  maf::sandbox::acas::AcasServiceError);
  CHECK(f.requests("create").size() == 1);
  CHECK(f.requests("list").size() == 1);
  CHECK(f.live() == 0);
  // A plain 500 (nothing made) also leaves nothing, and the next acquire works.
  f.fault({{"route", "create"}, {"code", 500}});
  CHECK_THROWS(f.run([&] { return backend->acquire(f.key(), files_spec()); }));
  CHECK(f.live() == 0);
  f.run([&] { return backend->acquire(f.key(), files_spec()); });
  CHECK(f.live() == 1);
}

TEST_CASE("A-26: a dropped connection during exec invalidates and deletes the sandbox") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  const std::string first = sb->instance_id();
  f.fault({{"route", "exec"}, {"action", "drop"}, {"afterEffect", true}});
  CHECK_THROWS_AS(f.run([&] { return sb->exec(std::string("echo hi")); }), maf::sandbox::acas::AcasTransportError);
  CHECK(f.requests("delete").size() == 1);
  CHECK(f.live() == 0);
  auto next = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  CHECK(next->instance_id() != first);
}

TEST_CASE("A-51: dispose_scope from a fresh backend instance finds and deletes what another created") {
  Fixture f;
  auto creator = f.backend();
  f.run([&] { return creator->acquire(f.key("one"), files_spec()); });
  f.run([&] { return creator->acquire(f.key("two"), files_spec()); });
  REQUIRE(f.live() == 2);
  auto other = f.backend();
  auto purge = f.run([&] { return other->dispose_scope(f.scope, f.thread); });
  CHECK(purge.disposed == 2);
  CHECK_FALSE(purge.undisposed.has_value());
  CHECK(f.live() == 0);
  auto lists = f.requests("list");
  REQUIRE_FALSE(lists.empty());
  CHECK(lists.back()["query"].dump().find("scope=" + f.scope + ",thread=" + f.thread) != std::string::npos);
}

TEST_CASE("A-52/A-16: a failed delete is retained, blocks acquire, and the next dispose retries it") {
  Fixture f;
  auto backend = f.backend();
  f.run([&] { return backend->acquire(f.key(), files_spec()); });
  f.fault({{"route", "delete"}, {"code", 500}, {"times", 6}});
  auto failed = f.run([&] { return backend->dispose(f.key(), std::nullopt, std::nullopt); });
  REQUIRE(failed.has_value());
  CHECK(failed->code == maf::sandbox::kDisposalRefused);
  CHECK_THROWS_AS(f.run([&] { return backend->acquire(f.key(), files_spec()); }), maf::sandbox::SandboxOutputError);
  auto since = f.last_seq();
  CHECK_FALSE(f.run([&] { return backend->dispose(f.key(), std::nullopt, std::nullopt); }).has_value());
  CHECK(f.requests("delete", since).size() == 1);
  CHECK(f.live() == 0);
}

TEST_CASE("A-15: an image without sh is refused by the sh probe, naming it") {
  Fixture f;
  auto backend = f.backend();
  // EXEC alone: the removal probe before it is inconclusive here (no sh to run rm), which
  // refuses only FILES_DELETE.
  const auto message = refusal<maf::sandbox::SandboxCapabilityNotSupported>(
      [&] { f.run([&] { return backend->acquire(f.key(), exec_spec("busybox-nosh")); }); });
  CHECK_THAT(message, Catch::Contains("'sh' probe"));
}

TEST_CASE("A-62: close() refuses new work and deletes nothing") {
  Fixture f;
  auto backend = f.backend();
  f.run([&] { return backend->acquire(f.key(), files_spec()); });
  f.run([&] { return backend->close(); });
  CHECK_THROWS_AS(f.run([&] { return backend->acquire(f.key(), files_spec()); }),
                  maf::sandbox::acas::AcasCredentialError);
  CHECK(f.requests("delete").empty());
  CHECK(f.live() == 1);
}

TEST_CASE("A-15: a HOST_TOOLS spec runs the host-tools probe instead of sh; a failing one is refused naming it") {
  Fixture f;
  auto backend = f.backend();
  auto spec = SandboxSpec({.kind = "acas-test", .image = "busybox",
                           .requires_capabilities = {Capability::Exec, Capability::HostTools}});
  auto sb = f.run([&] { return backend->acquire(f.key(), spec); });
  CHECK(sb->capabilities().contains(Capability::HostTools));
  auto with = [&](const std::string& needle) {
    int n = 0;
    for (const auto& r : f.requests("exec")) n += r["body"]["command"].get<std::string>().find(needle) != std::string::npos;
    return n;
  };
  CHECK(with("nohup sh -c") == 1);
  int sh_probes = 0;  // a host-tools pass proves what the sh probe would
  for (const auto& r : f.requests("exec")) sh_probes += r["body"]["command"] == "sh -c 'exit 0'";
  CHECK(sh_probes == 0);
  // The guest answers the probe with a non-zero status (as an image without nohup would).
  f.fault({{"route", "exec"}, {"command", "nohup sh -c"}, {"code", 200},
           {"body", {{"exitCode", 4}, {"stdout", ""}, {"stderr", ""}}}});
  const auto message = refusal<maf::sandbox::SandboxCapabilityNotSupported>(
      [&] { f.run([&] { return backend->acquire(f.key("other"), spec); }); });
  CHECK_THAT(message, Catch::Contains("'host-tools' probe"));
  CHECK_THAT(message, Catch::Contains("exit status 4"));
}

TEST_CASE("A-14: a root guest passes the removal probe once per held sandbox and is served FILES_DELETE") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  CHECK(sb->capabilities().contains(Capability::FilesDelete));
  auto puts = f.requests("files.put");
  REQUIRE(puts.size() == 1);
  const std::string target = puts[0]["query"].dump();
  CHECK(target.find("/.maf-authority-") != std::string::npos);
  CHECK(target.find("createDirs") != std::string::npos);
  auto cleanups = f.requests("files.delete");
  REQUIRE(cleanups.size() == 1);
  CHECK(cleanups[0]["query"].dump().find("recursive") != std::string::npos);
  CHECK(f.guest(sb->instance_id(), "ls -d /.maf-authority-* 2>/dev/null")["stdout"] == "");
  // Warm reuse keeps the verdict: no second probe.
  f.run([&] { return backend->acquire(f.key(), files_spec()); });
  CHECK(f.requests("files.put").size() == 1);
  f.run([&] { return sb->write_file("gone.txt", std::string("x")); });
  f.run([&] { return sb->remove("gone.txt"); });
  CHECK_FALSE(f.run([&] { return sb->stat_file("gone.txt"); }).has_value());
}

TEST_CASE("A-14: a non-root guest fails the removal probe; FILES_OUT refused, the sandbox deleted, the image hint refuses the next cold acquire before any create") {
  Fixture f;
  auto backend = f.backend();
  const auto message = refusal<maf::sandbox::SandboxCapabilityNotSupported>(
      [&] { f.run([&] { return backend->acquire(f.key(), files_spec("busybox-nonroot")); }); });
  CHECK_THAT(message, Catch::Contains("removal-compatibility probe was 'fail'"));
  CHECK(f.requests("create").size() == 1);
  CHECK(f.requests("delete").size() == 1);  // the sandbox made for the refused acquire
  CHECK(f.live() == 0);
  // The hint: another cold acquire of the image is refused with zero requests.
  auto since = f.last_seq();
  CHECK_THROWS_AS(f.run([&] { return backend->acquire(f.key("other"), files_spec("busybox-nonroot")); }),
                  maf::sandbox::SandboxCapabilityNotSupported);
  CHECK(f.last_seq() == since);
  // EXEC alone is served on the image, without the refused capabilities.
  auto sb = f.run([&] { return backend->acquire(f.key("exec-only"), exec_spec("busybox-nonroot")); });
  CHECK(f.requests("create", since).size() == 1);
  CHECK(sb->capabilities().contains(Capability::Exec));
  CHECK_FALSE(sb->capabilities().contains(Capability::FilesOut));
  CHECK_FALSE(sb->capabilities().contains(Capability::FilesDelete));
  CHECK(f.run([&] { return sb->exec(std::string("id -u")); }).stdout_bytes != "0\n");
}

TEST_CASE("A-32: write_file out of time between commands is SandboxShellTransferFailed (staged file taken back, sandbox kept); "
          "a command failing in flight is SandboxShellTransferUnfinished (sandbox invalidated)") {
  Fixture f;
  auto config = f.config();
  config.read_timeout_seconds = 20;  // bounds the whole transfer; the 429 below asks for 29 s
  auto backend = f.backend(config);
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  const std::string id = sb->instance_id();
  // The chunk command is throttled with a wait past read_timeout_seconds: never re-sent.
  auto since = f.last_seq();
  f.fault({{"route", "exec"}, {"command", "base64 -d >>"}, {"code", 429}, {"retryAfter", 29}});
  CHECK_THROWS_AS(f.run([&] { return sb->write_file("late.bin", std::string("abc")); }),
                  maf::sandbox::acas::SandboxShellTransferFailed);
  auto execs = f.requests("exec", since);
  REQUIRE(execs.size() == 3);  // begin, the throttled chunk, the abort
  const std::string abort = execs[2]["body"]["command"];
  CHECK(abort.rfind("export LC_ALL=C; rm -f -- ", 0) == 0);
  CHECK(abort.find(".part") != std::string::npos);
  CHECK(f.guest(id, "ls -A /maf-sandbox/work")["stdout"] == "");
  CHECK(f.requests("delete", since).empty());
  CHECK(f.run([&] { return sb->exec(std::string("echo kept")); }).stdout_bytes == "kept\n");
  // A 500 on a command that may have run: the guest's state is unknown.
  since = f.last_seq();
  f.fault({{"route", "exec"}, {"command", "base64 -d >>"}, {"code", 500}});
  CHECK_THROWS_AS(f.run([&] { return sb->write_file("lost.bin", std::string("abc")); }),
                  maf::sandbox::acas::SandboxShellTransferUnfinished);
  CHECK(f.requests("delete", since).size() == 1);
  CHECK(f.live() == 0);
}

TEST_CASE("A-21: a control exec answer over its byte budget is SandboxExecOutputLimitExceeded and the exec invalidates the sandbox") {
  Fixture f;
  auto backend = f.backend();
  auto sb = f.run([&] { return backend->acquire(f.key(), files_spec()); });
  auto since = f.last_seq();
  // The capture launch's budget is 64 KiB; the service answers 100,000 bytes of stdout.
  f.fault({{"route", "exec"}, {"command", "^for c in mkdir mkfifo"}, {"code", 200},
           {"body", {{"exitCode", 0}, {"stdout", std::string(100000, 'x')}, {"stderr", ""}}}});
  CHECK_THROWS_AS(f.run([&] { return sb->exec(std::string("echo hi")); }),
                  maf::sandbox::acas::SandboxExecOutputLimitExceeded);
  CHECK(f.requests("delete", since).size() == 1);
  CHECK(f.live() == 0);
}

// An acquire through a credential source that refuses: at most the token request is sent,
// never a data-plane one. Returns the AcasCredentialError's message.
std::string credential_refusal(Fixture& f, const AcasConfig& config) {
  const auto since = f.last_seq();
  auto backend = f.backend(config);
  auto message = refusal<maf::sandbox::acas::AcasCredentialError>(
      [&] { f.run([&] { return backend->acquire(f.key(), exec_spec()); }); });
  CHECK(f.requests("identity", since).size() <= 1);
  CHECK(f.requests("images.public", since).empty());
  return message;
}

TEST_CASE("§1.1 #4/#5: the managed-identity token source (IMDS, then $IDENTITY_ENDPOINT) authorises the data plane; a refused one is an AcasCredentialError with no request") {
  Fixture f;
  f.emulator->control("PUT", "/config", {{"tokens", {{"mi", "managed-identity-token"}}}, {"identityAlias", "mi"}});
  auto config = f.config();
  config.token.clear();
  config.managed_identity = true;
  config.managed_identity_client_id = "client-1";
  config.imds_endpoint = f.emulator->base_url() + "/metadata/identity/oauth2/token";
  auto query_of = [](const json& request) {
    std::map<std::string, std::string> q;
    for (const auto& kv : request["query"]) q[kv[0]] = kv[1];
    return q;
  };
  ::unsetenv("IDENTITY_ENDPOINT");
  ::unsetenv("IDENTITY_HEADER");
  {
    auto backend = f.backend(config);
    CHECK(f.run([&] { return backend->dispose_scope(f.scope, f.thread); }).disposed == 0);
    f.run([&] { return backend->dispose_scope(f.scope, f.thread); });  // the token is cached
    auto ids = f.requests("identity");
    REQUIRE(ids.size() == 1);
    CHECK(ids[0]["flavour"] == "imds");
    auto q = query_of(ids[0]);
    CHECK(q["api-version"] == "2018-02-01");
    CHECK(q["resource"] == "https://dynamicsessions.io");
    CHECK(q["client_id"] == "client-1");
    auto lists = f.requests("list");
    REQUIRE(lists.size() == 2);
    CHECK(lists[0]["alias"] == "mi");
  }
  ::setenv("IDENTITY_ENDPOINT", (f.emulator->base_url() + "/msi/token").c_str(), 1);
  ::setenv("IDENTITY_HEADER", "emulator-identity-header", 1);
  {
    auto since = f.last_seq();
    auto backend = f.backend(config);
    f.run([&] { return backend->dispose_scope(f.scope, f.thread); });
    auto ids = f.requests("identity", since);
    REQUIRE(ids.size() == 1);
    CHECK(ids[0]["flavour"] == "app-service");
    CHECK(query_of(ids[0])["api-version"] == "2019-08-01");
    CHECK(f.requests("list", since).back()["alias"] == "mi");
  }
  ::setenv("IDENTITY_HEADER", "wrong", 1);
  const auto message = credential_refusal(f, config);
  CHECK_THAT(message, Catch::Contains("answered HTTP 401"));
  CHECK_THAT(message, !Catch::Contains("wrong"));  // the header secret is never quoted
  ::unsetenv("IDENTITY_ENDPOINT");
  ::unsetenv("IDENTITY_HEADER");
}

TEST_CASE("§1.1 #2: the service-principal source posts the client-credentials grant; a wrong secret or a missing variable is an AcasCredentialError with no request") {
  Fixture f;
  f.emulator->control("PUT", "/config", {{"tokens", {{"sp", "service-principal-token"}}}, {"identityAlias", "sp"}});
  auto config = f.config();
  config.token.clear();
  config.service_principal = true;
  ::setenv("AZURE_TENANT_ID", "tenant-1", 1);
  ::setenv("AZURE_CLIENT_ID", "emulator-client", 1);
  ::setenv("AZURE_CLIENT_SECRET", "emulator-secret", 1);
  ::setenv("AZURE_AUTHORITY_HOST", f.emulator->base_url().c_str(), 1);
  {
    auto backend = f.backend(config);
    f.run([&] { return backend->dispose_scope(f.scope, f.thread); });
    f.run([&] { return backend->dispose_scope(f.scope, f.thread); });  // the token is cached
    auto ids = f.requests("identity");
    REQUIRE(ids.size() == 1);
    CHECK(ids[0]["flavour"] == "service-principal");
    CHECK(ids[0]["tenant"] == "tenant-1");
    CHECK(ids[0]["clientId"] == "emulator-client");
    CHECK(ids[0]["scope"] == "https://dynamicsessions.io/.default");
    CHECK(f.requests("list").back()["alias"] == "sp");
  }
  ::setenv("AZURE_CLIENT_SECRET", "not-the-secret", 1);
  const auto wrong = credential_refusal(f, config);
  CHECK_THAT(wrong, Catch::Contains("answered HTTP 401"));
  CHECK_THAT(wrong, !Catch::Contains("not-the-secret"));
  ::unsetenv("AZURE_CLIENT_SECRET");
  const auto since = f.last_seq();
  CHECK_THAT(credential_refusal(f, config), Catch::Contains("$AZURE_CLIENT_SECRET is not set"));
  CHECK(f.last_seq() == since);  // not even a token request
  for (const char* v : {"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_AUTHORITY_HOST"}) ::unsetenv(v);
}
