// Proves the installed package is usable: headers resolve, the library links, policy runs.
#include <maf/sandbox.hpp>

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
  return router.enabled() ? 1 : 0;
}
