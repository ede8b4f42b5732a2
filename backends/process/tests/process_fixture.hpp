#pragma once
// The process backend's test fixture: a backend over a private root, a blocking runner, one
// key, and host-side views of what the sandbox left (its directories, its guest processes).
// Shared by the process backend's test files.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "maf/sandbox/async.hpp"
#include "maf/sandbox/process/process_backend.hpp"
#include "maf/sandbox/sync.hpp"

namespace maf::sandbox::process::test {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Fixture {
  fs::path root = fs::temp_directory_path() / ("maf-process-test-" + std::to_string(::getpid()));
  ProcessBackendConfig config;
  std::shared_ptr<SandboxBackend> backend;
  BlockingRunner run;
  SandboxKey key{"tenant", "conv-1", "agent", ""};

  explicit Fixture(std::function<void(ProcessBackendConfig&)> configure = {}) {
    ProcessBackendConfig c;
    c.root = root;
    c.run_code_interpreter = {"sh", "-s"};
    c.max_stdout_bytes = 1 << 20;
    if (configure) configure(c);
    config = c;
    backend = make_process_backend(c);
  }
  ~Fixture() {
    // Dispose of what the test left (their cgroups are kernel objects, not files under root).
    try {
      run([&] { return backend->reap(std::chrono::seconds(0), std::nullopt); });
    } catch (const std::exception&) {
    }
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  SandboxSpec spec(std::string kind = "script") {
    return SandboxSpec({.kind = std::move(kind),
                        .requires_capabilities = {Capability::Exec, Capability::FilesIn, Capability::FilesOut,
                                                  Capability::FilesList, Capability::FilesDelete}});
  }
  std::shared_ptr<Sandbox> acquire(SandboxKey k, SandboxSpec s) {
    return run([&] { return backend->acquire(k, s); });
  }
  std::shared_ptr<Sandbox> acquire() { return acquire(key, spec()); }
  ExecResult exec(Sandbox& sb, Command c, std::string wd = ".", std::chrono::milliseconds t = 20s) {
    return run([&] { return sb.exec(c, wd, t); });
  }
  /// The sandbox directories under the root: `<root>/<conversation>/<name>` (issue 55's
  /// layout; a directory left directly under the root by an older backend counts too).
  std::vector<fs::path> sandbox_paths() const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("maf-sandbox-process-conversation-", 0) == 0) {
        for (const auto& inner : fs::directory_iterator(e.path(), ec))
          if (inner.path().filename().string().rfind("maf-sandbox-process-", 0) == 0) out.push_back(inner.path());
      } else if (n.rfind("maf-sandbox-process-", 0) == 0) {
        out.push_back(e.path());
      }
    }
    return out;
  }
  /// Host processes whose root directory is the (only) sandbox's private root: the guests.
  int guest_processes() const {
    for (const auto& dir : sandbox_paths()) {
      struct stat want {};
      if (::stat((dir / "root").c_str(), &want) != 0) return 0;
      int n = 0;
      for (const auto& p : fs::directory_iterator("/proc")) {
        struct stat st {};
        if (::stat((p.path() / "root").c_str(), &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino) ++n;
      }
      return n;
    }
    return 0;
  }
  std::size_t sandbox_dirs() const { return sandbox_paths().size(); }
};


}  // namespace maf::sandbox::process::test
