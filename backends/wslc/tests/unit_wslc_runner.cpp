// W-40: the process runner — how `wslc_path` names the program, whatever the call's cwd.
#include <utility>  // Boost 1.74's awaitable.hpp needs it first
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "maf/sandbox/sync.hpp"
#include "maf/sandbox/wslc/errors.hpp"
#include "maf/sandbox/wslc/runner.hpp"

namespace fs = std::filesystem;
using namespace maf::sandbox::wslc;

namespace {

/// Changes the working directory for one scope.
class WorkingDirectory {
public:
  explicit WorkingDirectory(const fs::path& dir) : saved_(fs::current_path()) { fs::current_path(dir); }
  ~WorkingDirectory() { fs::current_path(saved_); }

private:
  fs::path saved_;
};

}  // namespace

TEST_CASE("W-40/W-8: a relative wslc_path is pinned when the runner is made, so any cwd runs it") {
  const fs::path root = fs::temp_directory_path() / ("maf-wslc-runner-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "bin");
  fs::create_directories(root / "elsewhere");
  {
    std::ofstream script(root / "bin" / "fake-wslc");
    script << "#!/bin/sh\necho \"ran $*\"\n";
  }
  fs::permissions(root / "bin" / "fake-wslc", fs::perms::owner_all);

  std::shared_ptr<WslcRunner> runner;
  {
    WorkingDirectory here(root);
    runner = make_process_runner("./bin/fake-wslc");
  }
  maf::sandbox::BlockingRunner run;
  WslcCall call;
  call.args = {"version"};
  call.cwd = (root / "elsewhere").string();  // the file plane runs verbs from a private dir
  const auto outcome = run([&] { return runner->run(call); });
  CHECK(outcome.exit_code == 0);
  CHECK(outcome.stdout_bytes == "ran version\n");

  // A path that names nothing is backend-unavailable naming the (pinned) path.
  auto missing = make_process_runner("./no/such/wslc");
  call.cwd.clear();
  CHECK_THROWS_AS(run([&] { return missing->run(call); }), WslcBackendUnavailable);
  CHECK_THROWS_WITH(run([&] { return missing->run(call); }),
                    Catch::Contains((fs::current_path() / "no/such/wslc").string()));
  fs::remove_all(root);
}
