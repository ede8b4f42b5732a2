// C-105 (errors.hpp): the exception tree must reproduce the Python lineage, because core code and
// the conformance probes catch by base.
#include <catch2/catch.hpp>

#include <type_traits>

#include "maf/sandbox/errors.hpp"

using namespace maf::sandbox;

template <class Derived, class Base>
constexpr bool is_a = std::is_base_of_v<Base, Derived>;

TEST_CASE("C-105: every library error derives from maf::Error") {
  STATIC_REQUIRE(is_a<ValueError, maf::Error>);
  STATIC_REQUIRE(is_a<SandboxTransferCapExceeded, maf::Error>);
  STATIC_REQUIRE(is_a<SandboxQueuedTimeout, maf::Error>);
  STATIC_REQUIRE(is_a<maf::Error, std::exception>);
}

TEST_CASE("C-105: lineage of the value, lookup and runtime families") {
  STATIC_REQUIRE(is_a<HostToolNotDeclared, ValueError>);
  STATIC_REQUIRE(is_a<NoSandboxBackend, LookupError>);
  STATIC_REQUIRE(is_a<NotImplementedError, RuntimeError>);
  STATIC_REQUIRE(is_a<SandboxCapabilityNotSupported, RuntimeError>);
  STATIC_REQUIRE(is_a<SandboxOsFamilyNotSupported, RuntimeError>);
  STATIC_REQUIRE(is_a<SandboxOutputMissing, SandboxOutputError>);
  STATIC_REQUIRE(is_a<SandboxArtifactNameCollision, SandboxOutputError>);
  STATIC_REQUIRE(is_a<SandboxOutputError, RuntimeError>);
}

TEST_CASE("C-105: lineage of the OS family: policy refusals are PermissionErrors, timeouts are OSErrors") {
  STATIC_REQUIRE(is_a<FileNotFoundError, OSError>);
  STATIC_REQUIRE(is_a<NotADirectoryError, OSError>);
  STATIC_REQUIRE(is_a<SandboxBackendNotPermitted, PermissionError>);
  STATIC_REQUIRE(is_a<SandboxEgressNotEnforced, PermissionError>);
  STATIC_REQUIRE(is_a<SandboxBoundaryUnavailable, OSError>);
  STATIC_REQUIRE(is_a<SandboxStateRootUnusable, PermissionError>);
  STATIC_REQUIRE(is_a<SandboxTransferLimitsNotPermitted, PermissionError>);
  STATIC_REQUIRE(is_a<PermissionError, OSError>);
  STATIC_REQUIRE(is_a<TimeoutError, OSError>);
  STATIC_REQUIRE(is_a<SandboxQueuedTimeout, TimeoutError>);
  // A confinement refusal is not an I/O refusal, and vice versa.
  STATIC_REQUIRE_FALSE(is_a<ValueError, OSError>);
  STATIC_REQUIRE_FALSE(is_a<OSError, ValueError>);
}

TEST_CASE("C-106: cancellation is outside maf::Error") {
  STATIC_REQUIRE_FALSE(is_a<Cancelled, maf::Error>);
  STATIC_REQUIRE(is_a<Cancelled, std::exception>);
  bool caught_by_library_handler = false;
  try {
    try {
      throw Cancelled();
    } catch (const maf::Error&) {
      caught_by_library_handler = true;
    }
  } catch (const Cancelled&) {
  }
  CHECK_FALSE(caught_by_library_handler);
}

TEST_CASE("errors carry their message") {
  try {
    throw SandboxOutputMissing("kind 'k' output 'a.txt' missing");
  } catch (const SandboxOutputError& e) {
    CHECK(std::string(e.what()) == "kind 'k' output 'a.txt' missing");
  }
}

TEST_CASE("issue 27: every policy refusal is caught at SandboxPolicyRefusal, and keeps its Python lineage") {
  const auto refused = [](auto thrower) {
    try {
      thrower();
    } catch (const SandboxPolicyRefusal& r) {
      return std::string(r.message());
    } catch (const std::exception&) {
      return std::string("not a refusal");
    }
    return std::string("nothing thrown");
  };
  CHECK(refused([] { throw SandboxBackendNotPermitted("floor"); }) == "floor");
  CHECK(refused([] { throw SandboxCapabilityDenied("cap"); }) == "cap");
  CHECK(refused([] { throw SandboxIdentityDenied("id"); }) == "id");
  CHECK(refused([] { throw SandboxTransferLimitsNotPermitted("limits"); }) == "limits");
  CHECK(refused([] { throw SandboxEgressNotEnforced("egress"); }) == "egress");
  CHECK(refused([] { throw SandboxCapabilityNotSupported("probe"); }) == "probe");
  CHECK(refused([] { throw SandboxOsFamilyNotSupported("os"); }) == "os");
  // What is not a policy decision is not one.
  CHECK(refused([] { throw SandboxTransferCapExceeded("cap hit"); }) == "not a refusal");
  CHECK(refused([] { throw PermissionError("EACCES"); }) == "not a refusal");
  CHECK(refused([] { throw ValueError("bad"); }) == "not a refusal");
  // The lineage is unchanged: a floor refusal is still a PermissionError, an OSError, an Error.
  CHECK_THROWS_AS(throw SandboxBackendNotPermitted("floor"), PermissionError);
  CHECK_THROWS_AS(throw SandboxBackendNotPermitted("floor"), Error);
  CHECK_THROWS_AS(throw SandboxCapabilityNotSupported("probe"), RuntimeError);
}
