// sandboxed_tool on the process backend (real bubblewrap): issue 26's bad input and faults.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "maf/sandbox/process/process_backend.hpp"
#include "tool_scenarios.hpp"

namespace fs = std::filesystem;
using namespace maf::sandbox;

namespace {

struct ProcessEngine {
  fs::path root = fs::temp_directory_path() / ("maf-tools-process-" + std::to_string(::getpid()));
  std::optional<tools_test::Engine> engine;
  ProcessEngine() {
    process::ProcessBackendConfig c;
    c.root = root;
    auto backend = process::make_process_backend(c);
    const fs::path r = root;
    engine.emplace(tools_test::Engine{
        backend,
        SandboxSpec({.kind = "shell", .requires_capabilities = {Capability::Exec, Capability::FilesIn}}),
        "tools-process",
        Isolation::OsProcess,
        [r] {
          int n = 0;
          std::error_code ec;
          for (const auto& e : fs::directory_iterator(r, ec))
            if (e.path().filename().string().rfind("maf-sandbox-process-", 0) == 0) ++n;
          return n;
        },
        [](Sandbox& sb, const std::string& relative) {
          BlockingRunner run;
          return run([&] { return sb.exec(std::vector<std::string>{"test", "-e", relative}, "."); }).exit_code == 0;
        },
        // The guest is an unprivileged user. A directory it made unwritable inside the call's
        // own the reclaim recovers (chmod -R as the guest, docs/tools.md), so the refusal locks the
        // call's parent instead: the work directory no longer lets its entry be unlinked.
        "touch f && chmod 555 .."});
  }
  ~ProcessEngine() {
    BlockingRunner run;
    try {
      run([&] { return engine->backend->reap(std::chrono::seconds(0), std::nullopt); });
    } catch (...) {
    }
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

}  // namespace

TEST_CASE("tools process: schema-invalid arguments are an is_error result naming the field; nothing is created") {
  ProcessEngine p;
  tools_test::schema_invalid_runs_nothing(*p.engine);
}

TEST_CASE("tools process, cleanup ladder: DISPOSE after the call leaves no sandbox on the host") {
  ProcessEngine p;
  tools_test::dispose_leaves_nothing(*p.engine);
}

TEST_CASE("tools process C-120: RECLAIM removes the call directory by the guest's own rm; a sibling's stays; the "
          "sandbox serves the next call") {
  ProcessEngine p;
  tools_test::reclaim_removes_the_call_directory(*p.engine);
}

TEST_CASE("tools process C-120: a body that throws (rethrown unchanged) and a cancelled call still remove their "
          "directories") {
  ProcessEngine p;
  tools_test::body_throws_and_cancellation(*p.engine);
}

TEST_CASE("tools process: a backend that fails mid-call (exec deadline) raises TimeoutError and DISPOSE still runs") {
  ProcessEngine p;
  tools_test::backend_fails_mid_call(*p.engine);
}

TEST_CASE("tools process C-120, cleanup ladder: a reclaim the guest refuses is reported as ReclaimFailure, the key is marked "
          "and the owed disposal lands") {
  ProcessEngine p;
  tools_test::failed_cleanup_marks_the_key(*p.engine);
}

TEST_CASE("tools process, cleanup ladder: an unclean key is refused (SandboxKeyUnclean, the model's fixed sentence) until "
          "dispose_unclean lands a disposal") {
  ProcessEngine p;
  tools_test::unclean_key_is_refused_until_disposed(*p.engine);
}
