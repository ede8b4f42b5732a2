// Proves the installed package is usable: headers resolve, the library links, policy runs,
// and the installed plugins are found by name.
#include <maf/sandbox.hpp>        // the light entry
#include <maf/sandbox/async.hpp>  // the coroutine API over it

#include <iostream>

int main() {
  using namespace maf::sandbox;
  SandboxSpec spec({.kind = "consumer", .requires_capabilities = {Capability::Exec}});
  SandboxRouter router({});
  router.ensure_can_serve(spec);  // disabled router: silent
  try {
    (void)parse_isolation("process");
    std::cerr << "legacy 'process' parsed\n";
    return 1;
  } catch (const ValueError& e) {
    std::cout << "consumer ok: " << e.what() << "\n";
  }
  // The installed process plugin is found by name; an unknown name is refused naming it.
  try {
    SandboxHost host("no-such-backend");
    std::cerr << "an unknown backend was created\n";
    return 1;
  } catch (const NoSandboxBackend& e) {
    std::cout << "unknown backend refused: " << e.what() << "\n";
  }
  SandboxHost host("process", RouterOptions::lowered_floor(Isolation::OsProcess, LowerIsolationFloor{}));
  host.ensure_can_serve(spec);
  return router.enabled() ? 1 : 0;
}
