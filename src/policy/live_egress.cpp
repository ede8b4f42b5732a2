// A live sandbox's egress, changed only after the router checks it (live_egress.hpp, EGU-7…EGU-10).
#include "maf/sandbox/live_egress.hpp"

#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/router.hpp"
#include "maf/sandbox/sandbox.hpp"

namespace maf::sandbox {

namespace {

std::vector<EgressRule> rules_of(const std::vector<EgressEntry>& allow) {
  std::vector<EgressRule> rules;
  for (const auto& entry : allow)
    if (const auto* rule = std::get_if<EgressRule>(&entry)) rules.push_back(*rule);
  return rules;
}

}  // namespace

std::optional<std::string> live_egress_refusal(const Sandbox& sandbox) {
  const auto* live = dynamic_cast<const LiveEgress*>(&sandbox);
  if (!live)
    return "backend '" + sandbox.backend_name() + "' does not change a live sandbox's egress (it declares no live "
           "egress update)";
  return live->live_egress_refusal();
}

boost::asio::awaitable<EgressUpdateResult> update_egress(SandboxRouter& router, std::shared_ptr<Sandbox> sandbox,
                                                         SandboxSpec current, std::vector<EgressEntry> allow) {
  if (!sandbox) throw ValueError("update_egress: no sandbox given");
  // EGU-8: a sandbox that cannot is refused before anything is checked or changed.
  if (auto why = live_egress_refusal(*sandbox))
    throw SandboxCapabilityNotSupported("cannot update the egress of sandbox '" + sandbox->instance_id() +
                                        "' (kind '" + sandbox->kind() + "'): " + *why);
  if (current.egress() != Egress::Allowlist)
    throw ValueError("update_egress: sandbox '" + sandbox->instance_id() + "' was acquired with egress '" +
                     std::string(to_string(current.egress())) + "', not allowlist: only an allowlist changes live");
  // EGU-9: method/path rules stay as acquired (the proxy's terminated hosts and the guest's
  // trust are fixed for its life); only hosts allowed whole change.
  if (rules_of(current.egress_allow()) != rules_of(allow))
    throw ValueError("update_egress: sandbox '" + sandbox->instance_id() +
                     "': method/path rules cannot change on a live sandbox (keep its rules as acquired; "
                     "dispose and acquire to change them)");
  if (!current.attached_identity().empty())
    throw SandboxCapabilityNotSupported("cannot update the egress of sandbox '" + sandbox->instance_id() +
                                        "': it brokers credential '" + current.attached_identity().front().name() +
                                        "', whose proxy's hosts are fixed for its life");
  // EGU-10: the new spec is a spec like any other — validated by its constructor (ValueError
  // naming the entry), then held to the router's policy as a new acquire is.
  SandboxSpec::Fields fields = current.fields();
  fields.egress_allow = std::move(allow);
  SandboxSpec next(std::move(fields));
  router.ensure_can_serve(next);
  auto* live = dynamic_cast<LiveEgress*>(sandbox.get());
  EgressUpdateReport report = co_await live->apply_egress(next);
  co_return EgressUpdateResult{std::move(next), std::move(report)};
}

}  // namespace maf::sandbox
