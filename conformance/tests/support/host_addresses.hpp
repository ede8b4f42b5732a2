#pragma once
// Whether this host has an address EC-2 would attack, so tests can state what EC-2 must do.
namespace maf::sandbox::conformance::test {
/// An up, non-loopback interface with an IPv4 or a non-link-local IPv6 address (EC-2's rule).
bool host_has_non_loopback_address();
}  // namespace maf::sandbox::conformance::test
