#pragma once
// What the method/path-rule engine tests share (issue 45): the guest image with real clients,
// the spec that reaches l7_upstream_tree.sh's upstream through the proxy, and the EGRESS_L7
// targets on it. One definition, so Docker's and wslc's tests face the same rules and probes.
#include <chrono>
#include <string>
#include <vector>

#include "maf/sandbox/conformance/suites.hpp"
#include "maf/sandbox/spec.hpp"

namespace l7_test {

/// scripts/docker-test-images: Debian bookworm with curl, Python (requests), Node.js and git.
inline const std::string kClientsImage = "maf-sandbox-test/clients:3";

/// allowed.test: GET under /repo/ only (terminated); other.test: whole (an opaque tunnel);
/// untrusted.test: GET, behind a certificate no trust store holds (EL-9's 502).
inline maf::sandbox::SandboxSpec rule_spec() {
  using maf::sandbox::EgressRule;
  using Strings = std::vector<std::string>;
  maf::sandbox::SandboxSpec::Fields f;
  f.kind = "l7";
  f.image = kClientsImage;
  f.requires_capabilities = maf::sandbox::CapabilitySet{maf::sandbox::Capability::Exec, maf::sandbox::Capability::FilesIn};
  f.egress = maf::sandbox::Egress::Allowlist;
  f.egress_allow.emplace_back(EgressRule("allowed.test", Strings{"GET"}, Strings{"/repo/"}));
  f.egress_allow.emplace_back(std::string("other.test"));
  f.egress_allow.emplace_back(EgressRule("untrusted.test", Strings{"GET"}));
  return maf::sandbox::SandboxSpec(std::move(f));
}

/// EGRESS_L7's targets on that upstream and spec.
inline maf::sandbox::conformance::EgressL7Targets l7_targets() {
  maf::sandbox::conformance::EgressL7Targets t;
  t.allowed_url = "https://allowed.test/repo/x";
  t.refused_path_url = "https://allowed.test/admin";
  t.refused_method = "DELETE";
  t.traversal_base = "https://allowed.test/repo/";
  t.mixed_case_url = "https://allowed.test/REPO/x";
  t.other_host = "other.test";
  t.untrusted_url = "https://untrusted.test/repo/x";
  t.exec_timeout = std::chrono::seconds(30);
  return t;
}

}  // namespace l7_test
