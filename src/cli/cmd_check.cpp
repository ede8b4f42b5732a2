// `maf-sandbox check`: would the router let this backend serve this spec, and why (not)?
#include <fmt/core.h>

#include "commands.hpp"
#include "maf/sandbox/router.hpp"
#include "render.hpp"

namespace maf::sandbox::cli {

int cmd_check(Session& session) {
  const Args& args = session.args;
  const SandboxSpec spec = load_spec(args.required("spec"));
  const Isolation floor = min_isolation(args);
  const RouterOptions policy = router_options(args, floor);  // bad input refused before any backend
  const nlohmann::json config = backend_config(args);
  auto backend = create_backend(session, config);

  session.phase = Phase::Policy;
  // The host's floor is whatever the operator typed; the tag keeps that decision visible.
  SandboxRouter router({backend}, policy);
  router.ensure_can_serve(spec);
  attach_credentials(args, router, {spec});

  const BackendDeclarations& d = backend->declarations();
  const Isolation effective = stricter(floor, spec.min_isolation());
  nlohmann::json j = {{"ok", true},
                      {"backend", backend->name()},
                      {"isolation", backend->isolation()},
                      {"kind", spec.kind()},
                      {"min_isolation", std::string(to_string(floor))},
                      {"effective_floor", std::string(to_string(effective))},
                      {"requires", enum_set_json(spec.requires_capabilities())},
                      {"egress", std::string(to_string(spec.egress()))},
                      {"isolation_scope", std::string(to_string(spec.isolation_scope()))},
                      {"files_in", limits_json(spec.files_in())},
                      {"files_out", limits_json(spec.files_out())},
                      {"declarations", declarations_json(d)}};
  j["requires_os_family"] = spec.requires_os_family()
                                ? nlohmann::json(std::string(to_string(*spec.requires_os_family())))
                                : nlohmann::json();

  std::string human = fmt::format("ok: backend '{}' (isolation {}) can serve kind '{}'\n", backend->name(),
                                  backend->isolation(), spec.kind());
  human += fmt::format("  floor:        {} (host), {} (effective)\n", to_string(floor), to_string(effective));
  human += fmt::format("  requires:     {} (declared: {})\n", spec.requires_capabilities().to_string("nothing"),
                       d.capabilities.to_string("nothing"));
  human += fmt::format("  egress:       {} (enforced: {})\n", to_string(spec.egress()), d.egress_modes.to_string("nothing"));
  human += fmt::format("  os family:    {}\n", spec.requires_os_family()
                                                 ? std::string(to_string(*spec.requires_os_family())) +
                                                       " (served: " + d.os_families.to_string("no answer") + ")"
                                                 : std::string("not asked"));
  human += fmt::format("  scope:        {} (served: {})\n", to_string(spec.isolation_scope()),
                       d.effective_isolation_scopes().to_string());
  human += fmt::format("  files_in:     {} within {}\n", to_string(spec.files_in()), to_string(d.limits.files_in));
  human += fmt::format("  files_out:    {} within {}\n", to_string(spec.files_out()), to_string(d.limits.files_out));
  // Issue 49: the fidelity asked beside the one declared (SNAP-2).
  j["min_snapshot_fidelity"] = spec.min_snapshot_fidelity()
                                   ? nlohmann::json(std::string(to_string(*spec.min_snapshot_fidelity())))
                                   : nlohmann::json();
  human += fmt::format("  snapshots:    {} (declared: {})\n",
                       spec.min_snapshot_fidelity() ? std::string(to_string(*spec.min_snapshot_fidelity()))
                                                    : std::string("not asked"),
                       d.snapshot_fidelity ? std::string(to_string(*d.snapshot_fidelity)) : std::string("none"));
  session.reporter.result(j, human);
  return kExitOk;
}

}  // namespace maf::sandbox::cli
