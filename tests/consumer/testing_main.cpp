// Proves the installed test double is its own library: maf::sandbox-testing links, and a
// host's own tests can exercise an in-process sandbox through the core's NVI.
#include <maf/sandbox/async.hpp>
#include <maf/sandbox/sync.hpp>
#include <maf/sandbox/testing/in_process.hpp>

#include <iostream>

int main() {
  namespace mx = maf::sandbox;
  auto sandbox = std::make_shared<mx::testing::InProcessSandbox>(
      mx::testing::InProcessSandboxOptions{.seed_files = {{"hello.txt", std::string("hi")}}});
  mx::BlockingRunner run;
  const auto entry = run([&]() { return sandbox->stat_file("hello.txt"); });
  if (!entry || entry->size_bytes != 2) {
    std::cerr << "the in-process double did not serve its seeded file\n";
    return 1;
  }
  std::cout << "testing consumer ok\n";
  return 0;
}
