// The CLI's JSON error `type` is a contract (docs/cli.md): the class name of every error type
// the command can print, thrown plainly or nested (std::throw_with_nested throws a template
// specialization deriving from the error), never a fragment of a demangled template name.
#include <catch2/catch.hpp>

#include <exception>

#include "args.hpp"
#include "maf/sandbox/errors.hpp"
#include "maf/sandbox/registry.hpp"
#include "report.hpp"

using namespace maf::sandbox;
using namespace maf::sandbox::cli;

namespace {

/// The type `classify` reports for the exception `thrower` throws.
template <class Thrower>
std::string printed(Thrower thrower) {
  try {
    thrower();
  } catch (...) {
    return classify(std::current_exception(), Phase::Work).type;
  }
  return "nothing thrown";
}

#define MAF_EXPECT_NAME(Type, ...)                                                   \
  do {                                                                               \
    CHECK(printed([] { throw Type(__VA_ARGS__); }) == #Type);                        \
    CHECK(printed([] { std::throw_with_nested(Type(__VA_ARGS__)); }) == #Type);      \
  } while (0)

}  // namespace

TEST_CASE("cli: the JSON error type is the class name of every error type, plain or thrown nested") {
  MAF_EXPECT_NAME(Error, "m");
  MAF_EXPECT_NAME(ValueError, "m");
  MAF_EXPECT_NAME(HostToolNotDeclared, "m");
  MAF_EXPECT_NAME(HostToolIdentityNotAllowed, "m");
  MAF_EXPECT_NAME(LookupError, "m");
  MAF_EXPECT_NAME(NoSandboxBackend, "m");
  MAF_EXPECT_NAME(RuntimeError, "m");
  MAF_EXPECT_NAME(NotImplementedError, "m");
  MAF_EXPECT_NAME(SandboxCapabilityNotSupported, "m");
  MAF_EXPECT_NAME(SandboxOsFamilyNotSupported, "m");
  MAF_EXPECT_NAME(SandboxOutputError, "m");
  MAF_EXPECT_NAME(SandboxOutputMissing, "m");
  MAF_EXPECT_NAME(SandboxOutputNotConfined, "m");
  MAF_EXPECT_NAME(SandboxOutputNotRegular, "m");
  MAF_EXPECT_NAME(SandboxOutputSizeUnknown, "m");
  MAF_EXPECT_NAME(SandboxOutputUnreachable, "m");
  MAF_EXPECT_NAME(SandboxTransferCapExceeded, "m");
  MAF_EXPECT_NAME(SandboxLandingNotConfined, "m");
  MAF_EXPECT_NAME(SandboxOutputSinkRequired, "m");
  MAF_EXPECT_NAME(SandboxArtifactNameInvalid, "m");
  MAF_EXPECT_NAME(SandboxArtifactNameCollision, "m");
  MAF_EXPECT_NAME(OSError, "m");
  MAF_EXPECT_NAME(FileNotFoundError, "m");
  MAF_EXPECT_NAME(IsADirectoryError, "m");
  MAF_EXPECT_NAME(NotADirectoryError, "m");
  MAF_EXPECT_NAME(PermissionError, "m");
  MAF_EXPECT_NAME(SandboxBackendNotPermitted, "m");
  MAF_EXPECT_NAME(SandboxCapabilityDenied, "m");
  MAF_EXPECT_NAME(SandboxIdentityDenied, "m");
  MAF_EXPECT_NAME(SandboxTransferLimitsNotPermitted, "m");
  MAF_EXPECT_NAME(SandboxEgressNotEnforced, "m");
  MAF_EXPECT_NAME(TimeoutError, "m");
  MAF_EXPECT_NAME(SandboxQueuedTimeout, "m");
  MAF_EXPECT_NAME(SandboxProgramTimeout, "m");
  MAF_EXPECT_NAME(PluginOpenError, "f.so", "m");
  MAF_EXPECT_NAME(PluginEntryMissing, "f.so", "m");
  MAF_EXPECT_NAME(PluginAbiMismatch, "f.so", "m");
  MAF_EXPECT_NAME(PluginFingerprintMismatch, "f.so", "m");
  MAF_EXPECT_NAME(PluginDuplicateName, "f.so", "m");
  MAF_EXPECT_NAME(PluginInvalidDescriptor, "f.so", "m");
  MAF_EXPECT_NAME(SandboxBoundaryUnavailable, "m");
  MAF_EXPECT_NAME(SandboxStateRootUnusable, "m");
  MAF_EXPECT_NAME(UsageError, "m");
}

TEST_CASE("cli: class_name_of drops namespaces, template arguments and the nested-exception wrapper") {
  CHECK(class_name_of("maf::sandbox::SandboxOutputNotConfined") == "SandboxOutputNotConfined");
  CHECK(class_name_of("std::_Nested_exception<maf::sandbox::SandboxOutputNotConfined>") == "SandboxOutputNotConfined");
  CHECK(class_name_of("std::_Nested_exception<std::_Nested_exception<maf::sandbox::ValueError> >") == "ValueError");
  CHECK(class_name_of("ns::Wrapper<ns::Inner, std::vector<int> >") == "Wrapper");
  CHECK(class_name_of("Plain") == "Plain");
}
